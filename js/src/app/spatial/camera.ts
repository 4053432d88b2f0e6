/**
 * Camera math of the spatial view, independent of deck.gl and the DOM.
 *
 * A figure's saved viewport (`target`, `zoom`: deck.gl's orthographic zoom, 2^zoom
 * pixels per data unit) is read as a REGION of the data: the rectangle it shows in a
 * drawing REFERENCE_WIDTH CSS pixels wide with the figure's aspect ratio. The view then
 * frames that same region at any panel width, so what a figure shows (and the count of
 * cells in view) no longer depends on how wide the panel happens to be.
 */

import type { Bounds, CanvasPayload } from '../shared/types';

/** Width (CSS px) at which a saved `zoom` is taken literally. */
export const REFERENCE_WIDTH = 800;
/** Fraction of the view the data fill after "Fit". */
export const FIT_MARGIN = 0.95;
/** How far one +/- step zooms (log2). */
export const ZOOM_STEP = 0.5;
/** How far in (log2) past the fitted zoom a view may go when its cells' size is not known. */
export const MAX_ZOOM_ABOVE_FIT = 12;

/** A rectangle of the data: x0, y0, x1, y1 (y grows downwards, as in images). */
export type Region = Bounds;

/** deck.gl OrthographicView state (the part we use). */
export type ViewState = { target: [number, number]; zoom: number };

/** The drawing's aspect (height / width) for data `bounds`, clamped so that odd shapes stay usable. */
export function aspectOf(bounds: Bounds): number {
  const w = bounds[2] - bounds[0];
  const hgt = bounds[3] - bounds[1];
  const a = hgt / Math.max(w, 1e-9);
  return Number.isFinite(a) && a > 0 ? Math.max(0.4, Math.min(1.5, a)) : 1;
}

/** The region a saved viewport means (see the module comment). */
export function savedRegion(payload: Pick<CanvasPayload, 'bounds' | 'viewport'>): Region {
  const vp = payload.viewport;
  const [cx, cy] = vp?.target ?? centreOf(payload.bounds);
  const scale = Math.pow(2, Number.isFinite(vp?.zoom) ? vp.zoom : 0);
  const halfW = REFERENCE_WIDTH / 2 / scale;
  const halfH = (REFERENCE_WIDTH * aspectOf(payload.bounds)) / 2 / scale;
  return [cx - halfW, cy - halfH, cx + halfW, cy + halfH];
}

/** The view state that frames `region` (all of it, centred) in a `width`×`height` view. */
export function viewStateFor(region: Region, width: number, height: number, margin = 1): ViewState {
  const rw = Math.max(region[2] - region[0], 1e-9);
  const rh = Math.max(region[3] - region[1], 1e-9);
  const scale = (margin * Math.min(width / rw, height / rh)) || 1;
  return { target: centreOf(region), zoom: Math.log2(scale) };
}

/** The region of the data a view state shows in a `width`×`height` view. */
export function regionOf(vs: ViewState, width: number, height: number): Region {
  const scale = Math.pow(2, vs.zoom);
  const halfW = width / 2 / scale;
  const halfH = height / 2 / scale;
  return [vs.target[0] - halfW, vs.target[1] - halfH, vs.target[0] + halfW, vs.target[1] + halfH];
}

/** All of `bounds` in view, with a small margin. */
export function fitViewState(bounds: Bounds, width: number, height: number): ViewState {
  return viewStateFor(bounds, width, height, FIT_MARGIN);
}

/**
 * The zoom range for data `bounds` in a `width`×`height` view. Out: no further than the whole
 * tissue fitted (beyond it the view only shrinks the data into empty space). In: until one cell,
 * `cellSize` data units across, fills the view's shorter side (nothing finer to see); without a
 * cell size, MAX_ZOOM_ABOVE_FIT past the fit.
 */
export function zoomRange(bounds: Bounds, width: number, height: number, cellSize = 0): [number, number] {
  const fit = fitViewState(bounds, width, height).zoom;
  const inmost = cellSize > 0 ? Math.log2(Math.min(width, height) / cellSize) : fit + MAX_ZOOM_ABOVE_FIT;
  return [fit, Math.max(fit, inmost)];
}

/**
 * A typical cell's size in data units where the figure has no outlines to measure: the side of
 * the square each cell would have if the cells tiled `bounds` (null: no cells or no area).
 */
export function spacingOf(bounds: Bounds, cells: number): number {
  const area = (bounds[2] - bounds[0]) * (bounds[3] - bounds[1]);
  return cells > 0 && area > 0 ? Math.sqrt(area / cells) : 0;
}

