/**
 * The deck.gl part of the spatial view, loaded on first use (so the app and its tests
 * never touch WebGL code unless a figure is actually drawn with it).
 */

import { Deck, OrthographicView, type Layer } from '@deck.gl/core';
import { BitmapLayer, ScatterplotLayer, SolidPolygonLayer } from '@deck.gl/layers';

import type { ViewState } from './camera';
import type { CellLayerData, PolygonLayerData } from './celldata';
import { CellDiscLayer, discData } from './disclayer';
import { discVertices, edgeQuads } from './geometry';
import { GPU_POINTS, GPU_POLYGONS, gpuCellLayers, type GpuCells } from './gpulayers';
import { CellEdgeLayer, CellOutlineLayer, edgeData, outlineData } from './outlinelayer';
import { labelLayers } from './labellayer';
import type { LabelTile } from './labeltiles';
import { pointLayers, type PointsScene } from './pointlayer';
import { OUTLINED_FILL_OPACITY, type CellMode } from './raster';

export type { CellLayerData, PolygonLayerData } from './celldata';
export type { PointsScene } from './pointlayer';
export type { GpuCells };

/** Many cells as one picture over `bounds` (x0, y0, x1, y1 in data units), made on the CPU (celllod.ts). */
export type CellRaster = { source: HTMLCanvasElement; bounds: [number, number, number, number] };

export type { CellMode };

/** One image tile as a bitmap: `id` names it for deck (the same tile keeps its layer and texture). */
export type ImageTileLayer = { id: string; source: HTMLCanvasElement; bounds: [number, number, number, number] };

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
  /** The transcripts in view (pointlayer.ts), drawn over the cells; null: none shown. */
  points?: PointsScene | null;
  /** The labels tiles in view (labellayer.ts), drawn over the cells and under the transcripts; null: none shown. */
  labels?: LabelTile[] | null;
  /** Which tier draws them (the GPU tier's stock layer, or the software tier's quads). */
  tier?: 'gpu' | 'software';
};

export type DeckHandlers = {
  /** Before each frame is drawn (deck's own render time per frame is measured from here). */
  onBeforeFrame?(): void;
  /** After each frame drawn (User Timing measures, tests). */
  onFrame?(): void;
  onViewState(vs: ViewState): void;
  /**
   * The pointer over the view at (x, y) CSS px (-1, -1: it left). `picked`: the cell deck's GPU
   * picking found there (-1: none), when the view picks on the GPU; else undefined, and cells
   * are picked on the CPU (cellindex.ts).
   */
  onHover(x: number, y: number, picked?: number): void;
  onClick(x: number, y: number, picked?: number): void;
  /** Whether the pointer is over a cell (the cursor). */
  hovering(): boolean;
  onError(err: Error): void;
};

/** One deck.gl instance on `canvas`: created when the figure is on screen, finalized when it leaves. */
export class DeckView {
  private deck: Deck<OrthographicView>;

  /** Device pixels a CSS pixel in the drawing buffer (at most 2). */
  private readonly pixelRatio = Math.min(2, (typeof window !== 'undefined' && window.devicePixelRatio) || 1);

