/**
 * How a selection shows on a drawing (issue 40, item 1): every selected cell, at any count,
 * in its own colour. Marks painted over the cells hide their colour, and a few thousand of
 * them cover a region as one blob, so instead the rest of the drawing is veiled (the theme's
 * background, partly see-through) with a hole over each selected cell, and a one-pixel line of
 * the theme's text colour rings the holes. No DOM here: the pixels are computed from the cells'
 * screen positions, so the rule is tested alone and the view only puts them on a canvas.
 */

/** The drawing's pixels the selected cells cover, and how many selected cells lie in view. */
export type SelectionMask = { mask: Uint8Array; shown: number };

/** A hole's radius in CSS px at least (a cell a pixel across still shows) and at most (one cell never fills the view). */
export const MIN_HOLE = 1.5;
export const MAX_HOLE = 48;

/** The (dx, first, last) spans of a disc of radius `r` px centred on a pixel. */
function discSpans(r: number): [number, number][] {
  const reach = Math.floor(r);
  const spans: [number, number][] = [];
  for (let dy = -reach; dy <= reach; dy++) {
    const half = Math.floor(Math.sqrt(Math.max(0, r * r - dy * dy)));
    spans.push([dy, half]);
  }
  return spans;
}

/**
 * The pixels of a `width` × `height` drawing covered by a disc of `radius` CSS px around each
 * cell whose `codes` entry is a region (≥ 0), placed by `toScreen` (affine). `shown` counts the selected
 * cells whose centre falls on the drawing: each has its own hole, however many there are.
 */
export function selectionMask(
  width: number,
  height: number,
  toScreen: (x: number, y: number) => [number, number],
  x: ArrayLike<number>,
  y: ArrayLike<number>,
  codes: Int32Array,
  radius: number
): SelectionMask {
  const mask = new Uint8Array(Math.max(0, width * height));
  const r = Math.min(MAX_HOLE, Math.max(MIN_HOLE, radius));
  const spans = discSpans(r);
  const reach = Math.floor(r);
  let shown = 0;
  const n = Math.min(codes.length, x.length, y.length);
  // both drawings project affinely (a scale, a flip, a shift): three points give the map, so a
  // million cells cost no call and no array each
  const [ox, oy] = toScreen(0, 0);
  const [ax, ay] = toScreen(1, 0);
  const [bx, by] = toScreen(0, 1);
  const [xx, xy, yx, yy] = [ax - ox, ay - oy, bx - ox, by - oy];
  for (let i = 0; i < n; i++) {
    if (codes[i] < 0) {
      continue;
    }
    const sx = ox + x[i] * xx + y[i] * yx;
    const sy = oy + x[i] * xy + y[i] * yy;
    if (!Number.isFinite(sx) || !Number.isFinite(sy)) {
      continue;
    }
    const cx = Math.floor(sx);
    const cy = Math.floor(sy);
    if (cx + reach < 0 || cy + reach < 0 || cx - reach >= width || cy - reach >= height) {
      continue;
    }
    if (cx >= 0 && cy >= 0 && cx < width && cy < height) {
      shown += 1;
    }
    for (const [dy, half] of spans) {
      const py = cy + dy;
      if (py < 0 || py >= height) {
        continue;
      }
      mask.fill(1, py * width + Math.max(0, cx - half), py * width + Math.min(width - 1, cx + half) + 1);
    }
  }
  return { mask, shown };
}

/**
 * The veil's RGBA pixels (packed as `packColor` packs them) for `mask`: transparent over the
 * selected cells, `ring` on the pixels just outside them (4-neighbours), `veil` elsewhere.
 */
export function veilPixels(mask: Uint8Array, width: number, height: number, veil: number, ring: number, out: Uint32Array): void {
  for (let py = 0; py < height; py++) {
    const row = py * width;
    for (let px = 0; px < width; px++) {
      const k = row + px;
      if (mask[k]) {
        out[k] = 0;
        continue;
      }
      const near =
        (px > 0 && mask[k - 1]) || (px < width - 1 && mask[k + 1]) || (py > 0 && mask[k - width]) || (py < height - 1 && mask[k + width]);
      out[k] = near ? ring : veil;
    }
  }
}

/** The veil's opacity (of 255): the cells under it stay visible, dimmed, so the selection reads against them. */
export const VEIL_ALPHA = 150;
