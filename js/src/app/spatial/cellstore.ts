/**
 * What canvas figures are drawn from, fetched once per page and shared.
 *
 * A `canvas` reply carries a figure's own part: its settings and the names of what it draws. The
 * cells' positions and shapes belong to the element (`cells`, named by the reply's `cells_key`),
 * the image's overview to the image (`channels`, named by `image_key`), and the colours to the
 * stored column (`color_values`, named in `color_keys`); the keys name the
 * stored objects they were read from, so equal keys mean equal bytes, whichever figure,
 * version or transport asks. Each is fetched once and kept here, bounded by bytes: every
 * figure of a version, the same figure of another version that left the cells alone, and a
 * revisit all draw from one copy. Over REST the key is also in the URL, so the browser's
 * HTTP cache keeps it across page loads (the server answers `immutable`).
 */

import { composite } from './channels';
import { OutlineTileSet } from './outlinetiles';
import { overviewLevel } from './levels';
import { cellShapes, decodeCanvas, type CanvasData } from './raster';
import { splitReply } from '../shared/buffers';
import { Lru } from '../shared/lru';
import { measure, now } from '../shared/timing';
import type { Reply, Transport } from '../shared/transport';
import type { CanvasColor, CanvasPayload, CellOutlinesData, CellsData, ChannelsData, ImageTileData, Params } from '../shared/types';

/** Bytes of cell geometry kept in the page (a 100,000-cell tissue with outlines is about 20 MB). */
export const CELL_CACHE_BYTES = 256 * 1024 * 1024;
/** Bytes of image overviews kept in the page. */
export const IMAGE_CACHE_BYTES = 128 * 1024 * 1024;
/** Bytes of cell outline tiles kept in the page (a tile of ~2,048 demo cells is about 170 kB). */
export const OUTLINE_CACHE_BYTES = 64 * 1024 * 1024;
/** Bytes of image tiles' planes kept in the page (about 160 tiles of 512² × 3 channels). */
export const TILE_CACHE_BYTES = 128 * 1024 * 1024;

/**
 * Replies by content key, least recently used dropped once their buffers pass `maxBytes`
 * (the page's one LRU, shared/lru.ts). A pending request is shared: two figures asking at once
 * make one request; it counts for nothing until it arrives, and a failure is not kept.
 */
export class KeyedCache<T extends Reply<unknown>> {
  private readonly entries: Lru<{ reply: Promise<T>; bytes: number }>;
  /** Requests made (misses), for tests and measurements. */
  fetched = 0;

  constructor(readonly maxBytes: number) {
    this.entries = new Lru({ maxBytes, sizeOf: entry => entry.bytes, keepNewest: true });
  }

