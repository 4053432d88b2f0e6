/**
 * Transcripts by tile: which tiles of a points element's index a view needs, and the points
 * they make to draw.
 *
 * The `points` reply describes the index (points.py): a square cut into 2^k x 2^k tiles at
 * level k, the finest level's tiles holding every point, coarser ones an even sample. A view
 * asks for the tiles it touches at the level whose tiles are about TILE_PX across on screen
 * (never finer than the finest), each once per page (`points_tile`, named by the index key,
 * the tile and the genes); while a tile is on its way its nearest coarser tile already held
 * stands in, so a pan never shows a hole where points were.
 */

import { KeyedCache } from './cellstore';
import { splitReply } from '../shared/buffers';
import type { Reply } from '../shared/transport';
import type { PointsInfo, PointsTileData } from '../shared/types';
import type { LayerSource } from './layersource';

/** A tile this many CSS px across (or less) on screen: a level finer is asked once tiles grow past it. */
export const TILE_PX = 512;
/** The most tiles one view asks for (a 4K screen at TILE_PX meets about 40). */
export const MAX_VIEW_TILES = 64;
/** Bytes of point tiles a page keeps (6 bytes a point: about 11 million points). */
export const POINT_TILE_CACHE_BYTES = 64 * 1024 * 1024;

/** Tiles by `<index key>/<genes>/<level>/<x>/<y>`, shared by every figure and version showing the element. */
export const pointTileCache = new KeyedCache<Reply<PointsTileData>>(POINT_TILE_CACHE_BYTES);

export type TileAddress = { level: number; x: number; y: number };

/** A tile decoded: positions in data units (x, y pairs) and gene codes (into `PointsInfo.genes`). */
export type PointTile = TileAddress & { n: number; positions: Float32Array; genes: Uint16Array; total: number; sampled: boolean };

/** The level whose tiles are at most TILE_PX across at `pixelsPerUnit`, within 0 and the finest. */
export function levelFor(info: PointsInfo, pixelsPerUnit: number): number {
  const side = (info.bounds[2] - info.bounds[0]) * pixelsPerUnit;
  const level = Math.ceil(Math.log2(Math.max(1, side / TILE_PX)));
  return Math.max(0, Math.min(info.finest_level, level));
}

/**
 * The tiles of `level` that `region` (x0, y0, x1, y1 in data units) touches, coarser levels
 * taken while that would be more than MAX_VIEW_TILES (a tall, narrow view of a huge index).
 */
export function tilesInView(info: PointsInfo, region: number[], level: number): TileAddress[] {
  const [bx0, by0, bx1] = info.bounds;
  for (let k = level; k >= 0; k--) {
    const count = 2 ** k;
    const size = (bx1 - bx0) / count;
    const span = (lo: number, hi: number, origin: number): [number, number] => [
      Math.max(0, Math.floor((lo - origin) / size)),
      Math.min(count - 1, Math.floor((hi - origin) / size))
    ];
    const [c0, c1] = span(region[0], region[2], bx0);
    const [r0, r1] = span(region[1], region[3], by0);
    if (c1 < c0 || r1 < r0) {
      return [];
    }
    if ((c1 - c0 + 1) * (r1 - r0 + 1) <= MAX_VIEW_TILES) {
      const tiles: TileAddress[] = [];
      for (let y = r0; y <= r1; y++) {
        for (let x = c0; x <= c1; x++) {
          tiles.push({ level: k, x, y });
        }
      }
      return tiles;
    }
  }
  return [];
}

/** A `points_tile` reply as positions in data units. */
export function decodeTile(reply: Reply<PointsTileData>): PointTile {
  const data = reply.data;
  const parts = splitReply('points_tile', data, reply.buffers);
  const [x0, y0, x1, y1] = data.bounds;
  const sx = (x1 - x0) / 65535;
  const sy = (y1 - y0) / 65535;
  const positions = new Float32Array(2 * data.n);
  for (let i = 0; i < data.n; i++) {
    positions[2 * i] = x0 + parts.x[i] * sx;
    positions[2 * i + 1] = y0 + parts.y[i] * sy;
  }
  return { level: data.level, x: data.x, y: data.y, n: data.n, positions, genes: parts.gene, total: data.total, sampled: data.sampled };
}

function addressKey(t: TileAddress): string {
  return `${t.level}/${t.x}/${t.y}`;
}

/** Asks for one tile of the current genes (through the page's cache). */
export type PointTileLoader = (tile: TileAddress) => Promise<Reply<PointsTileData>>;

/**
 * The tiles one view holds of one element and gene choice, and which of them to draw for a view.
 */
