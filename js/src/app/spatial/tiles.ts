/**
 * The image as a tile grid over its pyramid: the level a zoom needs is chosen from the
 * `channels` reply's `levels`, the tiles of that level on screen are asked for together, a
 * request each (`image_tile`, each a chunk's worth of uint8 planes, one per channel), kept in an LRU
 * cache, and drawn over the overview; while a tile loads, cached tiles of coarser levels
 * stand in for it. Tiles keep their raw planes, so a channel's toggle, color or contrast
 * change recolors them here (composite) without asking the service again. Tiles that leave
 * the view before their request is sent are never asked for; replies that arrive for tiles
 * no longer on screen are cached, not drawn.
 *
 * Pure logic (no DOM, no WebGL): the stage turns each drawn tile's RGBA into a bitmap layer,
 * the Canvas 2D drawing and the exports draw it over the overview.
 */

import { tileCache } from './cellstore';
import { Lru } from '../shared/lru';
import { DETAIL_AT, levelFor, pixelsPerUnit } from './levels';
import { composite, type ChannelState } from './channels';
import type { Region } from './camera';
import { splitReply } from '../shared/buffers';
import type { Transport } from '../shared/transport';
import type { Bounds, ImageLevel } from '../shared/types';

/**
 * Tile requests on their way at once: a view's tiles (the level choice keeps them near 12) all
 * go out together, so they come back together and are drawn in one frame; the bound keeps a
 * pan across many tiles from flooding the service.
 */
export const CONCURRENCY = 16;
/**
 * How long the first tile of a burst waits for the rest of the view's tiles before it is drawn
 * alone (ms). Each draw is a whole frame of the scene, and under software WebGL the page's
 * main thread waits for it (0.3 to 1 s at load 8): a frame per arrival delays the last tile.
 */
export const BURST_MS = 150;
/** Tiles kept (raw planes and colored RGBA): 96 tiles of 1,024² × 3 channels is ~700 MB at worst, 512² tiles a quarter. */
export const CACHE_TILES = 96;
/** Tiles on screen beyond which a level is not drawn (a guard: the level choice keeps it near 12). */
export const MAX_VISIBLE = 64;

export { DETAIL_AT, levelFor, pixelsPerUnit };

/** One tile of one level: which, and where it sits in the figure's coordinate system. */
export type TileRef = { level: number; x: number; y: number; key: string; bounds: Bounds };

/** A tile as it arrived: its planes (one per channel, `width`×`height`) and, once drawn, its RGBA. */
export type Tile = TileRef & {
  width: number;
  height: number;
  planes: Uint8Array[];
  /** The planes composited in the channels' colors of `colorVersion` (made when first drawn). */
  rgba: Uint8ClampedArray | null;
  colorVersion: number;
};

export function tileKey(level: number, x: number, y: number): string {
  return `${level}/${x}/${y}`;
}

/** The tiles of level `index` that `region` shows, row by row (none when it misses the level). */
export function tilesIn(region: Region, levels: ImageLevel[], index: number): TileRef[] {
  const lv = levels[index];
  const [bx0, by0, bx1, by1] = lv.bounds;
  const ux = (bx1 - bx0) / lv.width;
  const uy = (by1 - by0) / lv.height;
  if (!(ux > 0 && uy > 0)) {
    return [];
  }
  const cols = Math.ceil(lv.width / lv.tile);
  const rows = Math.ceil(lv.height / lv.tile);
  const tx0 = Math.max(0, Math.floor((region[0] - bx0) / ux / lv.tile));
  const tx1 = Math.min(cols - 1, Math.ceil((region[2] - bx0) / ux / lv.tile) - 1); // a right edge on a tile's left: not that tile
  const ty0 = Math.max(0, Math.floor((region[1] - by0) / uy / lv.tile));
  const ty1 = Math.min(rows - 1, Math.ceil((region[3] - by0) / uy / lv.tile) - 1);
  const out: TileRef[] = [];
  for (let y = ty0; y <= ty1; y++) {
    for (let x = tx0; x <= tx1; x++) {
      const px0 = x * lv.tile;
      const py0 = y * lv.tile;
      const px1 = Math.min(lv.width, px0 + lv.tile);
      const py1 = Math.min(lv.height, py0 + lv.tile);
      out.push({ level: index, x, y, key: tileKey(index, x, y), bounds: [bx0 + px0 * ux, by0 + py0 * uy, bx0 + px1 * ux, by0 + py1 * uy] });
    }
  }
  return out;
}

