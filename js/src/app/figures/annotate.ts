/**
 * Regions drawn on the tissue (issue 27): the tools' geometry, undo, per-region cell
 * counts and the save call. No DOM and no deck.gl here, so every rule is tested alone;
 * the spatial view only feeds it points in the coordinates it draws cells at.
 *
 * The counts shown while drawing use the same rule as the service's `annotate`
 * (even-odd containment, the last region containing a cell wins), so the numbers
 * on the outlines are the numbers the saved version's Changes report.
 */

import type { Transport } from '../shared/transport';
import type { AnnotateData } from '../shared/types';

export type Point = [number, number];
export type Tool = 'polygon' | 'rectangle' | 'lasso';

export interface Region {
  label: string;
  polygon: Point[];
  /** The embedding (obsm key) the polygon is drawn on; absent: the tissue. */
  space?: string;
}

/** Where the cells are in each embedding drawn on: obsm key → x, y in table order. */
export type Spaces = Record<string, { x: ArrayLike<number>; y: ArrayLike<number> }>;

/** The rectangle with corners `a` and `b`, as a polygon. */
export function rectangle(a: Point, b: Point): Point[] {
  return [
    [a[0], a[1]],
    [b[0], a[1]],
    [b[0], b[1]],
    [a[0], b[1]]
  ];
}

/** Whether (x, y) lies inside `polygon` (even-odd rule; NaN positions never do). */
export function contains(polygon: Point[], x: number, y: number): boolean {
  let inside = false;
  for (let i = 0, j = polygon.length - 1; i < polygon.length; j = i++) {
    const [xa, ya] = polygon[j];
    const [xb, yb] = polygon[i];
    if (ya > y !== yb > y && x < xa + ((y - ya) * (xb - xa)) / (yb - ya)) {
      inside = !inside;
    }
  }
  return inside;
}

/**
 * Per cell, the index of the last region containing it, else -1. `x`, `y`: where the tissue
 * draws the cells; a region drawn on an embedding is tested on that embedding's positions
 * (`spaces`), so a selection on either panel selects the same cells (a region on an
 * embedding not given holds none).
 */
export function regionCodes(x: ArrayLike<number>, y: ArrayLike<number>, regions: Region[], spaces: Spaces = {}): Int32Array {
  const codes = new Int32Array(x.length).fill(-1);
  regions.forEach((region, index) => {
    const where = region.space === undefined ? { x, y } : spaces[region.space];
    if (!where) {
      return;
    }
    const [x0, y0, x1, y1] = box(region.polygon);
    const n = Math.min(codes.length, where.x.length);
    for (let i = 0; i < n; i++) {
      const xi = where.x[i];
      const yi = where.y[i];
      if (xi >= x0 && xi <= x1 && yi >= y0 && yi <= y1 && contains(region.polygon, xi, yi)) {
        codes[i] = index;
      }
    }
  });
  return codes;
}

function box(polygon: Point[]): [number, number, number, number] {
  const xs = polygon.map(p => p[0]);
  const ys = polygon.map(p => p[1]);
  return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}

/** How many cells each region holds (after later regions took theirs). */
export function regionCounts(codes: Int32Array, n: number): number[] {
  const counts = new Array<number>(n).fill(0);
  for (const code of codes) {
    if (code >= 0) {
      counts[code] += 1;
    }
  }
  return counts;
}

/** The selected cells' positions in the table (in any region), in table order. */
export function selectedCells(codes: Int32Array): number[] {
  const out: number[] = [];
  codes.forEach((code, index) => {
    if (code >= 0) {
      out.push(index);
    }
  });
  return out;
}

/** The cell IDs as a list to paste (one per line): text, never markup. */
export function cellList(names: string[]): string {
  return names.join('\n');
}

/** A label not taken yet: "region 1", "region 2", ... */
export function nextLabel(regions: Region[]): string {
  const taken = new Set(regions.map(r => r.label));
  let n = regions.length + 1;
  while (taken.has(`region ${n}`)) {
    n += 1;
  }
  return `region ${n}`;
}

/**
 * The regions being drawn, with undo. A polygon or lasso gathers points until it is
 * closed; a rectangle takes two corners. Undo removes the last point of the outline in
 * progress, else the last finished region.
 */
export class Drawing {
  tool: Tool = 'polygon';
  readonly regions: Region[] = [];
  draft: Point[] = [];
  /** Where the outline in progress is drawn: an embedding's key, or undefined (the tissue). */
  space: string | undefined = undefined;

  /** Draw the next points on `space` (an outline in progress elsewhere is dropped). */
  drawOn(space: string | undefined): void {
    if (space !== this.space) {
      this.draft = [];
      this.space = space;
    }
  }

  /** Add a point to the outline in progress; a rectangle closes on its second corner. */
  add(point: Point): void {
    if (!Number.isFinite(point[0]) || !Number.isFinite(point[1])) {
      return;
    }
    this.draft.push([point[0], point[1]]);
    if (this.tool === 'rectangle' && this.draft.length === 2) {
      this.finish(rectangle(this.draft[0], this.draft[1]));
    }
  }

  /** Close the outline in progress as a region; false when it has fewer than 3 points. */
  close(label?: string): boolean {
    if (this.tool === 'rectangle' || this.draft.length < 3) {
      return false;
    }
    this.finish(this.draft, label);
    return true;
  }

  /** Undo the last point, else the last region; false when there is nothing to undo. */
  undo(): boolean {
    if (this.draft.length > 0) {
      this.draft.pop();
      return true;
    }
    return this.regions.pop() !== undefined;
  }

  /** Rename region `index`; a name taken by another region or empty is refused. */
  rename(index: number, label: string): boolean {
    const text = label.trim();
    if (!text || this.regions.some((r, i) => i !== index && r.label === text)) {
      return false;
    }
    this.regions[index].label = text;
    return true;
  }

  clear(): void {
    this.regions.length = 0;
    this.draft = [];
  }

  private finish(polygon: Point[], label?: string): void {
    const name = label?.trim() && !this.regions.some(r => r.label === label.trim()) ? label.trim() : nextLabel(this.regions);
    const points = polygon.map(p => [p[0], p[1]] as Point);
    this.regions.push(this.space === undefined ? { label: name, polygon: points } : { label: name, polygon: points, space: this.space });
    this.draft = [];
  }
}

/** A region as the `annotate` request takes it: a polygon on the tissue, or `{embedding, polygon}`. */
export type RegionValue = number[][] | { embedding: string; polygon: number[][] };

/** The `annotate` request's regions: label → polygon, in drawing order (the last drawn wins). */
export function regionMapping(regions: Region[]): Record<string, RegionValue> {
  const out: Record<string, RegionValue> = {};
  for (const region of regions) {
    const polygon = region.polygon.map(p => [p[0], p[1]]);
    out[region.label] = region.space === undefined ? polygon : { embedding: region.space, polygon };
  }
  return out;
}

/** Save the regions as obs `column` of a new version on `version`; the new version's folder and ID. */
export async function saveAnnotation(
  transport: Transport,
  options: { column: string; title: string; figure: string; version: number | string; regions: Region[] }
): Promise<AnnotateData> {
  const { data } = await transport.request('annotate', {
    column: options.column,
    title: options.title,
    figure: options.figure,
    version: options.version,
    regions: regionMapping(options.regions)
  });
  return data;
}
