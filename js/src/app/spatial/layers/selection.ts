/**
 * The hovered cell's ring, over the cells on both tiers (one instance: cheap anywhere). The
 * annotate veil (figures/selectionveil.ts) is not a deck layer: it is drawn the same way over
 * the tissue and the embedding beside it, which is not a deck view.
 */

import type { Layer } from '@deck.gl/core';
import { ScatterplotLayer } from '@deck.gl/layers';

import type { DeckScene } from './scene';

export function selectionLayers(scene: DeckScene): Layer[] {
  const hl = scene.highlight;
  if (!hl) {
    return [];
  }
  return [
    new ScatterplotLayer({
      id: 'cell-highlight',
      data: [hl],
      getPosition: (d: typeof hl) => d.position,
      getRadius: hl.radius ?? scene.radius + 1.5,
      radiusUnits: hl.radius === null ? 'pixels' : 'common',
      radiusMinPixels: 3,
      filled: true,
      getFillColor: [255, 255, 255, 110],
      stroked: true,
      lineWidthUnits: 'pixels',
      getLineWidth: 1.5,
      getLineColor: [0, 0, 0, 220]
    })
  ];
}
