/**
 * The labels layer: the segmentation mask's tiles in view (labeltiles.ts), each a bitmap of the
 * RGBA the server coloured, drawn over the cells and under the transcripts. Loaded with deck.ts.
 *
 * A stock deck.gl BitmapLayer per tile on both tiers: a tile is one textured quad, cheap under
 * software WebGL too; `nearest` magnification keeps a one-pixel outline crisp when zoomed in.
 */

import type { Layer } from '@deck.gl/core';

import type { LabelTile } from '../labeltiles';
import type { DeckScene } from './scene';
import { worldBitmap } from './shared';

export const LABELS_LAYER = 'labels';

/** Each tile's ImageData, made once (deck compares `image` by identity: a new one re-uploads the texture). */
const images = new WeakMap<LabelTile, ImageData>();

function imageOf(tile: LabelTile): ImageData {
  let found = images.get(tile);
  if (!found) {
    found = new ImageData(new Uint8ClampedArray(tile.rgba), tile.width, tile.height);
    images.set(tile, found);
  }
  return found;
}

/** The labels' layers, coarser stand-ins first (below), or none. */
export function labelLayers(scene: DeckScene): Layer[] {
  return (scene.labels ?? []).map(tile =>
    worldBitmap(`${LABELS_LAYER}-${tile.key}`, { source: imageOf(tile), bounds: tile.bounds }, {
      opacity: scene.labelsOpacity ?? 1,
      textureParameters: { minFilter: 'linear', magFilter: 'nearest', addressModeU: 'clamp-to-edge', addressModeV: 'clamp-to-edge' }
    })
  );
}
