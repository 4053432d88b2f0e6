/**
 * A uniform grid over the cells, built once when the data arrive, so that what a frame or
 * a pointer move costs depends on the cells in view, not on all of them.
 *
 * The cells are counting-sorted by grid bin (O(N), two passes): `order` lists cell indices
 * bin by bin and `starts[b]..starts[b + 1]` is bin b's slice of it. That is 4 bytes a cell
 * plus 4 bytes a bin (about one bin per 8 cells), against a tree's pointers per node.
 * Cells without a position (NaN) are in no bin.
 */

import type { Region } from './camera';

export type CellIndex = {
  /** The grid's origin (data units). */
  x0: number;
  y0: number;
  /** A bin's side (data units). */
  size: number;
  cols: number;
  rows: number;
  /** Cell indices, bin by bin. */
  order: Uint32Array;
  /** Bin b's cells are order[starts[b]] .. order[starts[b + 1] - 1]; length cols * rows + 1. */
  starts: Uint32Array;
};

/** Cells a bin holds on average, when the cells spread evenly. */
const PER_BIN = 8;

/** The grid over cells (x[i], y[i]). */
export function buildIndex(x: Float32Array, y: Float32Array, perBin = PER_BIN): CellIndex {
  const n = Math.min(x.length, y.length);
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (let i = 0; i < n; i++) {
    const xi = x[i];
    const yi = y[i];
    // NaN fails every comparison: such cells never widen the box
    if (xi < x0) x0 = xi;
    if (xi > x1) x1 = xi;
    if (yi < y0) y0 = yi;
    if (yi > y1) y1 = yi;
  }
  if (!(x1 >= x0 && y1 >= y0)) {
    return { x0: 0, y0: 0, size: 1, cols: 1, rows: 1, order: new Uint32Array(0), starts: new Uint32Array(2) };
  }
  const w = Math.max(x1 - x0, 1e-9);
  const hgt = Math.max(y1 - y0, 1e-9);
  const bins = Math.max(1, Math.ceil(n / perBin));
  // square bins, about `bins` of them over the box
  let size = Math.sqrt((w * hgt) / bins);
  if (!(size > 0)) {
    size = Math.max(w, hgt) / bins;
  }
  const cols = Math.min(Math.max(1, Math.ceil(w / size)), 1 << 15);
  const rows = Math.min(Math.max(1, Math.ceil(hgt / size)), 1 << 15);
  size = Math.max(w / cols, hgt / rows) * (1 + 1e-6);
  const counts = new Uint32Array(cols * rows + 1);
  // each cell's bin, computed once (the second pass only reads it); -1: no position
  const binOf = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const cx = Math.floor((x[i] - x0) / size);
    const cy = Math.floor((y[i] - y0) / size);
    if (cx >= 0 && cx < cols && cy >= 0 && cy < rows) {
      const b = cy * cols + cx;
      binOf[i] = b;
      counts[b + 1]++;
    } else {
      binOf[i] = -1;
    }
  }
  for (let b = 1; b < counts.length; b++) {
    counts[b] += counts[b - 1];
  }
  const starts = counts.slice();
  const order = new Uint32Array(counts[counts.length - 1]);
  for (let i = 0; i < n; i++) {
    const b = binOf[i];
    if (b >= 0) {
      order[counts[b]++] = i;
    }
  }
  return { x0, y0, size, cols, rows, order, starts };
}

/** The bins (column and row ranges, inclusive) that touch `region`; null when none does. */
function binsOver(index: CellIndex, region: Region): [number, number, number, number] | null {
  const { x0, y0, size, cols, rows } = index;
  const c0 = Math.max(0, Math.floor((region[0] - x0) / size));
  const r0 = Math.max(0, Math.floor((region[1] - y0) / size));
  const c1 = Math.min(cols - 1, Math.floor((region[2] - x0) / size));
  const r1 = Math.min(rows - 1, Math.floor((region[3] - y0) / size));
  return c1 >= c0 && r1 >= r0 ? [c0, r0, c1, r1] : null;
}

/**
 * An upper bound of the cells in `region`, from whole bins (no per-cell test): what the
 * level-of-detail choice needs, at the cost of the bins only.
 */
export function countOver(index: CellIndex, region: Region): number {
  const span = binsOver(index, region);
  if (!span) {
    return 0;
  }
  const [c0, r0, c1, r1] = span;
  let n = 0;
  for (let r = r0; r <= r1; r++) {
    n += index.starts[r * index.cols + c1 + 1] - index.starts[r * index.cols + c0];
  }
  return n;
}

/**
 * The slices of `order` that hold the cells of the bins over `region` (start, end pairs, one
 * per row of bins): a superset of the cells in it, for loops that test positions themselves.
 */
export function spansOver(index: CellIndex, region: Region): Uint32Array {
  const span = binsOver(index, region);
  if (!span) {
    return new Uint32Array(0);
  }
  const [c0, r0, c1, r1] = span;
  const out = new Uint32Array((r1 - r0 + 1) * 2);
  for (let r = r0; r <= r1; r++) {
    out[2 * (r - r0)] = index.starts[r * index.cols + c0];
    out[2 * (r - r0) + 1] = index.starts[r * index.cols + c1 + 1];
  }
  return out;
}