  /**
   * `antialias`: a multisampled frame; off under software WebGL (SwiftShader), where it made a
   * frame showing the cells' raster cost about twice an empty one: discs smooth their own edges.
   */
  /**
   * `pickRadius` (CSS px), the GPU tier's: the cell layers are pickable and hover and click name
   * the cell deck picked within it (a picking pass per pointer move, well under a frame on a GPU).
   */
  constructor(
    canvas: HTMLCanvasElement,
    vs: ViewState,
    range: [number, number],
    options: { antialias: boolean; pickRadius?: number },
    private readonly handlers: DeckHandlers
  ) {
    const picking = options.pickRadius !== undefined;
    this.deck = new Deck<OrthographicView>({
      canvas,
      width: '100%',
      height: '100%',
      views: new OrthographicView({ id: 'ortho', flipY: true }),
      controller: {
        dragPan: true,
        scrollZoom: true,
        doubleClickZoom: true,
        touchZoom: true,
        keyboard: false, // SpatialStage takes the keys: the same on WebGL and 2D, no transition
        dragRotate: false,
        inertia: false
      },
      viewState: toDeck(vs, range),
      // keep the frame readable (tests read it back; snapshots) at a small cost
      deviceProps: { webgl: { preserveDrawingBuffer: true, antialias: options.antialias } },
      // every layer lies in the plane z = 0, drawn in order: the depth test (deck's default)
      // changes nothing drawn, but under software WebGL it made a frame with the cells' raster
      // cost two to three times an empty one (bench_webgl.py)
      parameters: { depthCompare: 'always', depthWriteEnabled: false },
      useDevicePixels: this.pixelRatio,
      getCursor: ({ isDragging }) => (isDragging ? 'grabbing' : this.handlers.hovering() ? 'pointer' : 'grab'),
      onViewStateChange: ({ viewState }) => {
        const v = viewState as { target: number[]; zoom: number };
        const next: ViewState = { target: [v.target[0], v.target[1]], zoom: v.zoom };
        this.handlers.onViewState(next);
        return null;
      },
      // software tier: no layer is pickable, so a pointer move never costs a picking pass over the cells
      pickingRadius: options.pickRadius ?? 0,
      onHover: info => this.handlers.onHover(info.x, info.y, picking ? this.cellAt(info) : undefined),
      onClick: info => this.handlers.onClick(info.x, info.y, picking ? this.cellAt(info) : undefined),
      onBeforeRender: () => this.handlers.onBeforeFrame?.(),
      onAfterRender: () => this.handlers.onFrame?.(),
      onError: err => this.handlers.onError(err)
    });
  }

  /** The polygons' cell ids of the last scene: a polygon pick's index is into these. */
  private polygonIds: Uint32Array | null = null;

  /** The cell a GPU pick found (-1: none): points are instance i for cell i; polygons map through their ids. */
  private cellAt(info: { index: number; layer?: Layer | null }): number {
    const id = info.layer?.id;
    if (info.index < 0 || !id) {
      return -1;
    }
    if (id === GPU_POINTS) {
      return info.index;
    }
    return id === GPU_POLYGONS ? (this.polygonIds?.[info.index] ?? -1) : -1;
  }

  setView(vs: ViewState, range: [number, number]): void {
    this.deck.setProps({ viewState: toDeck(vs, range) });
  }

  /** The cell layers of the last setScene, kept so an image-only change reuses them (setImageLayers). */
  private cellLayers: Layer[] = [];

  setScene(scene: DeckScene): void {
    const layers: Layer[] = imageLayers(scene);
    const images = layers.length;
    this.polygonIds = scene.cells?.ids ?? null;
    if (scene.cellsVisible) {
      layers.push(...cellLayers(scene, this.pixelRatio >= 1.5));
    }
    this.cellLayers = layers.slice(images);
    this.pointLayers = [...labelLayers(scene.labels), ...pointLayers(scene.points ?? null, scene.tier ?? 'software')];
    this.deck.setProps({ layers: [...layers, ...this.pointLayers] });
  }

  /** The labels' and transcripts' layers of the last scene (kept, as the cells', over an image-only change). */
  private pointLayers: Layer[] = [];

  /**
   * Only the image changed (tiles arrived, channels recolored): new image layers over the same
   * cell layer instances, which deck then leaves as they are (new ones would re-tessellate
   * every polygon on each tile: seconds per tile at 100,000 cells under software WebGL).
   */
  setImageLayers(scene: DeckScene): void {
    this.deck.setProps({ layers: [...imageLayers(scene), ...this.cellLayers, ...this.pointLayers] });
  }

  /** Only the labels or transcripts changed (tiles arrived, genes or size chosen): the image and cell layers stay. */
  setPointLayers(scene: DeckScene): void {
    this.pointLayers = [...labelLayers(scene.labels), ...pointLayers(scene.points ?? null, scene.tier ?? 'software')];
    this.deck.setProps({ layers: [...imageLayers(scene), ...this.cellLayers, ...this.pointLayers] });
  }

  redraw(): void {
    this.deck.redraw('sds');
  }

  finalize(): void {
    this.deck.finalize();
  }
}

