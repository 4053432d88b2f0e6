/**
 * The image on a stage: the overview the canvas reply sent (recomposited when channels change)
 * and the tiles of finer pyramid levels over it (tiles.ts), as the images layer takes them
 * (layers/images.ts). Also when the tiles a view change awaited are all drawn: measured as
 * `sds:tiles`, and named on the stage (`data-tile-level`, `data-tiles`).
 */

import type { ImageTileLayer } from './layers/scene';
import { rgbaCanvas, type CanvasData } from './raster';
import { measure } from './tier';
import type { TileFrame } from './tiles';
import type { CanvasPayload } from '../shared/types';

export class ImageDrawing {
  private source: HTMLCanvasElement | null = null;
  /** The image tiles drawn over the overview. */
  private tiles: ImageTileLayer[] = [];
  /** Since when (a view change) the tiles on screen are awaited. */
  private wait: number | null = null;
  private frame: TileFrame | null = null;

  constructor(
    private readonly payload: CanvasPayload,
    private readonly data: CanvasData,
    private readonly node: HTMLElement
  ) {}

  /** New pixels for the overview (RGBA of the payload's image size); false without an image. */
  setPixels(rgba: Uint8ClampedArray): boolean {
    const img = this.payload.image;
    if (!img) {
      return false;
    }
    this.source = rgbaCanvas(rgba, img.width, img.height); // new pixels, a new canvas: deck uploads a new texture
    return true;
  }

  /** The tiles of `frame` over the overview; `since` (a view change's time) starts a wait for them. */
  setTiles(frame: TileFrame, since?: number): void {
    if (since !== undefined && this.wait === null) {
      this.wait = since;
    }
    this.frame = frame;
    this.tiles = frame.tiles.map(tile => ({ id: tile.key, source: rgbaCanvas(tile.rgba!, tile.width, tile.height), bounds: tile.bounds }));
    this.node.dataset.tileWanted = String(frame.level);
  }

  /** After a frame at `t`: when the awaited tiles are all drawn, measure the wait and name the level. */
  drawn(t: number): void {
    const frame = this.frame;
    if (this.wait === null || !frame?.complete) {
      return;
    }
    const level = frame.level;
    const drawn = frame.tiles.filter(tile => tile.level === level).length;
    measure('sds:tiles', this.wait, t, { level, tiles: drawn, renderer: 'webgl' });
    this.wait = null;
    this.node.dataset.tileLevel = String(level);
    this.node.dataset.tiles = String(drawn);
  }

  /** The scene's image part: the overview (made from the reply's pixels on first use) and the tiles. */
  scene(): { image: { source: HTMLCanvasElement; bounds: [number, number, number, number] } | null; tiles: ImageTileLayer[]; imageCovered: boolean } {
    const img = this.payload.image;
    if (img && this.data.image && !this.source) {
      this.source = rgbaCanvas(this.data.image, img.width, img.height);
    }
    return {
      image: img && this.source ? { source: this.source, bounds: img.bounds } : null,
      tiles: this.tiles,
      // every wanted tile is here: they cover the view (tilesIn covers the region asked for)
      imageCovered: !!this.frame?.complete && this.frame.level >= 0 && this.tiles.length > 0
    };
  }
}