/** Call `fn(i)` for every cell i inside `region` (bounds included). */
export function forEachIn(index: CellIndex, x: Float32Array, y: Float32Array, region: Region, fn: (i: number) => void): void {
  const span = binsOver(index, region);
  if (!span) {
    return;
  }
  const [c0, r0, c1, r1] = span;
  const { order, starts, cols } = index;
  const [rx0, ry0, rx1, ry1] = region;
  for (let r = r0; r <= r1; r++) {
    // a row's bins are contiguous in `order`
    const end = starts[r * cols + c1 + 1];
    for (let k = starts[r * cols + c0]; k < end; k++) {
      const i = order[k];
      const xi = x[i];
      const yi = y[i];
      if (xi >= rx0 && xi <= rx1 && yi >= ry0 && yi <= ry1) {
        fn(i);
      }
    }
  }
}

/** The cells inside `region`, or null when there are more than `limit` (the caller draws them another way). */
export function cellsIn(index: CellIndex, x: Float32Array, y: Float32Array, region: Region, limit: number): Uint32Array | null {
  if (countOver(index, region) > limit * 4) {
    return null; // clearly over: skip the per-cell pass
  }
  const out: number[] = [];
  forEachIn(index, x, y, region, i => out.push(i));
  return out.length > limit ? null : Uint32Array.from(out);
}

/**
 * Exactly how many cells lie inside `region`: bins wholly inside count by their size, only
 * the cells of the bins on its edge are tested (the caption's count stays cheap at any zoom).
 */
export function countIn(index: CellIndex, x: Float32Array, y: Float32Array, region: Region): number {
  const span = binsOver(index, region);
  if (!span) {
    return 0;
  }
  const [c0, r0, c1, r1] = span;
  const { x0, y0, size, cols, starts, order } = index;
  const [rx0, ry0, rx1, ry1] = region;
  // bins whose whole square lies inside the region
  const inner = (c: number, r: number) =>
    x0 + c * size >= rx0 && x0 + (c + 1) * size <= rx1 && y0 + r * size >= ry0 && y0 + (r + 1) * size <= ry1;
  let n = 0;
  for (let r = r0; r <= r1; r++) {
    for (let c = c0; c <= c1; c++) {
      const b = r * cols + c;
      if (inner(c, r)) {
        n += starts[b + 1] - starts[b];
        continue;
      }
      for (let k = starts[b]; k < starts[b + 1]; k++) {
        const i = order[k];
        if (x[i] >= rx0 && x[i] <= rx1 && y[i] >= ry0 && y[i] <= ry1) {
          n++;
        }
      }
    }
  }
  return n;
}

/**
 * The cell nearest (px, py) within `radius` data units for which `accept(i)` holds, or -1.
 * Only the bins within `radius` are read.
 */
export function nearest(
  index: CellIndex,
  x: Float32Array,
  y: Float32Array,
  px: number,
  py: number,
  radius: number,
  accept: (i: number) => boolean = () => true
): number {
  let best = -1;
  let bestD = radius * radius;
  forEachIn(index, x, y, [px - radius, py - radius, px + radius, py + radius], i => {
    const dx = x[i] - px;
    const dy = y[i] - py;
    const d = dx * dx + dy * dy;
    if (d <= bestD && (best < 0 || d < bestD || i < best) && accept(i)) {
      best = i;
      bestD = d;
    }
  });
  return best;
}

/** Whether (px, py) is inside polygon i (even-odd rule) of flat `vertices` (x, y pairs) from starts[i] to starts[i + 1]. */
export function inPolygon(starts: Uint32Array, vertices: Float32Array, i: number, px: number, py: number): boolean {
  const v0 = starts[i];
  const v1 = starts[i + 1];
  let inside = false;
  for (let v = v0, u = v1 - 1; v < v1; u = v++) {
    const xv = vertices[2 * v], yv = vertices[2 * v + 1];
    const xu = vertices[2 * u], yu = vertices[2 * u + 1];
    if (yv > py !== yu > py && px < ((xu - xv) * (py - yv)) / (yu - yv) + xv) {
      inside = !inside;
    }
  }
  return inside;
}

/**
 * The polygon cell containing (px, py), looking at cells whose centroid is within `reach`
 * data units (a cell's width or so); -1 when none does.
 */
export function containing(
  index: CellIndex,
  x: Float32Array,
  y: Float32Array,
  starts: Uint32Array,
  vertices: Float32Array,
  px: number,
  py: number,
  reach: number,
  accept: (i: number) => boolean = () => true
): number {
  let found = -1;
  let bestD = Infinity;
  forEachIn(index, x, y, [px - reach, py - reach, px + reach, py + reach], i => {
    const dx = x[i] - px;
    const dy = y[i] - py;
    const d = dx * dx + dy * dy;
    if (d < bestD && accept(i) && inPolygon(starts, vertices, i, px, py)) {
      found = i;
      bestD = d;
    }
  });
  return found;
}
