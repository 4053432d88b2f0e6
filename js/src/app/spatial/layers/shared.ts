/**
 * What several layer factories share: a bitmap placed in data units, and binary data objects
 * made once per array set.
 */

import type { Layer } from '@deck.gl/core';
import { BitmapLayer } from '@deck.gl/layers';

/**
 * A bitmap over `bounds` (x0, y0, x1, y1 in data units). deck wants left, bottom, right, top,
 * and y grows downwards in this view: the flip is made here once for the image, its tiles, the
 * cells' raster and the labels' tiles.
 */
export function worldBitmap(
  id: string,
  bitmap: { source: HTMLCanvasElement | ImageData; bounds: [number, number, number, number] },
  props: { opacity?: number; visible?: boolean; textureParameters: Record<string, string> }
): Layer {
  const [x0, y0, x1, y1] = bitmap.bounds;
  return new BitmapLayer({ id, image: bitmap.source, bounds: [x0, y1, x1, y0], ...props });
}

/**
 * Each array set's binary data object, made once: deck compares `data` by identity, so a new
 * object (on a hover's re-render) would re-upload the arrays and re-tessellate the polygons.
 */
const made = new WeakMap<object, Record<string, object>>();
export function once(owner: object, key: string, make: () => object): object {
  let slot = made.get(owner);
  if (!slot) {
    made.set(owner, (slot = {}));
  }
  return (slot[key] ??= make());
}