/** `vs` zoomed by `steps` ZOOM_STEPs about its centre, kept within `range`. */
export function zoomBy(vs: ViewState, steps: number, range: [number, number]): ViewState {
  const zoom = Math.max(range[0], Math.min(range[1], vs.zoom + steps * ZOOM_STEP));
  return { target: [vs.target[0], vs.target[1]], zoom };
}

/**
 * `target` kept within `bounds`: the view's centre stays over the tissue, so a drag can take it
 * to the edge (a quarter of the view still shows it at a corner) but never entirely off screen.
 */
export function keepOnTissue(target: readonly number[], bounds: Bounds): [number, number] {
  const [x0, y0, x1, y1] = bounds;
  const clamp = (v: number, lo: number, hi: number) => (Number.isFinite(v) ? Math.max(Math.min(lo, hi), Math.min(Math.max(lo, hi), v)) : (lo + hi) / 2);
  return [clamp(target[0], x0, x1), clamp(target[1], y0, y1)];
}

/** `vs` moved by (dx, dy) CSS pixels of the screen (positive dx: the data slide left). */
export function panBy(vs: ViewState, dx: number, dy: number): ViewState {
  const scale = Math.pow(2, vs.zoom);
  return { target: [vs.target[0] + dx / scale, vs.target[1] + dy / scale], zoom: vs.zoom };
}

/** How many of the cells (x, y) lie inside `region` (NaN positions never do). */
export function countInRegion(x: Float32Array, y: Float32Array, region: Region): number {
  const [x0, y0, x1, y1] = region;
  let n = 0;
  for (let i = 0; i < x.length; i++) {
    const xi = x[i];
    const yi = y[i];
    if (xi >= x0 && xi <= x1 && yi >= y0 && yi <= y1) {
      n++;
    }
  }
  return n;
}

/**
 * A scale bar for `scale` px per data unit: a round length (1, 2 or 5 × 10^k data units)
 * drawn at most `maxPx` wide, labelled in `unit` (micrometers shown as µm, mm above 1000 µm).
 */
export function scaleBar(scale: number, unit: string, maxPx = 120): { px: number; label: string } | null {
  if (!(scale > 0) || !Number.isFinite(scale)) {
    return null;
  }
  const maxUnits = maxPx / scale;
  const pow = Math.pow(10, Math.floor(Math.log10(maxUnits)));
  const length = [5, 2, 1].map(m => m * pow).find(v => v <= maxUnits) ?? pow;
  let value = length;
  let shown = unitLabel(unit);
  if ((shown === 'µm') && value >= 1000) {
    value /= 1000;
    shown = 'mm';
  }
  const text = `${+value.toPrecision(3)} ${shown}`.trim();
  return { px: length * scale, label: text };
}

function unitLabel(unit: string): string {
  const u = unit.trim().toLowerCase();
  if (u === 'micrometer' || u === 'micrometre' || u === 'um' || u === 'µm' || u === 'micron') {
    return 'µm';
  }
  if (u === 'nanometer' || u === 'nm') {
    return 'nm';
  }
  if (u === 'millimeter' || u === 'mm') {
    return 'mm';
  }
  return unit;
}

export function centreOf(b: Bounds): [number, number] {
  return [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2];
}

/** What a key does to a view: pan by CSS px, zoom by steps, or frame the saved view or all cells. */
export type KeyMove = { dx: number; dy: number; zoom: number } | 'saved' | 'fit';

/** CSS px an arrow key pans. */
const KEY_STEP = 60;

const KEY_MOVES: Record<string, KeyMove> = {
  ArrowLeft: { dx: -KEY_STEP, dy: 0, zoom: 0 },
  ArrowRight: { dx: KEY_STEP, dy: 0, zoom: 0 },
  ArrowUp: { dx: 0, dy: -KEY_STEP, zoom: 0 },
  ArrowDown: { dx: 0, dy: KEY_STEP, zoom: 0 },
  '+': { dx: 0, dy: 0, zoom: 1 },
  '=': { dx: 0, dy: 0, zoom: 1 },
  '-': { dx: 0, dy: 0, zoom: -1 },
  '0': 'saved',
  Home: 'saved',
  f: 'fit',
  F: 'fit'
};

/**
 * The view's keyboard, one map for the WebGL stage and the 2D drawing: arrows pan, + and -
 * zoom, 0 or Home show the saved view, f fits. Null: the key is not the view's.
 */
export function keyMove(key: string): KeyMove | null {
  return Object.prototype.hasOwnProperty.call(KEY_MOVES, key) ? KEY_MOVES[key] : null;
}
