/**
 * Cells a pixel or two across, painted by the area each covers (the software tier's raster of
 * a zoomed-out tissue).
 *
 * Why not one pixel (or a whole-pixel disc) a cell: cells lie in near-regular rows (tissue is
 * packed; the demo's are a jittered hexagonal grid). Stamped at whole pixels, rows of cells
 * 1.04 px apart fall two into one pixel row every 27 rows and leave the next one empty: the
 * horizontal scan-line stripes the fitted 100,000-cell demo showed (a beat between the cells'
 * row spacing and the pixel grid, not in the data). Here each cell is a square of its size at
 * its exact position; a pixel takes the colour of the cell covering most of it and the opacity
 * of all the cover it got, so a pixel row between two rows of cells is as covered as the tissue
 * there is, and true gaps between cells stay faint, not striped.
 */

import { affine, type View } from './raster';

/** Cells drawn as squares `footprint` device pixels across (at least 1), by the area they cover. */
export type Footprint = { footprint: number };

/**
 * Paint the cells of `spans` (slices of `order`, or all when `order` is null) into `out` (packed
 * RGBA, `view.width` × `view.height`). Returns how many cells landed in view.
 */
export function paintFootprints(
  out: Uint32Array,
  view: View,
  x: Float32Array,
  y: Float32Array,
  colorOf: (i: number) => number,
  footprint: number,
  spans: Uint32Array,
  order: Uint32Array | null
): number {
  const { width: w, height: hgt } = view;
  const [a, b, c, d, e, f] = affine(view);
  const half = Math.max(1, footprint) / 2;
  /** Per pixel: the cover (in 1/255ths, saturating) it got, and the most one cell gave it. */
  const cover = new Uint8ClampedArray(w * hgt);
  const best = new Uint8Array(w * hgt);
  let drawn = 0;
  for (let s = 0; s < spans.length; s += 2) {
    const end = spans[s + 1];
    for (let k = spans[s]; k < end; k++) {
      const i = order ? order[k] : k;
      const fx = a * x[i] + c * y[i] + e;
      const fy = b * x[i] + d * y[i] + f;
      const x0 = fx - half;
      const x1 = fx + half;
      const y0 = fy - half;
      const y1 = fy + half;
      if (!(x1 > 0 && x0 < w && y1 > 0 && y0 < hgt)) {
        continue; // out of view, or no position (NaN)
      }
      const col = colorOf(i);
      if (col >>> 24 === 0) {
        continue;
      }
      drawn++;
      const opaque = (col | 0xff000000) >>> 0;
      const qx1 = Math.min(w - 1, Math.floor(x1));
      const qy1 = Math.min(hgt - 1, Math.floor(y1));
      for (let qy = Math.max(0, Math.floor(y0)); qy <= qy1; qy++) {
        const oy = Math.min(y1, qy + 1) - Math.max(y0, qy);
        for (let qx = Math.max(0, Math.floor(x0)); qx <= qx1; qx++) {
          const ox = Math.min(x1, qx + 1) - Math.max(x0, qx);
          const q = Math.round(ox * oy * 255);
          if (q <= 0) {
            continue;
          }
          const p = qy * w + qx;
          cover[p] += q;
          if (q >= best[p]) {
            best[p] = q;
            out[p] = opaque;
          }
        }
      }
    }
  }
  for (let p = 0; p < out.length; p++) {
    if (best[p]) {
      out[p] = ((out[p] & 0x00ffffff) | (cover[p] << 24)) >>> 0;
    }
  }
  return drawn;
}
