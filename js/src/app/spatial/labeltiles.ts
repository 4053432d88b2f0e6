/**
 * Segmentation masks by tile: which tiles of a labels element a view needs, asked for once and
 * kept, ready to draw as bitmaps (labellayer.ts).
 *
 * The `labels` reply lists the element's pyramid (as the `channels` reply's `levels`); the level
 * a zoom needs and the tiles on screen are chosen as the image's are (tiles.ts). A tile comes as
 * RGBA already coloured by the server (labels.py: each id its own colour, filled or outlined),
 * so nothing is composited here; while a tile is on its way, held tiles of coarser levels under
 * it stand in, so a zoom never shows a hole where the mask was.
 */

import { splitReply } from '../shared/buffers';
import type { Reply } from '../shared/transport';
import type { Bounds, ImageLevel, LabelsTileData } from '../shared/types';
import { MAX_VISIBLE, levelFor, tilesIn, type TileRef } from './tiles';
import { Lru } from '../shared/lru';
import type { Region } from './camera';
import type { LayerSource } from './layersource';

/** Label tiles a page keeps per element and style (RGBA 512² is 1 MiB: 64 MiB at most). */
export const LABEL_CACHE_TILES = 64;

/** How a labels layer draws: a translucent fill with outlines, or outlines alone. */
export type LabelStyle = 'fill' | 'outline';

/** A tile as drawn: its RGBA (`width` x `height`, rows top first) over `bounds`. */
export type LabelTile = { key: string; level: number; width: number; height: number; bounds: Bounds; rgba: Uint8ClampedArray };

/** A `labels_tile` reply as a tile to draw. */
export function decodeLabelTile(reply: Reply<LabelsTileData>): LabelTile {
  const data = reply.data;
  const { rgba } = splitReply('labels_tile', data, reply.buffers);
  const pixels = new Uint8ClampedArray(rgba.buffer, rgba.byteOffset, rgba.byteLength);
  return { key: `${data.level}/${data.x}/${data.y}`, level: data.level, width: data.width, height: data.height, bounds: data.bounds, rgba: pixels };
}

/** What a view draws: coarser stand-ins first (below), then the wanted level's tiles held. */
export function labelFrame(levels: ImageLevel[], region: Region, screenPerUnit: number, held: (key: string) => LabelTile | undefined): { want: TileRef[]; draw: LabelTile[] } {
  if (!levels.length) {
    return { want: [], draw: [] };
  }
  const want = tilesIn(region, levels, levelFor(levels, screenPerUnit));
  if (want.length > MAX_VISIBLE) {
    return { want: [], draw: [] };
  }
  const draw: LabelTile[] = [];
  const standIns = new Map<string, LabelTile>();
  for (const ref of want) {
    const found = held(ref.key);
    if (found) {
      draw.push(found);
      continue;
    }
    for (let coarser = ref.level + 1; coarser < levels.length; coarser++) {
      const under = tilesIn([ref.bounds[0], ref.bounds[1], ref.bounds[2], ref.bounds[3]], levels, coarser).map(t => held(t.key));
      if (under.length && under.every(t => t !== undefined)) {
        under.forEach(t => standIns.set((t as LabelTile).key, t as LabelTile));
        break;
      }
    }
  }
  return { want: want.filter(ref => !held(ref.key)), draw: [...standIns.values(), ...draw] };
}

/** One labels element of one version in one style: its levels once, its tiles as asked for. */
export class LabelTiles {
  private readonly cache = new Lru<LabelTile>({ maxEntries: LABEL_CACHE_TILES });
  private readonly asked = new Set<string>();
  levels: ImageLevel[] = [];

  constructor(
    private readonly source: LayerSource,
    readonly element: string,
    readonly style: LabelStyle,
    private readonly changed: () => void
  ) {}

  /** The element's pyramid (the `labels` reply): nothing is drawn before it. */
  async open(): Promise<void> {
    const { transport, version, system } = this.source;
    const reply = await transport.request('labels', { version, element: this.element, coordinate_system: system });
    this.levels = reply.data.levels;
  }

  /** The tiles to draw over `region` now; the missing ones are asked for, and `changed` called as each arrives. */
  frame(region: Region, screenPerUnit: number): LabelTile[] {
    const { want, draw } = labelFrame(this.levels, region, screenPerUnit, key => this.cache.peek(key));
    for (const ref of want) {
      if (!this.asked.has(ref.key)) {
        this.asked.add(ref.key);
        void this.load(ref);
      }
    }
    return draw;
  }

  private async load(ref: TileRef): Promise<void> {
    try {
      const { transport, version, system } = this.source;
      const params = { version, element: this.element, level: ref.level, x: ref.x, y: ref.y, style: this.style, coordinate_system: system };
      this.cache.set(ref.key, decodeLabelTile(await transport.request('labels_tile', params)));
      this.changed();
    } finally {
      this.asked.delete(ref.key);
    }
  }
}
