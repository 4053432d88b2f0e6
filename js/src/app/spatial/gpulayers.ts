/**
 * The GPU tier's cell layers: deck.gl's stock, instanced layers fed binary attributes (one
 * typed array per attribute, no object per cell), picked on the GPU. Every cell is one
 * instance of ScatterplotLayer, so a frame's cost is the GPU's, not a loop in JS; polygons
 * (the cells near the view, once big enough to show as shapes) are a SolidPolygonLayer and,
 * outlined, a PathLayer. Loaded with deck.ts, only when a figure draws with WebGL.
 */

import type { Layer } from '@deck.gl/core';
import { PathLayer, ScatterplotLayer, SolidPolygonLayer } from '@deck.gl/layers';

import type { CellLayerData, PolygonLayerData } from './celldata';
import { outlineColors, ringsClosed } from './geometry';
import { OUTLINED_FILL_OPACITY, type CellMode } from './raster';

/** Every cell of a figure in storage order (cell i is instance i, so a pick is the cell's index). */
export type GpuCells = {
  n: number;
  /** x, y per cell (NaN-free: a cell without a position is transparent at 0, 0). */
  positions: Float32Array;
  /** RGBA bytes per cell (alpha 0: hidden). */
  colors: Uint8Array;
  /** RGBA bytes per cell of the disc's outline (transparent where the cell is hidden). */
  lines: Uint8Array;
  /** Circles' radii in data units (Visium spots), else null. */
  radii: Float32Array | null;
  /** Polygon cells drawn as points: a disc of this radius in data units (half a typical cell), else 0. */
  cellRadius: number;
  /** The coloring these colors are of (deck re-uploads the colors when it changes). */
  version: number;
};

/** The layer ids whose pick index is the cell's own index. */
export const GPU_POINTS = 'cells-gpu-points';
export const GPU_POLYGONS = 'cells-gpu-polygons';

export type GpuLayerProps = {
  cells: GpuCells;
  /** The polygons near the view (with `ids`: which cell each is), when cells show as shapes. */
  shapes: CellLayerData | null;
  cellMode: CellMode;
  /** Discs' radius in CSS px for cells without a size (points). */
  radius: number;
  outline: boolean;
  opacity: number;
};

/** The cells as stock layers: polygons near the view when zoomed in to shapes, else every cell as a disc. */
export function gpuCellLayers(p: GpuLayerProps): Layer[] {
  const polygons = p.shapes?.polygons;
  if (polygons && p.cellMode !== 'points') {
    return polygonLayers(p, p.shapes!, polygons);
  }
  const cells = p.cells;
  const sized = cells.radii !== null || cells.cellRadius > 0;
  return [
    new ScatterplotLayer({
      id: GPU_POINTS,
      data: binary(cells, 'points', () => ({
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
      ...(cells.radii ? {} : { getRadius: sized ? cells.cellRadius : p.radius }),
      // a cell smaller than a device pixel still shows, as the software tier's raster shows it
      radiusMinPixels: 0.5,
      stroked: p.outline && !sized,
      lineWidthUnits: 'pixels',
      getLineWidth: 1,
      opacity: p.opacity,
      updateTriggers: { getRadius: [p.radius, cells.cellRadius] }
    }) as Layer
  ];
}

/** Filled polygons (faint when outlined) and their outlines as closed paths of 1 CSS px. */
function polygonLayers(p: GpuLayerProps, shapes: CellLayerData, polygons: PolygonLayerData): Layer[] {
  const layers: Layer[] = [
    new SolidPolygonLayer({
      id: GPU_POLYGONS,
      data: binary(shapes, 'polygons', () => ({
        length: shapes.n,
        startIndices: polygons.starts,
        attributes: {
          getPolygon: { value: polygons.vertices, size: 2 },
          getFillColor: { value: polygons.fills, size: 4, normalized: true }
        }
      })) as never,
      _normalize: false,
      positionFormat: 'XY',
      pickable: true,
      opacity: p.opacity * (p.cellMode === 'outlined' ? OUTLINED_FILL_OPACITY : 1)
    }) as Layer
  ];
  if (p.cellMode === 'outlined') {
    layers.push(
      new PathLayer({
        id: 'cells-gpu-outlines',
        data: binary(shapes, 'paths', () => ({
          length: shapes.n,
          startIndices: polygons.starts,
          attributes: {
            getPath: { value: polygons.vertices, size: 2 },
            getColor: { value: outlineColors(polygons.fills), size: 4, normalized: true }
          }
        })) as never,
        _pathType: ringsClosed(polygons) ? 'open' : 'loop',
        positionFormat: 'XY',
        widthUnits: 'pixels',
        getWidth: 1,
        opacity: p.opacity
      }) as Layer
    );
  }
  return layers;
}

/**
 * Each array set's binary data object, made once: deck compares `data` by identity, and a new
 * one would upload the arrays (and tessellate the polygons) again on every hover.
 */
const made = new WeakMap<object, Record<string, object>>();
function binary(owner: object, key: string, make: () => object): object {
  let slot = made.get(owner);
  if (!slot) {
    made.set(owner, (slot = {}));
  }
  return (slot[key] ??= make());
}
