/**
 * The cells' outlines, drawn over their faint fills once the view is zoomed in far enough
 * for a cell to show as an outlined shape (cellModeAt), one factory a tier (index.ts picks).
 *
 * GPU tier: a stock PathLayer of closed paths, 1 CSS px wide. Software tier: one non-instanced
 * draw (outlinelayer.ts): GL lines one device pixel wide, or quads one CSS pixel wide on a
 * screen of 2 device pixels a CSS pixel (`wideLines`).
 *
 * Every other shapes element of the coordinate system (nucleus boundaries) is drawn the same
 * way, one layer per element in its own colour (`shapes`, shapetiles.ts gathers its rings).
 */

import type { Layer } from '@deck.gl/core';
import { PathLayer } from '@deck.gl/layers';

import { edgeQuads, outlineColors, ringsClosed } from '../geometry';
import { CellEdgeLayer, CellOutlineLayer, edgeData, outlineData } from './outlinelayer';
import type { ShapesDrawing } from '../shapetiles';
import type { CellLayerData, DeckScene, LayerContext } from './scene';
import { once } from './shared';

/** The polygons whose outlines show now, or null (points, or filled shapes). */
function outlined(scene: DeckScene): CellLayerData | null {
  const cells = scene.cells;
  return cells?.polygons && scene.cellMode === 'outlined' ? cells : null;
}

export function gpuOutlineLayers(scene: DeckScene): Layer[] {
  const shapes = scene.gpu ? outlined(scene) : null;
  if (!shapes) {
    return [];
  }
  const polygons = shapes.polygons!;
  return [
    new PathLayer({
      id: 'cells-gpu-outlines',
      data: once(shapes, 'paths', () => ({
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
      opacity: scene.cellsOpacity
    }) as Layer
  ];
}

export function softwareOutlineLayers(scene: DeckScene, ctx: LayerContext): Layer[] {
  const cells = scene.raster ? null : outlined(scene);
  if (!cells) {
    return [];
  }
  const p = cells.polygons!;
  const v = scene.colorVersion;
  const common = { id: 'cell-outlines', opacity: scene.cellsOpacity };
  if (ctx.wideLines) {
    const data = once(cells, 'edges', () => edgeData(edgeQuads(p.segments, p.segmentColors)));
    return [new CellEdgeLayer({ ...common, data: data as never, updateTriggers: { getColor: v, getStart: v } })];
  }
  const data = once(cells, 'outlines', () => outlineData(p.segments, p.segmentColors));
  return [new CellOutlineLayer({ ...common, data: data as never, updateTriggers: { getColor: v, getPosition: v } })];
}

/** Each shapes element's layer id: the element names it, so deck keeps its buffers while its rings stay. */
function shapesId(drawing: ShapesDrawing): string {
  return `shapes-${drawing.element}`;
}

/** The element's colour at each end of each edge (what the software tier's line list takes), made once per ring set. */
function edgeColors(drawing: ShapesDrawing): Uint8Array {
  const edges = drawing.rings.segments.length / 4;
  const colors = new Uint8Array(8 * edges);
  const [r, g, b] = drawing.color;
  for (let i = 0; i < 2 * edges; i++) {
    colors.set([r, g, b, 255], 4 * i);
  }
  return colors;
}

/** GPU tier: a stock PathLayer of closed rings a shapes element, 1 CSS px wide in its colour. */
export function gpuShapeLayers(scene: DeckScene): Layer[] {
  return (scene.shapeLayers ?? []).map(
    drawing =>
      new PathLayer({
        id: shapesId(drawing),
        data: once(drawing.rings, 'paths', () => ({
          length: drawing.rings.starts.length - 1,
          startIndices: drawing.rings.starts,
          attributes: { getPath: { value: drawing.rings.vertices, size: 2 } }
        })) as never,
        _pathType: 'loop',
        positionFormat: 'XY',
        widthUnits: 'pixels',
        getWidth: 1,
        getColor: [...drawing.color, 255],
        opacity: drawing.opacity,
        updateTriggers: { getColor: drawing.color.join(',') }
      }) as Layer
  );
}

/** Software tier: one non-instanced draw a shapes element (outlinelayer.ts), as the cells' outlines. */
export function softwareShapeLayers(scene: DeckScene, ctx: LayerContext): Layer[] {
  return (scene.shapeLayers ?? []).map(drawing => {
    const key = `${drawing.color.join(',')}`;
    const common = { id: shapesId(drawing), opacity: drawing.opacity };
    if (ctx.wideLines) {
      const data = once(drawing.rings, `edges ${key}`, () => edgeData(edgeQuads(drawing.rings.segments, edgeColors(drawing))));
      return new CellEdgeLayer({ ...common, data: data as never }) as Layer;
    }
    const data = once(drawing.rings, `lines ${key}`, () => outlineData(drawing.rings.segments, edgeColors(drawing)));
    return new CellOutlineLayer({ ...common, data: data as never }) as Layer;
  });
}
