/**
 * The image: its overview below, then the tiles of finer pyramid levels (tiles.ts), coarsest
 * first. Stock BitmapLayers on both tiers (a tile is one textured quad).
 */

import type { Layer } from '@deck.gl/core';

import type { DeckScene } from './scene';
import { worldBitmap } from './shared';

export function imageLayers(scene: DeckScene): Layer[] {
  const layers: Layer[] = [];
  if (!scene.image || !scene.imageVisible) {
    return layers;
  }
  layers.push(worldBitmap('image', scene.image, { visible: !scene.imageCovered, textureParameters: { minFilter: 'nearest', magFilter: 'nearest' } }));
  for (const tile of scene.tiles) {
    layers.push(
      worldBitmap(`image-tile-${tile.id}`, tile, {
        textureParameters: { minFilter: 'linear', magFilter: 'nearest', addressModeU: 'clamp-to-edge', addressModeV: 'clamp-to-edge' }
      })
    );
  }
  return layers;
}