  get bytes(): number {
    return this.entries.bytes;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The reply kept under `key`, else `fetch()`'s (kept once it arrives; a failure is not kept). */
  get(key: string, fetch: () => Promise<T>): Promise<T> {
    const found = this.entries.get(key);
    if (found) {
      return found.reply;
    }
    this.fetched++;
    const entry = { reply: fetch(), bytes: 0 };
    this.entries.set(key, entry);
    entry.reply.then(
      reply => {
        if (this.entries.peek(key) === entry) {
          entry.bytes = reply.buffers.reduce((sum, b) => sum + b.byteLength, 0);
          this.entries.set(key, entry); // counted now it has a size, older replies dropped to fit
        }
      },
      () => {
        if (this.entries.peek(key) === entry) {
          this.entries.delete(key);
        }
      }
    );
    return entry.reply;
  }

  /** Forget the reply under `key` (one that must not be kept: it is not what its key names). */
  drop(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}

/** The page's caches, one for every figure and panel of either transport. */
export const cellCache = new KeyedCache<Reply<CellsData>>(CELL_CACHE_BYTES);
export const overviewCache = new KeyedCache<Reply<ChannelsData>>(IMAGE_CACHE_BYTES);
/**
 * Image tiles' raw planes by `<image_key>/<level>/<x>/<y>`: a tile's pixels follow from the image
 * and the overview's ranges, both named by the image key, so every figure and version showing
 * that image draws the tiles fetched once (each grid keeps its coloured copies apart).
 */
export const tileCache = new KeyedCache<Reply<ImageTileData>>(TILE_CACHE_BYTES);
/** A large tissue's outline tiles by `<cells key>/<column>/<row>` (outlinetiles.ts), shared like the cells. */
export const outlineCache = new KeyedCache<Reply<CellOutlinesData>>(OUTLINE_CACHE_BYTES);

/** Bytes of colour columns kept in the page, per transport (a million cells' float32 values are 4 MB). */
export const PAGE_COLOR_BYTES = 64 * 1024 * 1024;
/** Colour replies per transport (a panel's dataset): version numbers name versions of that dataset only. */
const colorCaches = new WeakMap<Transport, KeyedCache<Reply<CanvasColor>>>();

/** The page's colour cache of `transport` (made on first use), for tests and measurements. */
export function colorCacheOf(transport: Transport): KeyedCache<Reply<CanvasColor>> {
  let cache = colorCaches.get(transport);
  if (!cache) {
    cache = new KeyedCache<Reply<CanvasColor>>(PAGE_COLOR_BYTES);
    colorCaches.set(transport, cache);
  }
  return cache;
}

/**
 * A figure's cells coloured another way (`color_values`), asked once for every figure of a version
 * that draws the same cells. Why it may be shared: the colours follow from the version's table
 * (named with its cells by `cells_key`), the request's column or gene, and the version's saved
 * palettes; a figure's own settings count only for the column it is itself coloured by
 * (`ownColumn`), so then the figure is part of the key. A version asked by name (a branch, whose
 * top moves) or a figure without a cells key asks every time. A plain column the canvas reply
 * names (`colorKeys`, its `color_keys`) is asked under that name, which the server computed from
 * the stored column and the settings: every version and figure with the same name shares one
 * request, and over REST the name in the URL lets the browser keep the answer (`immutable`).
 */
export function sharedColorValues(
  transport: Transport,
  params: Params<'color_values'>,
  cellsKey: string | null | undefined,
  ownColumn: string | null,
  colorKeys?: Record<string, string>
): Promise<Reply<CanvasColor>> {
  const plain = params.column && !params.gene && (params.highlight ?? null) === null && (params.against ?? null) === null;
  const named = plain ? colorKeys?.[params.column!] : undefined;
  if (named) {
    // named by the stored column and settings: any version or figure with this name shares it
    return colorCacheOf(transport).get(named, () => transport.request('color_values', { ...params, key: named }));
  }
  const ask = () => transport.request('color_values', params);
  if (!cellsKey || typeof params.version !== 'number') {
    return ask();
  }
  const { version, figure, ...what } = params;
  const asked = params.column ?? params.gene ?? '';
  const own = ownColumn !== null && asked === ownColumn ? figure : '';
  const key = JSON.stringify([version, cellsKey, own, Object.entries(what).sort()]);
  return colorCacheOf(transport).get(key, ask);
}

/** A canvas figure ready to draw: its payload, its buffers as the views use them, its image's channels. */
export type LoadedCanvas = { payload: CanvasPayload; data: CanvasData; channels: Reply<ChannelsData> | null };

/**
 * A figure's image overview as channel planes, at pyramid `level` (the canvas reply's
 * `image.level`, the server's default overview until `loadCanvas` chose one for the view; null:
 * no level fits, the default read with a stride): kept under `key` (the canvas reply's
 * `image_key`) and the level when there is a key.
 */
export function figureChannels(
  transport: Transport,
  version: number | string,
  figure: string,
  key: string | undefined,
  level: number | null = null
): Promise<Reply<ChannelsData>> {
  const ask = () => transport.request('channels', { version, figure, ...(level !== null ? { level } : {}) });
  return key ? overviewCache.get(level !== null ? `${key}/${level}` : key, ask) : ask();
}

/**
 * Ask for a canvas figure (`canvas`: what it draws and the names of its parts), then what it
 * shares with others from the page's caches, fetched in parallel when missing: its cells, its
 * image overview, and its colour column (`sharedColorValues` under the reply's `color_keys`, as
 * the colour menu asks it, so a figure and a version colouring by the same stored column share
 * one request). The overview is blended here from the channel planes, as the channel controls
 * blend it later.
 */
export async function loadCanvas(transport: Transport, version: number | string, figure: string, screenWidth = 0): Promise<LoadedCanvas> {
  const reply = await transport.request('canvas', { version, figure });
  const payload = chooseOverview(reply.data, screenWidth);
  const key = payload.cells_key;
  if (!key) {
    return { payload, data: decodeCanvas(payload, reply.buffers), channels: null }; // everything in one reply
  }
  const column = payload.color.mode === 'none' ? null : payload.color.column;
  const [cells, channels, colors] = await Promise.all([
    cellCache.get(key, () => transport.request('cells', { version, figure, key })),
    payload.image ? figureChannels(transport, version, figure, payload.image_key, payload.image.level ?? null) : Promise.resolve(null),
    column ? sharedColorValues(transport, { version, figure, column }, key, column, payload.color_keys) : Promise.resolve(null)
  ]);
  if (cells.data.n_cells !== payload.n_cells) {
    throw new Error(`the cells reply has ${cells.data.n_cells} cells, the figure ${payload.n_cells}`);
  }
  const arrived = now();
  const shapes = cells.data.shapes;
  const geometry = cellGeometry(cells);
  const color = colors?.data ?? payload.color; // the description the values follow
  const values = colors ? splitReply('color_values', color, colors.buffers).values : null;
  const image = payload.image ? overviewRGBA(payload, channels) : null;
  const data = { x: geometry.x, y: geometry.y, value: values ?? null, image, shapes: cellShapes(payload.n_cells, geometry) };
  // the replies read into what the views draw (positions, colours, the overview blended): the page's part before the stage
  measure('sds:canvas-decode', arrived, now(), { n_cells: payload.n_cells });
  return { payload: { ...payload, shapes, color }, data, channels };
}

/**
 * The canvas payload with its image's overview at the level `screenWidth` device pixels need
 * (`overviewLevel`): `image.level` names it, `width` and `height` are its pixels (the `channels`
 * reply at that level). Unchanged when the server's default overview is the choice.
 */
function chooseOverview(payload: CanvasPayload, screenWidth: number): CanvasPayload {
  const image = payload.image;
  const level = image && payload.cells_key ? overviewLevel(image, payload.bounds, screenWidth) : null;
  if (!image || level === null) {
    return payload;
  }
  const { width, height } = image.levels![level];
  return { ...payload, image: { ...image, level, width, height } };
}

/** The code that stands for NaN in a quantized cells reply (no position, no shape): `NO_POSITION` in pieces.py. */
export const NO_POSITION = 65535;

/** A cells reply's geometry in data units, decoded once per reply (the reply is what the cache keeps). */
const decoded = new WeakMap<Reply<CellsData>, CellGeometry>();

/** x, y and the shapes' buffers as the views draw them (float32). */
export type CellGeometry = { x: Float32Array; y: Float32Array; starts?: Uint32Array; vertices?: Float32Array; radius?: Float32Array };

/**
 * A cells reply's x, y and radii in data units: a large tissue's come as uint16 codes of its
 * `quantum` (value = origin + code × step, NO_POSITION for NaN: half the bytes; x and y as
 * differences from the cell before, which compress), read back here once.
 */
export function cellGeometry(cells: Reply<CellsData>): CellGeometry {
  const kept = decoded.get(cells);
  if (kept) {
    return kept;
  }
  const split = splitReply('cells', cells.data, cells.buffers);
  const q = cells.data.quantum;
  const geometry: CellGeometry = q
    ? {
        ...split,
        x: fromCodes(split.x, q.x0, q.step, true),
        y: fromCodes(split.y, q.y0, q.step, true),
        radius: split.radius ? fromCodes(split.radius, 0, q.radius_step, false) : undefined
      }
    : (split as CellGeometry);
  decoded.set(cells, geometry);
  return geometry;
}

/** Codes read back to data units; `delta`: the buffer holds differences (x, y), summed modulo 2^16 first. */
function fromCodes(codes: Uint16Array | Float32Array, origin: number, step: number, delta: boolean): Float32Array {
  const out = new Float32Array(codes.length);
  let code = 0;
  for (let i = 0; i < codes.length; i++) {
    code = delta ? (code + codes[i]) & 0xffff : codes[i];
    out[i] = code === NO_POSITION ? NaN : origin + code * step;
  }
  return out;
}

/** The image as one RGBA picture blended from the overview's planes in their saved colors and limits. */
function overviewRGBA(payload: CanvasPayload, channels: Reply<ChannelsData> | null): Uint8ClampedArray {
  const image = payload.image!;
  if (!channels || channels.data.width !== image.width || channels.data.height !== image.height) {
    throw new Error('the image overview does not match the figure’s image');
  }
  const { planes } = splitReply('channels', channels.data, channels.buffers);
  return composite(planes, channels.data.channels, image.width, image.height);
}

/**
 * A view's gatherer of a large tissue's outline tiles (`payload.shapes.outlines`), each tile asked
 * once per page under its cells key; null when the outlines came with the cells.
 */
export function outlineTilesOf(
  transport: Transport,
  version: number | string,
  figure: string,
  payload: CanvasPayload
): OutlineTileSet | null {
  const grid = payload.shapes?.outlines;
  const key = payload.cells_key;
  if (!grid || !key) {
    return null;
  }
  return new OutlineTileSet(key, grid, payload.n_cells, (column, row) =>
    outlineCache.get(`${key}/${column}/${row}`, () => transport.request('cell_outlines', { version, figure, key, column, row }))
  );
}
