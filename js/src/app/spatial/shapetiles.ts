/**
 * One shapes element's outlines (nucleus boundaries beside the cells) by tile, only where and
 * when the view can show them, ready for the outline layers (layers/outlines.ts).
 *
 * The `shapes` reply names the element's index (its key and grid, the cells' outline grid cut
 * for this element); a view asks the tiles it touches (`shapes_tile`) once a typical shape is
 * OUTLINE_PX apart on screen, as the cells' outlines are (outlinetiles.ts tilesInView), keeps
 * them by key and tile (equal keys, equal bytes), and merges them into one ring set: a shape on
 * a tile edge comes with each tile and is taken once.
 */

import { splitReply } from '../shared/buffers';
import { Lru } from '../shared/lru';
import type { Reply } from '../shared/transport';
import type { ShapesIndex, ShapesTileData } from '../shared/types';
import type { Region } from './camera';
import type { LayerSource } from './layersource';
import { tilesInView, type Tile } from './outlinetiles';

/** Shape tiles a page keeps (a tile of ~2,048 nuclei of 13 vertices is ~200 KB: 25 MB at most). */
export const SHAPE_CACHE_TILES = 128;

/** Rings to draw: ring i is vertices starts[i] to starts[i + 1] (x, y pairs), and each edge as a segment. */
export type ShapeRings = {
  starts: Uint32Array;
  vertices: Float32Array;
  /** Each edge x0, y0, x1, y1 (a ring stored open gets its closing edge): what the software tier draws. */
  segments: Float32Array;
};

/** What the stage draws of one shapes element: its rings in view, colour and opacity. */
export type ShapesDrawing = {
  element: string;
  rings: ShapeRings;
  /** RGB, 0-255. */
  color: [number, number, number];
  opacity: number;
};

/** The page's shape tiles by key and tile: every figure and version with the same element shares them. */
const pageTiles = new Lru<Reply<ShapesTileData>>({ maxEntries: SHAPE_CACHE_TILES });

/** The typical distance between shapes of `index` in data units (its bounds' area shared among its shapes). */
export function shapeSpacing(index: ShapesIndex): number {
  const b = index.bounds;
  if (!b || index.n_shapes <= 0) {
    return 0;
  }
  return Math.sqrt(Math.max((b[2] - b[0]) * (b[3] - b[1]), 0) / index.n_shapes);
}

/** One ring set of the shapes in `tiles`, in the element's order (a shape in two tiles taken once). */
export function mergeShapeTiles(tiles: Reply<ShapesTileData>[]): ShapeRings {
  const seen = new Set<number>();
  const parts = tiles.map(tile => splitReply('shapes_tile', tile.data, tile.buffers));
  const picked: [number, number][] = [];
  let vertexCount = 0;
  parts.forEach((part, t) =>
    part.index.forEach((shape, k) => {
      if (!seen.has(shape)) {
        seen.add(shape);
        picked.push([t, k]);
        vertexCount += part.starts[k + 1] - part.starts[k];
      }
    })
  );
  const starts = new Uint32Array(picked.length + 1);
  const vertices = new Float32Array(2 * vertexCount);
  const segments = new Float32Array(4 * vertexCount);
  let v = 0;
  let e = 0;
  picked.forEach(([t, k], i) => {
    const part = parts[t];
    const ring = part.vertices.subarray(2 * part.starts[k], 2 * part.starts[k + 1]);
    const m = ring.length / 2;
    vertices.set(ring, 2 * v);
    const closed = m >= 2 && ring[0] === ring[2 * m - 2] && ring[1] === ring[2 * m - 1];
    const edges = m < 2 ? 0 : closed ? m - 1 : m;
    for (let j = 0; j < edges; j++) {
      const a = 2 * j;
      const b = 2 * ((j + 1) % m);
      segments.set([ring[a], ring[a + 1], ring[b], ring[b + 1]], 4 * e++);
    }
    v += m;
    starts[i + 1] = v;
  });
  return { starts, vertices, segments: segments.slice(0, 4 * e) };
}

/** One shapes element of one version: its index once, its tiles as the view needs them. */
export class ShapeTiles {
  index: ShapesIndex | null = null;
  private readonly asked = new Set<string>();
  private readonly failed = new Set<string>();
  private merged: { tiles: string; rings: ShapeRings } | null = null;

  constructor(
    private readonly source: LayerSource,
    readonly element: string,
    private readonly changed: () => void
  ) {}

  /** The element's index (the `shapes` reply): nothing is drawn before it. */
  async open(): Promise<void> {
    const { transport, version, system } = this.source;
    const reply = await transport.request('shapes', { version, element: this.element, coordinate_system: system });
    this.index = reply.data.index;
  }

  /**
   * The rings to draw over `region` now (the held tiles of those in view), or null when the view
   * is too far out for outlines; the missing tiles are asked for, and `changed` called as they arrive.
   */
  frame(region: Region, pixelsPerUnit: number): ShapeRings | null {
    const index = this.index;
    if (!index) {
      return null;
    }
    const tiles = tilesInView(index.grid, region, pixelsPerUnit, shapeSpacing(index));
    if (!tiles.length) {
      return null;
    }
    const held: Reply<ShapesTileData>[] = [];
    const names: string[] = [];
    for (const tile of tiles) {
      const name = this.nameOf(tile);
      const found = pageTiles.peek(name);
      if (found) {
        held.push(found);
        names.push(name);
      } else if (!this.asked.has(name) && !this.failed.has(name)) {
        void this.load(tile, name);
      }
    }
    const joined = names.join(' ');
    if (this.merged?.tiles !== joined) {
      this.merged = { tiles: joined, rings: mergeShapeTiles(held) };
    }
    return this.merged.rings;
  }

  private nameOf([column, row]: Tile): string {
    return `${this.index!.key}/${column}/${row}`;
  }

  private async load([column, row]: Tile, name: string): Promise<void> {
    this.asked.add(name);
    try {
      const { transport, version, system } = this.source;
      const params = { version, element: this.element, key: this.index!.key, column, row, coordinate_system: system };
      pageTiles.set(name, await transport.request('shapes_tile', params));
      this.changed();
    } catch {
      this.failed.add(name); // a refused tile (too dense) is not asked again on every frame
    } finally {
      this.asked.delete(name);
    }
  }
}
