/**
 * The stage's layers: one factory per data kind, each its own file, and the one place where a
 * render tier picks its factories. Why one table: a new kind (or a tier's new way of drawing one)
 * is a row here and a file beside, and the stage (deck.ts) remakes only the kinds that changed,
 * keeping the others' layer instances (deck then leaves their buffers as they are), as vitessce's
 * Spatial view keeps one layer per kind and rebuilds a kind on its own update.
 *
 * Layers know nothing of the stage: they turn a scene (scene.ts) into deck.gl layers.
 */

import type { Layer } from '@deck.gl/core';

import { gpuCellLayers, softwareCellLayers } from './cells';
import { imageLayers } from './images';
import { labelLayers } from './labels';
import { gpuOutlineLayers, gpuShapeLayers, softwareOutlineLayers, softwareShapeLayers } from './outlines';
import { gpuPointLayers, softwarePointLayers } from './points';
import type { DeckScene, LayerContext, Tier } from './scene';
import { selectionLayers } from './selection';

export { GPU_POINTS, GPU_POLYGONS } from './cells';
export type * from './scene';

/** The kinds, bottom to top: the order they are drawn in. */
export const LAYER_KINDS = ['images', 'cells', 'outlines', 'shapes', 'selection', 'labels', 'points'] as const;
export type LayerKind = (typeof LAYER_KINDS)[number];

type Factory = (scene: DeckScene, ctx: LayerContext) => Layer[];

/** Each kind's factory on each tier. */
const FACTORIES: Record<LayerKind, Record<Tier, Factory>> = {
  images: { gpu: imageLayers, software: imageLayers },
  cells: { gpu: gpuCellLayers, software: softwareCellLayers },
  outlines: { gpu: gpuOutlineLayers, software: softwareOutlineLayers },
  shapes: { gpu: gpuShapeLayers, software: softwareShapeLayers },
  selection: { gpu: selectionLayers, software: selectionLayers },
  labels: { gpu: labelLayers, software: labelLayers },
  points: { gpu: gpuPointLayers, software: softwarePointLayers }
};

/** The kinds the cells' toggle hides together. */
const OF_CELLS: ReadonlySet<LayerKind> = new Set(['cells', 'outlines', 'selection']);

/** The layers of one `kind` for `scene`, by the scene's tier (software when unsaid). */
export function layersOf(kind: LayerKind, scene: DeckScene, ctx: LayerContext): Layer[] {
  if (OF_CELLS.has(kind) && !scene.cellsVisible) {
    return [];
  }
  return FACTORIES[kind][scene.tier ?? 'software'](scene, ctx);
}
