/**
 * The deck.gl part of the spatial view, loaded on first use (so the app and its tests
 * never touch WebGL code unless a figure is actually drawn with it): one Deck on the stage's
 * canvas, its layers made by one factory per data kind (layers/).
 */

import { Deck, OrthographicView, type Layer } from '@deck.gl/core';

import type { ViewState } from './camera';
import { deviceRatio } from '../shared/dom';
import { GPU_POINTS, GPU_POLYGONS, LAYER_KINDS, layersOf, type DeckScene, type LayerKind } from './layers';

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
  private readonly pixelRatio = deviceRatio();

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

  /** Each kind's layers of the last update, kept so that a change of one kind reuses the others' instances. */
  private readonly layers = new Map<LayerKind, Layer[]>();

  /**
   * Make the layers of `kinds` anew from `scene` (every kind when unsaid) and draw them over the
   * kept others. Why only some: new cell layer instances over an image tile's arrival would
   * re-tessellate every polygon on each tile (seconds per tile at 100,000 cells under software WebGL).
   */
  update(scene: DeckScene, kinds: readonly LayerKind[] = LAYER_KINDS): void {
    const ctx = { wideLines: this.pixelRatio >= 1.5 };
    for (const kind of kinds) {
      this.layers.set(kind, layersOf(kind, scene, ctx));
    }
    if (kinds.includes('cells')) {
      this.polygonIds = scene.cells?.ids ?? null;
    }
    this.deck.setProps({ layers: LAYER_KINDS.flatMap(kind => this.layers.get(kind) ?? []) });
  }

  redraw(): void {
    this.deck.redraw('sds');
  }

  finalize(): void {
    this.deck.finalize();
  }
}

function toDeck(vs: ViewState, range: [number, number]): object {
  return {
    target: [vs.target[0], vs.target[1], 0],
    zoom: vs.zoom,
    minZoom: range[0],
    maxZoom: range[1]
  };
}