/** The cells: their raster, or the geometry of those near the view; then the hovered cell's ring. */
function cellLayers(scene: DeckScene, wideLines: boolean): Layer[] {
  const layers: Layer[] = [];
  const cells = scene.cells;
  if (scene.gpu) {
    layers.push(
      ...gpuCellLayers({ cells: scene.gpu, shapes: cells, cellMode: scene.cellMode, radius: scene.radius, outline: scene.outline, opacity: scene.cellsOpacity })
    );
  } else if (scene.raster) {
    layers.push(
      worldBitmap('cells-raster', scene.raster, {
        opacity: scene.cellsOpacity,
        // settled, the raster maps pixel to pixel; while zooming, nearest keeps cells sharp
        textureParameters: { minFilter: 'linear', magFilter: 'nearest' }
      })
    );
  } else if (cells && cells.polygons && scene.cellMode !== 'points') {
    layers.push(...polygonLayers(scene, cells, cells.polygons, wideLines));
  } else if (cells) {
    const radius = cells.radii ? 0 : scene.radius;
    layers.push(
      new CellDiscLayer({
        id: 'cells',
        data: once(cells, `discs:${radius}`, () => discData(discVertices(cells.n, cells.positions, cells.radii, radius, cells.colors, cells.lines))) as never,
        radiusUnits: cells.radii ? 'common' : 'pixels',
        stroked: scene.outline,
        opacity: scene.cellsOpacity,
        updateTriggers: { getFillColor: scene.colorVersion, getLineColor: scene.colorVersion, getPosition: scene.colorVersion, getRadius: [scene.colorVersion, radius] }
      })
    );
  }
  const hl = scene.highlight;
  if (hl) {
    layers.push(
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
    );
  }
  return layers;
}

/** The overview image (below), then the tiles of finer levels, coarsest first. */
function imageLayers(scene: DeckScene): Layer[] {
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

/**
 * A bitmap over `bounds` (x0, y0, x1, y1 in data units). deck wants left, bottom, right, top,
 * and y grows downwards in this view: the flip is made here once for the image, its tiles and
 * the cells' raster.
 */
function worldBitmap(
  id: string,
  bitmap: { source: HTMLCanvasElement; bounds: [number, number, number, number] },
  props: { opacity?: number; visible?: boolean; textureParameters: Record<string, string> }
): Layer {
  const [x0, y0, x1, y1] = bitmap.bounds;
  return new BitmapLayer({ id, image: bitmap.source, bounds: [x0, y1, x1, y0], ...props });
}

/**
 * Each subset's binary data object, made once: deck compares `data` by identity, so a new
 * object (on a hover's re-render) would re-upload the arrays and re-tessellate the polygons.
 */
const made = new WeakMap<CellLayerData, Record<string, object>>();
function once(cells: CellLayerData, key: string, make: () => object): object {
  let slot = made.get(cells);
  if (!slot) {
    made.set(cells, (slot = {}));
  }
  return (slot[key] ??= make());
}

/**
 * Filled polygons, and their outlines when zoomed in: one device pixel wide (GL lines), or one
 * CSS pixel (quads) when `wideLines` (a screen of 2 device pixels a CSS pixel).
 */
function polygonLayers(scene: DeckScene, cells: CellLayerData, p: PolygonLayerData, wideLines: boolean): Layer[] {
  const layers: Layer[] = [
    new SolidPolygonLayer({
      id: 'cell-polygons',
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
      opacity: scene.cellsOpacity * (scene.cellMode === 'outlined' ? OUTLINED_FILL_OPACITY : 1),
      updateTriggers: { getFillColor: scene.colorVersion, getPolygon: scene.colorVersion }
    })
  ];
  if (scene.cellMode !== 'outlined') {
    return layers;
  }
  const common = { id: 'cell-outlines', opacity: scene.cellsOpacity };
  if (wideLines) {
    const data = once(cells, 'edges', () => edgeData(edgeQuads(p.segments, p.segmentColors)));
    layers.push(new CellEdgeLayer({ ...common, data: data as never, updateTriggers: { getColor: scene.colorVersion, getStart: scene.colorVersion } }));
  } else {
    const data = once(cells, 'outlines', () => outlineData(p.segments, p.segmentColors));
    layers.push(new CellOutlineLayer({ ...common, data: data as never, updateTriggers: { getColor: scene.colorVersion, getPosition: scene.colorVersion } }));
  }
  return layers;
}

function toDeck(vs: ViewState, range: [number, number]): object {
  return {
    target: [vs.target[0], vs.target[1], 0],
    zoom: vs.zoom,
    minZoom: range[0],
    maxZoom: range[1]
  };
}
