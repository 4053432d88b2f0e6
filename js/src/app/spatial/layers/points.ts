/**
 * The transcripts layer: the points of the tiles in view (pointtiles.ts), one disc each, in the
 * colour of its gene, drawn over the cells, one factory a tier (index.ts picks). Loaded with deck.ts.
 *
 * GPU tier: deck.gl's stock ScatterplotLayer fed binary attributes (an instance a point).
 * Software tier: the same discs as the cells' non-instanced quads (disclayer.ts), since under
 * SwiftShader each instance costs its vertex shader on the CPU.
 */

import type { Layer } from '@deck.gl/core';
import { ScatterplotLayer } from '@deck.gl/layers';

import { CellDiscLayer, discData } from './disclayer';
import { discVertices } from '../geometry';
import type { PointsDrawing } from '../pointtiles';
import type { DeckScene } from './scene';

export const POINTS_LAYER = 'transcripts';

/** Each drawing's software-tier quads, made once (deck compares `data` by identity). */
const quads = new WeakMap<PointsDrawing, { radius: number; data: object }>();

function discsOf(drawing: PointsDrawing, radius: number): object {
  const found = quads.get(drawing);
  if (found && found.radius === radius) {
    return found.data;
  }
  const data = discData(discVertices(drawing.n, drawing.positions, null, radius, drawing.colors, drawing.colors));
  quads.set(drawing, { radius, data });
  return data;
}

/** The GPU tier: a stock ScatterplotLayer over the drawing's arrays (an instance a point). */
export function gpuPointLayers(scene: DeckScene): Layer[] {
  const points = scene.points;
  if (!points || points.drawing.n === 0) {
    return [];
  }
  const { drawing, radius, version } = points;
  return [
    new ScatterplotLayer({
      id: POINTS_LAYER,
      data: {
        length: drawing.n,
        attributes: {
          getPosition: { value: drawing.positions, size: 2 },
          getFillColor: { value: drawing.colors, size: 4, normalized: true }
        }
      } as never,
      radiusUnits: 'pixels',
      getRadius: radius,
      stroked: false,
      filled: true,
      pickable: false,
      updateTriggers: { getPosition: version, getFillColor: version }
    })
  ];
}

/** The software tier: the same discs as non-instanced quads. */
export function softwarePointLayers(scene: DeckScene): Layer[] {
  const points = scene.points;
  if (!points || points.drawing.n === 0) {
    return [];
  }
  const { drawing, radius, version } = points;
  return [new CellDiscLayer({ id: POINTS_LAYER, data: discsOf(drawing, radius) as never, radiusUnits: 'pixels', stroked: false, updateTriggers: { getPosition: [version, radius] } })];
}
