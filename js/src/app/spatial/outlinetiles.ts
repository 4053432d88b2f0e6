/**
 * A large tissue's cell outlines, by tile, only where and when the view can show them.
 *
 * The `cells` reply of a large tissue carries circles (a radius a cell, from its polygon's
 * area) and the grid its outlines are cut into (`shapes.outlines`); the fit view draws the
 * circles. Once a typical cell is OUTLINE_PX across on screen, the tiles the view touches are
 * asked for (`cell_outlines`), kept page-wide by cells key and tile (equal keys, equal bytes,
 * so every figure and version sharing the cells shares the tiles), and merged into the
 * polygons the two tiers already draw: cells whose tile has not arrived keep no outline.
 */

import type { PolygonShapes } from './raster';
import { splitReply } from '../shared/buffers';
import type { Reply } from '../shared/transport';
import type { CellOutlinesData, OutlineTiles as Grid } from '../shared/types';

/** A typical cell this many CSS px across (or more) is worth its outline; smaller, the circles say as much. */
export const OUTLINE_PX = 4;
/**
 * The most tiles one view asks for. Why: at OUTLINE_PX a 2,000 px wide view meets at most a few
 * dozen tiles of ~2,048 cells; a view asking more is zoomed out past where outlines show.
 */
export const MAX_VIEW_TILES = 64;

/** A tile of the grid: [column, row]. */
export type Tile = [number, number];

/**
 * The tiles of `grid` that `region` (x0, y0, x1, y1 in data units) touches, when a cell of
 * `cellSize` data units is at least OUTLINE_PX at `pixelsPerUnit`; else none (the view is too far out).
 */
export function tilesInView(grid: Grid, region: number[], pixelsPerUnit: number, cellSize: number): Tile[] {
  if (!(cellSize * pixelsPerUnit >= OUTLINE_PX) || !(grid.size > 0)) {
    return [];
  }
  const span = (lo: number, hi: number, origin: number, count: number): [number, number] => [
    Math.max(0, Math.floor((lo - origin) / grid.size)),
    Math.min(count - 1, Math.floor((hi - origin) / grid.size))
  ];
  const [c0, c1] = span(region[0], region[2], grid.x0, grid.columns);
  const [r0, r1] = span(region[1], region[3], grid.y0, grid.rows);
  if (c1 < c0 || r1 < r0 || (c1 - c0 + 1) * (r1 - r0 + 1) > MAX_VIEW_TILES) {
    return [];
  }
  const tiles: Tile[] = [];
  for (let r = r0; r <= r1; r++) {
    for (let c = c0; c <= c1; c++) {
      tiles.push([c, r]);
    }
  }
  return tiles;
}

/** Asks for one tile: through the page's `outlineCache` (cellstore.ts), so once per key and tile. */
export type TileLoader = (column: number, row: number) => Promise<Reply<CellOutlinesData>>;

/**
 * The outline tiles one view has gathered, and the polygons they make for its `n` cells.
 */
export class OutlineTileSet {
  private readonly loaded = new Map<string, Reply<CellOutlinesData>>();
  private readonly failed = new Set<string>();
  private merged: PolygonShapes | null = null;

  constructor(
    readonly key: string,
    readonly grid: Grid,
    readonly n: number,
    private readonly load: TileLoader
  ) {}

  /** How many tiles this view holds. */
  get size(): number {
    return this.loaded.size;
  }

  /**
   * Bring in `tiles` (from the page's cache or the server); resolves whether any was new here.
   * A tile that fails is not asked again by this view (a refused tile, e.g. one too dense, would
   * otherwise be asked on every frame of a pan); its cells keep their circles.
   */
  async want(tiles: Tile[]): Promise<boolean> {
    const missing = tiles.filter(([c, r]) => !this.loaded.has(`${c}/${r}`) && !this.failed.has(`${c}/${r}`));
    const replies = await Promise.allSettled(missing.map(([c, r]) => this.load(c, r)));
    let fresh = false;
    missing.forEach(([c, r], i) => {
      const reply = replies[i];
      if (reply.status === 'fulfilled') {
        fresh ||= !this.loaded.has(`${c}/${r}`);
        this.loaded.set(`${c}/${r}`, reply.value);
      } else {
        this.failed.add(`${c}/${r}`);
      }
    });
    if (fresh) {
      this.merged = null;
    }
    return fresh;
  }

  /** Every cell's outline from the tiles held (cell i: vertices starts[i] to starts[i + 1]; none where no tile has it). */
  polygons(): PolygonShapes {
    this.merged ??= mergeTiles(this.n, [...this.loaded.values()]);
    return this.merged;
  }
}

/** One polygon set, in table order, of the outlines in `tiles` (a cell on a tile edge is in both: taken once). */
export function mergeTiles(n: number, tiles: Reply<CellOutlinesData>[]): PolygonShapes {
  const from = new Int32Array(n).fill(-1); // which tile holds cell i
  const at = new Uint32Array(n); // its place in that tile
  const parts = tiles.map(tile => splitReply('cell_outlines', tile.data, tile.buffers));
  parts.forEach((part, t) =>
    part.index.forEach((cell, k) => {
      if (cell < n && from[cell] < 0) {
        from[cell] = t;
        at[cell] = k;
      }
    })
  );
  const starts = new Uint32Array(n + 1);
  for (let i = 0; i < n; i++) {
    const part = from[i] < 0 ? null : parts[from[i]];
    starts[i + 1] = starts[i] + (part ? part.starts[at[i] + 1] - part.starts[at[i]] : 0);
  }
  const vertices = new Float32Array(2 * starts[n]);
  for (let i = 0; i < n; i++) {
    if (from[i] >= 0) {
      const part = parts[from[i]];
      vertices.set(part.vertices.subarray(2 * part.starts[at[i]], 2 * part.starts[at[i] + 1]), 2 * starts[i]);
    }
  }
  return { starts, vertices };
}
