/**
 * Image detail on demand: the canvas reply carries one overview level of the image; once the
 * view is zoomed in past it (an overview pixel over more than DETAIL_AT screen pixels), the
 * region on screen is asked for again (`image_region`) from the finest pyramid level that
 * fits the screen, and drawn over the overview, which stays below while it loads.
 */

import { composite, type ChannelState } from './channels';
import type { Region } from './camera';
import { typed } from './raster';
import type { Transport } from './transport';
import type { Bounds } from './types';

/** Screen pixels per overview pixel beyond which detail is fetched. */
export const DETAIL_AT = 1.5;
/** The service's largest side of a region (MAX_IMAGE_SIDE). */
export const MAX_DETAIL_SIDE = 2048;

/** The overview image: its size in pixels and where it sits. */
export type Overview = { width: number; height: number; bounds: Bounds };

/** Screen pixels per overview pixel at `region` shown `screenWidth` px wide. */
export function magnification(region: Region, screenWidth: number, image: Overview): number {
  const pxPerUnit = screenWidth / Math.max(region[2] - region[0], 1e-12);
  const unitsPerImagePx = (image.bounds[2] - image.bounds[0]) / Math.max(image.width, 1);
  return pxPerUnit * unitsPerImagePx;
}

function overlaps(a: Bounds, b: Bounds): boolean {
  return a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
}

/** Whether `outer` holds all of `inner`. */
export function covers(outer: Bounds, inner: Bounds): boolean {
  return outer[0] <= inner[0] && outer[1] <= inner[1] && outer[2] >= inner[2] && outer[3] >= inner[3];
}

/** `region` clipped to `bounds` (null when they do not overlap). */
export function clip(region: Region, bounds: Bounds): Bounds | null {
  if (!overlaps(region, bounds)) {
    return null;
  }
  return [
    Math.max(region[0], bounds[0]),
    Math.max(region[1], bounds[1]),
    Math.min(region[2], bounds[2]),
    Math.min(region[3], bounds[3])
  ];
}

/**
 * What to ask for at `region` on a `screen` (device pixels): null when the overview is sharp
 * enough or the image is off screen; else the region grown by a quarter each way (small pans
 * need no new request), clipped to the image, and a pixel budget of the screen's larger side
 * times that growth, at most MAX_DETAIL_SIDE.
 */
export function detailWanted(region: Region, screen: [number, number], image: Overview): { region: Bounds; maxSide: number } | null {
  if (!(magnification(region, screen[0], image) > DETAIL_AT)) {
    return null;
  }
  const padX = (region[2] - region[0]) / 4;
  const padY = (region[3] - region[1]) / 4;
  const grown = clip([region[0] - padX, region[1] - padY, region[2] + padX, region[3] + padY], image.bounds);
  if (!grown) {
    return null;
  }
  const maxSide = Math.min(MAX_DETAIL_SIDE, Math.max(16, Math.ceil(Math.max(screen[0], screen[1]) * 1.5)));
  return { region: grown, maxSide };
}

/** A region's detail: its planes (kept, to recomposite when a channel changes) and where they sit. */
export type Detail = { width: number; height: number; bounds: Bounds; level: number; planes: Uint8Array[] };

/**
 * Fetches detail for the regions a view shows, one request at a time: a view that moves while
 * a reply is on its way asks again for where it is then; replies for older regions are dropped.
 */
export class DetailLoader {
  current: Detail | null = null;
  /** The request on its way: its region and zoom (screen px per unit), so moves inside it ask nothing new. */
  private inFlight: { region: Bounds; scale: number } | null = null;
  private token = 0;

  constructor(
    private readonly transport: Transport,
    private readonly version: number,
    private readonly figure: string,
    private readonly image: Overview,
    private readonly onDetail: (detail: Detail) => void,
    private readonly onError: (message: string) => void = () => undefined
  ) {}

  /** The view shows `region` on `screen` device pixels: fetch detail if it needs some it lacks. */
  async update(region: Region, screen: [number, number], channels: ChannelState[]): Promise<void> {
    const want = detailWanted(region, screen, this.image);
    const shown = clip(region, this.image.bounds);
    if (!want || !shown) {
      return;
    }
    const scale = screen[0] / Math.max(region[2] - region[0], 1e-12);
    if (this.current && covers(this.current.bounds, shown) && this.sharpEnough(this.current, scale)) {
      return;
    }
    if (this.inFlight && covers(this.inFlight.region, shown) && this.inFlight.scale * 1.25 >= scale) {
      return;
    }
    const token = ++this.token;
    this.inFlight = { region: want.region, scale };
    try {
      const reply = await this.transport.request('image_region', {
        version: this.version,
        figure: this.figure,
        region: want.region.map(v => +v.toPrecision(12)).join(','),
        max_side: want.maxSide,
        ranges: channels.map(c => `${c.range[0]},${c.range[1]}`).join(';')
      });
      if (token !== this.token) {
        return;
      }
      const { width, height, bounds, level } = reply.data;
      const planes = reply.buffers.slice(0, reply.data.channels).map(b => typed(b, Uint8ClampedArray) as unknown as Uint8Array);
      if (planes.length < reply.data.channels || planes.some(p => p.length < width * height)) {
        throw new Error(`The image_region reply has fewer pixels than ${width}×${height}.`);
      }
      this.current = { width, height, bounds, level, planes };
      this.onDetail(this.current);
    } catch (err) {
      if (token === this.token) {
        this.onError((err as Error).message);
      }
    } finally {
      if (token === this.token) {
        this.inFlight = null;
      }
    }
  }

  /** Whether `d` has a pixel per DETAIL_AT screen pixels at `scale` (or is the finest level there is). */
  private sharpEnough(d: Detail, scale: number): boolean {
    if (d.level === 0) {
      return true;
    }
    const pxPerUnit = d.width / Math.max(d.bounds[2] - d.bounds[0], 1e-12);
    return pxPerUnit * DETAIL_AT >= scale;
  }

  /** The detail's RGBA in the channels' current colors and contrast. */
  static rgba(d: Detail, channels: ChannelState[]): Uint8ClampedArray {
    return composite(d.planes, channels, d.width, d.height);
  }
}
