/**
 * The deck.gl part of the spatial view, loaded on first use (so the app and its tests
 * never touch WebGL code unless a figure is actually drawn with it): one Deck on the stage's
 * canvas, its layers made by one factory per data kind (layers/).
 */

import { Deck, OrthographicView, type DeckProps, type Layer } from '@deck.gl/core';

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

/** Animation frames in a row with nothing to draw after which a deck's frame loop rests (about half a second). */
export const REST_AFTER_FRAMES = 30;

/** What can change a drawing from the page's side: a deck whose loop rests wakes on each. */
const WAKING_EVENTS = ['pointerdown', 'pointermove', 'pointerup', 'pointerleave', 'pointercancel', 'wheel', 'click', 'dblclick', 'touchstart'];

/**
 * A Deck whose frame loop rests while nothing changes. deck.gl's loop runs on every animation
 * frame for as long as the deck lives, asking each time whether anything needs drawing: an open
 * view that changed nothing took the page's renderer about 6 % of a core and the GPU process 2 %
 * (software WebGL, headless Chromium), a laptop's battery on every open figure. After
 * REST_AFTER_FRAMES frames in a row with nothing to draw, no layer loading and no drag, the loop
 * stops; it starts again on anything that can change the drawing: new props (layers, camera), an
 * explicit redraw, a pointer or wheel event on the canvas (hover picking and the controller run in
 * the loop), a resize of the canvas. `resting` says which (tests read it).
 */
export class RestingDeck extends Deck<OrthographicView> {
  /** Loop frames in a row that drew nothing (class fields are set after Deck's constructor). */
  private quiet = 0;
  /** Whether the loop is stopped now. */
  resting = false;
  /** Loop frames run so far (tests: none while resting). */
  ticks = 0;
  private readonly wakeUp = (): void => this.wake();
  private readonly watched: HTMLCanvasElement | null;

  constructor(props: DeckProps<OrthographicView> & { canvas: HTMLCanvasElement }) {
    // a resize (luma's observer of the canvas, device pixels included) draws on the next frame
    const self: { deck?: RestingDeck } = {};
    super({ ...props, deviceProps: { ...props.deviceProps, onResize: () => self.deck?.wake() } });
    self.deck = this;
    this.watched = props.canvas;
    for (const type of WAKING_EVENTS) {
      this.watched.addEventListener(type, this.wakeUp, { capture: true, passive: true });
    }
  }

  /** Start the loop again if it rests (and the deck still lives). */
  wake(): void {
    this.quiet = 0;
    if (this.resting && this.animationLoop) {
      this.resting = false;
      void this.animationLoop.start();
    }
  }

  override setProps(props: Partial<DeckProps<OrthographicView>>): void {
    super.setProps(props);
    this.wake();
  }

  /**
   * Deck's loop calls this every frame with no reason; a reason is an explicit draw. A loop frame
   * that had nothing to draw counts towards resting; anything drawn, loading or dragged resets it.
   */
  override redraw(reason?: string): void {
    if (reason !== undefined) {
      this.wake();
      super.redraw(reason);
      return;
    }
    this.ticks++;
    const due = this.needsRedraw({ clearRedrawFlags: false });
    super.redraw();
    const loading = this.layerManager?.getLayers().some(layer => !layer.isLoaded) ?? false;
    if (due || loading || this.cursorState.isDragging) {
      this.quiet = 0;
    } else if (++this.quiet >= REST_AFTER_FRAMES && this.animationLoop) {
      this.resting = true;
      this.animationLoop.stop();
    }
  }

  override finalize(): void {
    for (const type of WAKING_EVENTS) {
      this.watched?.removeEventListener(type, this.wakeUp, { capture: true });
    }
    super.finalize();
  }
}

/** One deck.gl instance on `canvas`: created when the figure is on screen, finalized when it leaves. */
export class DeckView {
  private deck: RestingDeck;

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
    this.deck = new RestingDeck({
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

  /** Whether the deck's frame loop rests (nothing to draw), and how many loop frames it ran: tests read them. */
  get loop(): { resting: boolean; ticks: number } {
    return { resting: this.deck.resting, ticks: this.deck.ticks };
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
