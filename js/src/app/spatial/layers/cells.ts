/**
 * The cells' fills, one factory a tier (index.ts picks).
 *
 * GPU tier: deck.gl's stock, instanced layers fed binary attributes (one typed array per
 * attribute, no object per cell), picked on the GPU. Every cell is one instance of
 * ScatterplotLayer, so a frame's cost is the GPU's, not a loop in JS; the polygons of the cells
 * near the view (once big enough to show as shapes) are a SolidPolygonLayer.
 *
 * Software tier: under SwiftShader each instance costs its vertex shader on the CPU, so many
 * cells are one raster made on the CPU (celllod.ts), and few are non-instanced disc quads
 * (disclayer.ts) or polygons.
 */

import type { Layer } from '@deck.gl/core';
import { ScatterplotLayer, SolidPolygonLayer } from '@deck.gl/layers';

import { discVertices } from '../geometry';
import { OUTLINED_FILL_OPACITY } from '../raster';
import { CellDiscLayer, discData } from './disclayer';
import type { CellLayerData, DeckScene, GpuCells } from './scene';
import { once, worldBitmap } from './shared';

/** The layer ids whose pick index is the cell's own index (points) or a polygon's (mapped through `ids`). */
export const GPU_POINTS = 'cells-gpu-points';
export const GPU_POLYGONS = 'cells-gpu-polygons';

/** The GPU tier: polygons near the view when zoomed in to shapes, else every cell as a disc. */
export function gpuCellLayers(scene: DeckScene): Layer[] {
  const cells = scene.gpu;
  if (!cells) {
    return [];
  }
  const shapes = scene.cells;
  if (shapes?.polygons && scene.cellMode !== 'points') {
    return [polygonFills(GPU_POLYGONS, scene, shapes, true)];
  }
  return [gpuDiscs(scene, cells)];
}

function gpuDiscs(scene: DeckScene, cells: GpuCells): Layer {
  const sized = cells.radii !== null || cells.cellRadius > 0;
  return new ScatterplotLayer({
    id: GPU_POINTS,
    data: once(cells, 'points', () => ({
      length: cells.n,
      attributes: {
        getPosition: { value: cells.positions, size: 2 },
        getFillColor: { value: cells.colors, size: 4, normalized: true },
        getLineColor: { value: cells.lines, size: 4, normalized: true },
        ...(cells.radii ? { getRadius: { value: cells.radii, size: 1 } } : {})
      }
    })) as never,
    pickable: true,
    radiusUnits: sized ? 'common' : 'pixels',
    ...(cells.radii ? {} : { getRadius: sized ? cells.cellRadius : scene.radius }),
    // a cell smaller than a device pixel still shows, as the software tier's raster shows it
    radiusMinPixels: 0.5,
    stroked: scene.outline && !sized,
    lineWidthUnits: 'pixels',
    getLineWidth: 1,
    opacity: scene.cellsOpacity,
    updateTriggers: { getRadius: [scene.radius, cells.cellRadius] }
  }) as Layer;
}

/** The software tier: the cells' raster, or the geometry of those near the view. */
export function softwareCellLayers(scene: DeckScene): Layer[] {
  const cells = scene.cells;
  if (scene.raster) {
    return [
      worldBitmap('cells-raster', scene.raster, {
        opacity: scene.cellsOpacity,
        // settled, the raster maps pixel to pixel; while zooming, nearest keeps cells sharp
        textureParameters: { minFilter: 'linear', magFilter: 'nearest' }
      })
    ];
  }
  if (!cells) {
    return [];
  }
  if (cells.polygons && scene.cellMode !== 'points') {
    return [polygonFills('cell-polygons', scene, cells, false)];
  }
  const radius = cells.radii ? 0 : scene.radius;
  const v = scene.colorVersion;
  return [
    new CellDiscLayer({
      id: 'cells',
      data: once(cells, `discs:${radius}`, () => discData(discVertices(cells.n, cells.positions, cells.radii, radius, cells.colors, cells.lines))) as never,
      radiusUnits: cells.radii ? 'common' : 'pixels',
      stroked: scene.outline,
      opacity: scene.cellsOpacity,
      updateTriggers: { getFillColor: v, getLineColor: v, getPosition: v, getRadius: [v, radius] }
    })
  ];
}

/** Filled polygons (faint when outlined: outlines.ts draws their edges over them). */
function polygonFills(id: string, scene: DeckScene, cells: CellLayerData, pickable: boolean): Layer {
  const p = cells.polygons!;
  return new SolidPolygonLayer({
    id,
    data: once(cells, 'polygons', () => ({
      length: cells.n,
      startIndices: p.starts,
      attributes: {
        getPolygon: { value: p.vertices, size: 2 },
        getFillColor: { value: p.fills, size: 4, normalized: true }
      }
    })) as never,
    _normalize: false,
    positionFormat: 'XY',
    ...(pickable ? { pickable: true } : { updateTriggers: { getFillColor: scene.colorVersion, getPolygon: scene.colorVersion } }),
    opacity: scene.cellsOpacity * (scene.cellMode === 'outlined' ? OUTLINED_FILL_OPACITY : 1)
  }) as Layer;
}
