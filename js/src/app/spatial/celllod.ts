/**
 * The cells' level of detail in the WebGL view: what a frame draws must not grow with the
 * cell count. Few cells in view: their geometry (discs, circles, polygons), the visible ones
 * and a margin only. Many: a raster of them made on the CPU (paintPoints) over the view and a
 * margin, shown as one texture, so a pan or zoom frame moves a texture; the raster is made
 * again when the view settles outside it or at another resolution.
 */

import type { Region } from './camera';
import { countOver, spansOver, type CellIndex } from './cellindex';
import { paintFootprints, type Footprint } from './footprint';
import { paintPoints, type CellSizing } from './raster';
import type { Bounds } from '../shared/types';

/**
 * Cells in view (with the margin) above which they are drawn as a raster. Under software
 * WebGL (SwiftShader) a frame costs per cell whether on screen or not (the vertex shader runs
 * on the CPU): 4,000 discs as one draw of quads take about 10 ms a frame, outlined polygons
 * about 30 ms for 2,800 (bench_outlines.py). Past a few thousand in view, cells are a few
 * pixels each, which a raster shows as well.
 */
export const GEOMETRY_BUDGET = 4_000;

/** The margin around the view (a fraction of its width and height on each side) that a raster or a subset covers. */
export const MARGIN = 0.25;

/** How far (a ratio) a raster's resolution may be off the screen's while the view moves. */
export const MOVING_RESOLUTION = 1.5;

/** The most pixels a raster may have (its scale is lowered to fit). */
export const MAX_RASTER_PIXELS = 12_000_000;

export type Lod = 'raster' | 'geometry';

/** The level of detail for the cells over `region`: geometry while they are within `budget`. */
export function lodFor(index: CellIndex, region: Region, budget = GEOMETRY_BUDGET): Lod {
  return countOver(index, region) > budget ? 'raster' : 'geometry';
}

/** `region` grown by `margin` of its size on each side. */
export function grow(region: Region, margin = MARGIN): Region {
  const mx = (region[2] - region[0]) * margin;
  const my = (region[3] - region[1]) * margin;
  return [region[0] - mx, region[1] - my, region[2] + mx, region[3] + my];
}

/** The overlap of two regions, or null. */
export function clip(a: Region, b: Region): Region | null {
  const r: Region = [Math.max(a[0], b[0]), Math.max(a[1], b[1]), Math.min(a[2], b[2]), Math.min(a[3], b[3])];
  return r[2] > r[0] && r[3] > r[1] ? r : null;
}

/** Whether `inner` lies inside `outer`. */
export function covers(outer: Region, inner: Region): boolean {
  return inner[0] >= outer[0] && inner[1] >= outer[1] && inner[2] <= outer[2] && inner[3] <= outer[3];
}

/** A raster's frame: the data region it covers and its pixels (scale: pixels per data unit). */
export type RasterPlan = { region: Region; scale: number; width: number; height: number };

/**
 * The raster for a view showing `view` at `scale` device pixels per data unit: the view and
 * its margin, cut to the data's `bounds` (grown by `pad` data units for the discs' size),
 * its origin on the screen's pixel grid so that a settled raster maps pixel to pixel.
 */
export function planRaster(view: Region, scale: number, bounds: Bounds, pad: number, maxPixels = MAX_RASTER_PIXELS): RasterPlan | null {
  const data: Region = [bounds[0] - pad, bounds[1] - pad, bounds[2] + pad, bounds[3] + pad];
  const want = clip(grow(view), data);
  if (!want) {
    return null;
  }
  let s = scale;
  const px = (want[2] - want[0]) * (want[3] - want[1]) * s * s;
  if (px > maxPixels) {
    s *= Math.sqrt(maxPixels / px);
  }
  // whole screen pixels from the view's corner, so that at the plan's scale pixels line up
  const x0 = view[0] + Math.floor((want[0] - view[0]) * s) / s;
  const y0 = view[1] + Math.floor((want[1] - view[1]) * s) / s;
  const width = Math.max(1, Math.ceil((want[2] - x0) * s));
  const height = Math.max(1, Math.ceil((want[3] - y0) * s));
  return { region: [x0, y0, x0 + width / s, y0 + height / s], scale: s, width, height };
}

/**
 * Whether `plan` no longer serves a view of `view` at `scale`: part of the data in view is
 * outside it, or its resolution is off by more than `tolerance` (a ratio; 1.5 while moving,
 * about 1 once the view settles, so a settled view is never blurred).
 */
export function stale(plan: RasterPlan | null, view: Region, scale: number, bounds: Bounds, pad: number, tolerance: number): boolean {
  if (!plan) {
    return true;
  }
  const seen = clip(view, [bounds[0] - pad, bounds[1] - pad, bounds[2] + pad, bounds[3] + pad]);
  if (seen && !covers(plan.region, seen)) {
    return true;
  }
  const ratio = plan.scale / scale;
  return ratio > tolerance || ratio < 1 / tolerance;
}

/**
 * Paint the cells of `plan.region` (and those whose disc reaches into it) into a new RGBA
 * buffer: the index gives the cells; paintPoints draws them, or paintFootprints when they are
 * squares of a size by the area they cover (polygon cells too small to show their shape).
 */
export function rasterizeCells(
  plan: RasterPlan,
  index: CellIndex,
  x: Float32Array,
  y: Float32Array,
  colorOf: (i: number) => number,
  diameter: CellSizing | Footprint,
  reach: number,
  outline: boolean
): { pixels: Uint8ClampedArray; drawn: number } {
  const pixels = new Uint8ClampedArray(plan.width * plan.height * 4);
  const [x0, y0, x1, y1] = plan.region;
  const view = { width: plan.width, height: plan.height, target: [(x0 + x1) / 2, (y0 + y1) / 2] as [number, number], scale: plan.scale, rotation: 0 };
  const r = reach / plan.scale;
  const spans = spansOver(index, [x0 - r, y0 - r, x1 + r, y1 + r]);
  let listed = 0;
  for (let k = 0; k < spans.length; k += 2) {
    listed += spans[k + 1] - spans[k];
  }
  // reading cells in the index's order jumps through memory: past a quarter of them, the
  // plain pass in storage order (which tests every position anyway) is several times faster
  const cells = listed > index.order.length / 4 ? null : { order: index.order, spans };
  const drawn =
    typeof diameter === 'object' && 'footprint' in diameter
      ? paintFootprints(new Uint32Array(pixels.buffer), view, x, y, colorOf, diameter.footprint, cells?.spans ?? Uint32Array.of(0, x.length), cells?.order ?? null)
      : paintPoints(pixels, view, x, y, colorOf, diameter, cells, outline);
  return { pixels, drawn };
}