function overlaps(a: Bounds, b: Bounds): boolean {
  return a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
}

/** What the grid draws now: stand-ins of coarser levels first (below), then the wanted level's tiles. */
export type TileFrame = {
  /** The level wanted at this zoom, or -1 when the overview is sharp enough. */
  level: number;
  tiles: Tile[];
  /** Whether every wanted tile is among `tiles` (nothing left to load). */
  complete: boolean;
};

/**
 * The tiles of one figure's image: which are wanted at a view, asking for the missing ones
 * (at most CONCURRENCY on their way), caching what arrives, and coloring what is drawn.
 */
export class TileGrid {
  readonly cache = new Lru<Tile>({ maxEntries: CACHE_TILES });
  /** The tiles wanted at the last update, in the order they are drawn. */
  private wanted: TileRef[] = [];
  private level = -1;
  private queue: TileRef[] = [];
  private readonly inFlight = new Set<string>();
  private channels: ChannelState[] = [];
  private colorVersion = 0;
  private readonly overviewPerUnit: number;

  constructor(
    private readonly transport: Transport,
    private readonly version: number | string,
    private readonly figure: string,
    readonly levels: ImageLevel[],
    overview: { width: number; bounds: Bounds },
    /** Called when a tile arrives that is on screen: the stage asks for `frame()` again. */
    private readonly onTile: () => void,
    private readonly onError: (message: string) => void = () => undefined,
    /** The canvas reply's `image_key`: tiles are then shared page-wide with every grid of that image. */
    private readonly imageKey?: string
  ) {
    this.overviewPerUnit = pixelsPerUnit(overview);
  }

  /** The channels' colors and contrast changed (or were first known): recolor on next draw. */
  setChannels(channels: ChannelState[]): void {
    this.channels = channels;
    this.colorVersion++;
  }

  /**
   * The view shows `region` at `screenPerUnit` device pixels per unit: choose the level, ask
   * for its missing tiles on screen (dropping queued ones no longer on screen). Returns
   * whether the wanted tiles changed.
   */
  update(region: Region, screenPerUnit: number): boolean {
    const before = this.wanted.map(t => t.key).join(' ');
    const finest = this.levels.length ? levelFor(this.levels, screenPerUnit) : -1;
    // the overview is drawn below at all zooms: tiles only where it would be blurred
    const needed = finest >= 0 && screenPerUnit / this.overviewPerUnit > DETAIL_AT && pixelsPerUnit(this.levels[finest]) > this.overviewPerUnit * 1.01;
    const refs = needed ? tilesIn(region, this.levels, finest) : [];
    this.level = needed && refs.length <= MAX_VISIBLE ? finest : -1;
    this.wanted = this.level >= 0 ? refs : [];
    const keys = new Set(this.wanted.map(t => t.key));
    this.queue = this.queue.filter(t => keys.has(t.key));
    for (const ref of this.wanted) {
      if (!this.cache.has(ref.key) && !this.inFlight.has(ref.key) && !this.queue.some(q => q.key === ref.key)) {
        this.queue.push(ref);
      }
    }
    this.pump();
    return this.wanted.map(t => t.key).join(' ') !== before;
  }

  /**
   * Stop asking (the figure left the screen): the queued requests are dropped, those on their
   * way arrive into the cache. The next `update` asks again for what its view lacks.
   */
  hold(): void {
    this.queue = [];
  }