export class PointTileSet {
  private readonly held = new Map<string, PointTile>();
  private readonly failed = new Set<string>();
  /**
   * Whether a tile came from the element's sample although `info` is whole: the server dropped
   * that index and builds it again (`partial_reason` "building") or cannot now ("refused"); ask
   * `points` again.
   */
  dropped = false;

  constructor(
    readonly info: PointsInfo,
    private readonly load: PointTileLoader
  ) {}

  get size(): number {
    return this.held.size;
  }

  /** Bring in `tiles`; resolves whether any was new. A tile that fails is not asked again by this set. */
  async want(tiles: TileAddress[]): Promise<boolean> {
    const missing = tiles.filter(t => !this.held.has(addressKey(t)) && !this.failed.has(addressKey(t)));
    const replies = await Promise.allSettled(missing.map(t => this.load(t)));
    let fresh = false;
    missing.forEach((t, i) => {
      const reply = replies[i];
      if (reply.status === 'fulfilled') {
        fresh ||= !this.held.has(addressKey(t));
        this.held.set(addressKey(t), decodeTile(reply.value));
        this.dropped ||= reply.value.data.partial && !this.info.partial;
      } else {
        this.failed.add(addressKey(t));
      }
    });
    return fresh;
  }

  /** For each wanted tile: itself when held, else its nearest held ancestor (each drawn once). */
  drawn(tiles: TileAddress[]): PointTile[] {
    const out = new Map<string, PointTile>();
    for (const t of tiles) {
      for (let k = t.level; k >= 0; k--) {
        const shift = t.level - k;
        const up = { level: k, x: t.x >> shift, y: t.y >> shift };
        const found = this.held.get(addressKey(up));
        if (found) {
          out.set(addressKey(up), found);
          break;
        }
      }
    }
    // a coarse stand-in and a finer tile inside it would draw that spot twice: the stand-in covers it
    return [...out.values()].filter(tile => {
      for (let k = tile.level - 1; k >= 0; k--) {
        const shift = tile.level - k;
        if (out.has(addressKey({ level: k, x: tile.x >> shift, y: tile.y >> shift }))) {
          return false;
        }
      }
      return true;
    });
  }
}

/** The points of `tiles` as one set of binary attributes: x, y pairs, RGBA bytes, gene codes. */
export type PointsDrawing = { n: number; positions: Float32Array; colors: Uint8Array; genes: Uint16Array };

/** `tiles` merged, each point coloured by its gene (`rgba`: 4 bytes per gene code; alpha 0 hides a gene). */
export function mergePoints(tiles: PointTile[], rgba: Uint8Array): PointsDrawing {
  let n = 0;
  for (const t of tiles) {
    n += t.n;
  }
  const positions = new Float32Array(2 * n);
  const colors = new Uint8Array(4 * n);
  const genes = new Uint16Array(n);
  let at = 0;
  for (const t of tiles) {
    positions.set(t.positions.subarray(0, 2 * t.n), 2 * at);
    genes.set(t.genes.subarray(0, t.n), at);
    for (let i = 0; i < t.n; i++) {
      const g = 4 * t.genes[i];
      const o = 4 * (at + i);
      colors[o] = rgba[g];
      colors[o + 1] = rgba[g + 1];
      colors[o + 2] = rgba[g + 2];
      colors[o + 3] = rgba[g + 3];
    }
    at += t.n;
  }
  return { n, positions, colors, genes };
}

/** The drawn point nearest (x, y) within `reach` data units (-1: none); hidden points (alpha 0) are passed over. */
export function nearestPoint(drawing: PointsDrawing, x: number, y: number, reach: number): number {
  let best = -1;
  let bestD = reach * reach;
  for (let i = 0; i < drawing.n; i++) {
    const dx = drawing.positions[2 * i] - x;
    const dy = drawing.positions[2 * i + 1] - y;
    const d = dx * dx + dy * dy;
    if (d <= bestD && drawing.colors[4 * i + 3] > 0) {
      bestD = d;
      best = i;
    }
  }
  return best;
}

/** A view's gatherer of one element's tiles for `genes` ("" every gene), through the page's cache. */
export function pointTilesOf({ transport, version, system }: LayerSource, info: PointsInfo, genes: string[]): PointTileSet {
  const chosen = genes.join(',');
  return new PointTileSet(info, t => {
    const key = `${info.key}/${chosen}/${addressKey(t)}`;
    const reply = pointTileCache.get(key, () =>
      transport.request('points_tile', { version, element: info.element, key: info.key, level: t.level, x: t.x, y: t.y, genes: chosen, coordinate_system: system })
    );
    // the sample standing in for a whole index the server dropped is not the tile its key names: not kept
    return reply.then(r => {
      if (r.data.partial && !info.partial) {
        pointTileCache.drop(key);
      }
      return r;
    });
  });
}
