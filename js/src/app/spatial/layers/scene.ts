/**
 * What the stage hands its layer factories: one plain description of everything drawn (the
 * scene), made by the stage (spatial.ts) on the CPU, turned into deck.gl layers by one factory
 * per data kind (index.ts). A leaf of the layers: types only, so the stage names them without
 * loading deck.gl.
 */

import type { CellLayerData, GpuCells } from '../celldata';
import type { LabelTile } from '../labeltiles';
import type { PointsDrawing } from '../pointtiles';
import type { ShapesDrawing } from '../shapetiles';
import type { CellMode } from '../raster';

export type { CellLayerData, GpuCells, CellMode };

/** How the view draws: the GPU tier's stock layers, or the software tier's (tier.ts picks one a page). */
export type Tier = 'gpu' | 'software';

/** Many cells as one picture over `bounds` (x0, y0, x1, y1 in data units), made on the CPU (celllod.ts). */
export type CellRaster = { source: HTMLCanvasElement; bounds: [number, number, number, number] };

/** One image tile as a bitmap: `id` names it for deck (the same tile keeps its layer and texture). */
export type ImageTileLayer = { id: string; source: HTMLCanvasElement; bounds: [number, number, number, number] };

/** What the stage draws of the transcripts: the merged tiles and how. */
export type PointsScene = {
  drawing: PointsDrawing;
  /** A point's radius, CSS px. */
  radius: number;
  /** Bumped whenever `drawing` changes (deck compares attributes by this). */
  version: number;
};

export type DeckScene = {
  /**
   * The GPU tier: every cell, drawn by stock layers and picked on the GPU (then `raster` is
   * null and `cells` holds only the polygons near the view, when cells show as shapes).
   */
  gpu?: GpuCells | null;
  /** The cells as geometry (few in view), or null. */
  cells: CellLayerData | null;
  /** The cells as a raster (many in view), or null. */
  raster: CellRaster | null;
  cellMode: CellMode;
  radius: number;
  cellsVisible: boolean;
  cellsOpacity: number;
  outline: boolean;
  /** The hovered cell: where, and its radius in data units (null: `radius` px). */
  highlight: { position: [number, number]; radius: number | null } | null;
  image: { source: HTMLCanvasElement; bounds: [number, number, number, number] } | null;
  /** Tiles of finer pyramid levels (tiles.ts), coarsest first, drawn over `image` (which stays below). */
  tiles: ImageTileLayer[];
  /**
   * The tiles cover the whole view: `image` below them is kept (its texture) but not drawn,
   * a whole screen of texturing less per frame (a large share of a frame under software WebGL).
   */
  imageCovered: boolean;
  imageVisible: boolean;
  /** Bumped whenever the cells' arrays change, so deck re-uploads them. */
  colorVersion: number;
  /** The transcripts in view (points.ts), drawn over the cells; null: none shown. */
  points?: PointsScene | null;
  /** The labels tiles in view (labels.ts), drawn over the cells and under the transcripts; null: none shown. */
  labels?: LabelTile[] | null;
  /** The labels layer's opacity (1 when unsaid). */
  labelsOpacity?: number;
  /** The shapes elements outlined over the cells (nucleus boundaries), one layer each; none when unsaid. */
  shapeLayers?: ShapesDrawing[];
  /** Which tier draws them (the GPU tier's stock layers, or the software tier's). */
  tier?: Tier;
};

/** What a factory needs beyond the scene: how the screen is (a CSS pixel of 2 device pixels wants wider lines). */
export type LayerContext = { wideLines: boolean };