  /** Whether tiles are being asked for or waiting to be. */
  get loading(): boolean {
    return this.queue.length > 0 || this.inFlight.size > 0;
  }

  /** Send queued requests while fewer than CONCURRENCY are on their way. */
  private pump(): void {
    while (this.inFlight.size < CONCURRENCY && this.queue.length) {
      const ref = this.queue.shift()!;
      this.inFlight.add(ref.key);
      void this.fetch(ref);
    }
  }

  private async fetch(ref: TileRef): Promise<void> {
    let sentNext = false;
    try {
      const ask = () =>
        this.transport.request('image_tile', {
          version: this.version,
          figure: this.figure,
          level: ref.level,
          x: ref.x,
          y: ref.y,
          ranges: this.channels.map(c => `${c.range[0]},${c.range[1]}`).join(';')
        });
      const reply = this.imageKey ? await tileCache.get(`${this.imageKey}/${ref.key}`, ask) : await ask();
      // the next request goes out before this tile is unpacked and drawn: the service works
      // while the page colors and uploads (the page is the slow side under software WebGL)
      this.inFlight.delete(ref.key);
      this.pump();
      sentNext = true;
      const { width, height, bounds } = reply.data;
      const { planes } = splitReply('image_tile', reply.data, reply.buffers); // one width × height plane a channel
      this.cache.set(ref.key, { ...ref, bounds, width, height, planes, rgba: null, colorVersion: -1 });
      if (this.wanted.some(t => t.key === ref.key)) {
        this.tileArrived();
      }
    } catch (err) {
      this.onError((err as Error).message);
    } finally {
      if (!sentNext) {
        this.inFlight.delete(ref.key);
        this.pump();
      }
    }
  }

  private arrival: ReturnType<typeof setTimeout> | null = null;

  /**
   * Tiles arriving together are drawn together: one `onTile` (one new frame of layers and one
   * draw) per burst, not one per tile (each draw costs a whole frame under software WebGL).
   * A burst ends when every wanted tile is here, or BURST_MS after its first tile.
   */
  private tileArrived(): void {
    const all = this.wanted.every(t => this.cache.has(t.key));
    if (this.arrival && !all) {
      return;
    }
    if (this.arrival) {
      clearTimeout(this.arrival);
    }
    this.arrival = setTimeout(
      () => {
        this.arrival = null;
        this.onTile();
      },
      all ? 0 : BURST_MS
    );
  }

  /** What to draw: for each wanted tile not yet here, the cached coarser tiles over it; then the wanted tiles here. */
  frame(): TileFrame {
    const here: Tile[] = [];
    const standIns = new Map<string, Tile>();
    for (const ref of this.wanted) {
      const tile = this.cache.get(ref.key);
      if (tile) {
        here.push(tile);
        continue;
      }
      for (let level = ref.level + 1; level < this.levels.length; level++) {
        const coarse = tilesIn(ref.bounds, this.levels, level)
          .map(r => this.cache.peek(r.key))
          .filter((t): t is Tile => !!t && overlaps(t.bounds, ref.bounds));
        if (coarse.length) {
          coarse.forEach(t => standIns.set(t.key, t));
          break;
        }
      }
    }
    // coarsest stand-ins first, so finer ones draw over them
    const below = [...standIns.values()].sort((a, b) => b.level - a.level);
    const tiles = [...below, ...here].map(t => this.colored(t));
    return { level: this.level, tiles, complete: here.length === this.wanted.length };
  }

  /** `tile` with its RGBA in the current channels' colors (recomposited only after a change). */
  private colored(tile: Tile): Tile {
    if (tile.colorVersion !== this.colorVersion || !tile.rgba) {
      tile.rgba = composite(tile.planes, this.channels, tile.width, tile.height);
      tile.colorVersion = this.colorVersion;
    }
    return tile;
  }
}
