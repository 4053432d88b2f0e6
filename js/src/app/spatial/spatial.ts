/**
 * The interactive spatial view of a canvas figure: deck.gl (WebGL) when the browser
 * has it, the Canvas 2D drawing (CanvasPlot) otherwise. Exports are not drawn here: the
 * service's one renderer draws them, asked with the view's camera and colouring.
 *
 * WebGL contexts are scarce (16 per page in Chrome; past it the oldest is lost), so a
 * figure holds one only while it is on screen (IntersectionObserver), releases it when
 * it leaves (deck's `finalize`), and redraws after a lost context, falling back to 2D
 * when contexts keep being lost.
 */

import {
  fitViewState,
  keepOnTissue,
  panBy,
  regionOf,
  savedRegion,
  viewStateFor,
  zoomBy,
  zoomRange,
  aspectOf,
  keyMove,
  type Region,
  type ViewState
} from './camera';
import type { CellIndex } from './cellindex';
import { CellDrawing, PICK_SLOP } from './celldrawing';
import type { DeckView } from './deck';
import { FrameMeter } from './framemeter';
import { ImageDrawing } from './imagedrawing';
import type { CellMode, DeckScene, LayerKind, PointsScene } from './layers';
import { deviceRatio, h } from '../shared/dom';
import type { LabelTile } from './labeltiles';
import { OutlineGathering } from './outlinegathering';
import type { ShapesDrawing } from './shapetiles';
import type { OutlineTileSet } from './outlinetiles';
import { typicalWidth, type CanvasData } from './raster';
import { measure, now, preloadDeck, renderTier, softwareRenderer, type Tier } from './tier';
import type { TileFrame } from './tiles';
import { Visibility } from './visibility';
import type { CanvasPayload } from '../shared/types';

export { preloadDeck, renderTier, setTier, setWebglAvailable, webglAvailable, type Tier } from './tier';

/** Lost contexts after which a view gives up on WebGL and draws in 2D. */
const MAX_LOSSES = 3;

/** The kinds an image change remakes, and a labels or transcripts change (the cells' layers stay as they are). */
const IMAGES: readonly LayerKind[] = ['images'];
const OVER_CELLS: readonly LayerKind[] = ['labels', 'points'];
/** The kinds a shapes element's change remakes (its outlines alone). */
const SHAPES: readonly LayerKind[] = ['shapes'];

/** How long the camera rests before a raster of the cells is made again (ms). */
const SETTLE_MS = 250;

export type SpatialCallbacks = {
  /** Called when the camera moves (after the view state is applied). */
  onView?: (vs: ViewState, region: Region) => void;
  onHover?: (index: number) => void;
  onPin?: (index: number) => void;
  /** Called when the stage comes on screen (true) or leaves it (false): the host asks for tiles, or stops. */
  onScreen?: (shown: boolean) => void;
  /** Called when WebGL fails for good: the host shows the 2D drawing instead. */
  onFallback?: (reason: string) => void;
};

/**
 * The WebGL stage of one canvas figure: owns the camera (in data terms) and the
 * deck.gl instance while the figure is on screen.
 */
export class SpatialStage {
  readonly node: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  /** The camera; `null` until the stage has a size. */
  viewState: ViewState | null = null;
  mode: 'saved' | 'fit' | 'user' = 'saved';
  cellsVisible = true;
  cellsOpacity = 1;
  imageVisible = true;
  losses = 0;
  private deck: DeckView | null = null;
  private creating: Promise<void> | null = null;
  /** Whether the stage is on screen, and its size (visibility.ts). */
  private readonly visibility: Visibility;
  /** The stage's size in CSS px (0, 0 until laid out). */
  size: [number, number] = [0, 0];
  /** How this view draws (renderTier; fixed for its life, shown as `data-tier`). */
  readonly tier: Tier;
  /** The cells' side of the scene: their index, colours and the drawing of the moment (celldrawing.ts). */
  private readonly cells: CellDrawing;
  private settleTimer: ReturnType<typeof setTimeout> | null = null;
  private hovered = -1;
  /** Where the pointer rests over the view (CSS px), null once it left: a zoom under it re-asks what it hovers. */
  private pointer: [number, number] | null = null;
  /** When the data arrived (the stage was made): the first draw is measured from here. */
  private readonly born = now();
  private decks = 0;
  /** The image's overview and tiles (imagedrawing.ts). */
  private readonly image: ImageDrawing;
  /** Disposed: nothing is drawn or asked any more. */
  disposed = false;
  /** When a parked stage came back: its next frame is measured as a draw from here. */
  private backAt: number | null = null;

  /** A large tissue's outlines, asked by tile once zoomed in (outlinegathering.ts); null: its shapes came at once. */
  private readonly gathering: OutlineGathering | null = null;

  /** Such a tissue's typical cell width in data units (twice the median radius), else 0: when outlines are worth asking. */
  get outlineSize(): number {
    return this.gathering?.size ?? 0;
  }

  /** `outlines`: a large tissue's outline tiles, gathered once the view is zoomed in (outlinetiles.ts). */
  constructor(
    readonly payload: CanvasPayload,
    readonly data: CanvasData,
    private readonly callbacks: SpatialCallbacks = {},
    private readonly outlines: OutlineTileSet | null = null
  ) {
    const n = payload.n_cells;
    this.cells = new CellDrawing(this);
    const shapes = data.shapes;
    if (outlines && shapes?.kind === 'circles' && shapes.radius.length > 0) {
      this.gathering = new OutlineGathering(outlines, shapes, this.cells.circleSize, this);
    }
    this.canvas = h('canvas', {
      class: 'sds-deck-canvas',
      role: 'application',
      'aria-roledescription': 'spatial view',
      'aria-label':
        `${n.toLocaleString()} cells. Drag or arrow keys to pan; wheel, + and - to zoom.`,
      tabindex: '0'
    });
    this.tier = renderTier() ?? 'software';
    this.node = h('div', { class: 'sds-deck-stage', 'data-tier': this.tier }, this.canvas);
    this.node.style.aspectRatio = `1 / ${aspectOf(payload.bounds)}`;
    this.image = new ImageDrawing(payload, data, this.node);
    this.visibility = new Visibility(this.node, { changed: (visible, parked) => this.shownChanged(visible, parked), resized: () => this.resized() });
    this.listen(this.canvas);
  }

  private listen(canvas: HTMLCanvasElement): void {
    canvas.addEventListener('webglcontextlost', ev => this.contextLost(ev), false);
    canvas.addEventListener('keydown', ev => this.key(ev));
  }

  /** A fresh canvas in place of the current one (a canvas keeps its first context forever). */
  private freshCanvas(): void {
    const fresh = this.canvas.cloneNode(false) as HTMLCanvasElement;
    const focused = document.activeElement === this.canvas;
    this.canvas.replaceWith(fresh);
    (this as { canvas: HTMLCanvasElement }).canvas = fresh;
    this.listen(fresh);
    if (focused) {
      fresh.focus();
    }
  }

  /** Start watching visibility and size; the deck is created once the stage is on screen. */
  start(): void {
    if (!this.visibility.start()) {
      void this.ensureDeck();
    }
    this.resized();
  }

  /** The stage came on screen (a deck is made, what the view wanted while away is asked) or left it. */
  private shownChanged(visible: boolean, parked: boolean): void {
    if (visible) {
      void this.ensureDeck();
      this.gathering?.gather();
    } else if (!parked) {
      this.release();
    }
    this.callbacks.onScreen?.(visible);
  }

  /**
   * Whether the stage is known to be off screen (scrolled away, its tab hidden). Why: a figure
   * out of sight asks for no outline or image tile; what its view needs is asked when it is back.
   */
  get offScreen(): boolean {
    return this.visibility.offScreen;
  }

  /**
   * Taken off the page to be shown again later: keep the WebGL context (the keeper decides how
   * many parked stages may, and calls release() on the others). Off the page is off screen.
   */
  park(): void {
    this.visibility.park();
  }

  /** Back on the page: draw again from what was kept (the first frame is measured as `sds:canvas-draw`). */
  unpark(): void {
    this.visibility.unpark();
    this.backAt = now();
    this.deck?.redraw();
  }

  /** Whether a deck.gl instance (a WebGL context) is alive now. */
  get live(): boolean {
    return this.deck !== null;
  }

  /** The deck's frame loop (null: no deck): whether it rests, and the frames it ran (the flows read them). */
  get loop(): { resting: boolean; ticks: number } | null {
    return this.deck?.loop ?? null;
  }

  get range(): [number, number] {
    const [w, hgt] = this.size;
    return zoomRange(this.payload.bounds, w || 1, hgt || 1, this.cells.cellExtent());
  }

  /** The grid over the cells, built once: what views, rasters and picking read. */
  get index(): CellIndex {
    return this.cells.index;
  }

  /** The cells drawn as geometry now (and the region they cover), or null. */
  get subset(): CellDrawing['subset'] {
    return this.cells.subset;
  }

  /**
   * How far a typical cell reaches from its centre on screen now (CSS px): the annotate veil's
   * hole over a selected cell.
   */
  cellRadius(): number {
    return this.cells.cellRadius();
  }

  /** The cell under the pointer at (sx, sy) CSS px of the view, or -1: picked on the CPU through the index. */
  pick(sx: number, sy: number): number {
    return this.cells.pick(sx, sy);
  }

  /** The camera for `mode` at the current size. */
  private framed(mode: 'saved' | 'fit'): ViewState {
    const [w, hgt] = this.size;
    return mode === 'fit'
      ? fitViewState(this.payload.bounds, w, hgt)
      : viewStateFor(savedRegion(this.payload), w, hgt);
  }

  private resized(): void {
    const w = this.node.clientWidth;
    const hgt = this.node.clientHeight;
    if (w < 2 || hgt < 2 || (w === this.size[0] && hgt === this.size[1])) {
      return;
    }
    const [ow, oh] = this.size;
    this.size = [w, hgt];
    if (!this.viewState || this.mode !== 'user') {
      this.apply(this.framed(this.mode === 'fit' ? 'fit' : 'saved'), this.mode);
    } else {
      // keep the region in view when the panel changes width
      this.apply(viewStateFor(regionOf(this.viewState, ow, oh), w, hgt), 'user');
    }
  }

  /** Set the camera; `mode` says whether it is a framing button's or the user's. */
  apply(vs: ViewState, mode: 'saved' | 'fit' | 'user' = 'user'): void {
    const [lo, hi] = this.range;
    const zoom = Math.max(lo, Math.min(hi, vs.zoom));
    // the view's centre never leaves the tissue's bounds: it cannot be dragged off screen
    this.viewState = { target: keepOnTissue(vs.target, this.payload.bounds), zoom };
    this.mode = mode;
    this.deck?.setView(this.viewState, this.range);
    this.node.dataset.zoom = zoom.toFixed(4);
    const drawn = this.cells.modeAt(zoom);
    const changed = drawn !== this.cells.mode;
    if (changed) {
      this.cells.mode = drawn;
      this.node.dataset.cells = drawn;
    }
    if (this.cells.refresh(false) || changed) {
      this.sync();
    }
    this.gathering?.gather();
    this.settleLater();
    this.node.dataset.target = this.viewState.target.map(v => v.toFixed(3)).join(',');
    this.callbacks.onView?.(this.viewState, this.region());
    // a wheel zoom or a pan under a resting pointer brings another cell under it: hover that one
    if (this.pointer) {
      this.hover(this.pointer[0], this.pointer[1]);
    }
  }

  region(): Region {
    const vs = this.viewState ?? this.framed('saved');
    return regionOf(vs, this.size[0] || 1, this.size[1] || 1);
  }

  showSaved(): void {
    this.apply(this.framed('saved'), 'saved');
  }

  fit(): void {
    this.apply(this.framed('fit'), 'fit');
  }

  zoom(steps: number): void {
    if (this.viewState) {
      this.apply(zoomBy(this.viewState, steps, this.range));
    }
  }

  pan(dx: number, dy: number): void {
    if (this.viewState) {
      this.apply(panBy(this.viewState, dx, dy));
    }
  }

  /** The keyboard (camera.ts's keyMove): arrows pan, + and - zoom, 0 or Home the saved view, f fits. */
  private key(ev: KeyboardEvent): void {
    const move = keyMove(ev.key);
    if (!move) {
      return;
    }
    ev.preventDefault();
    if (move === 'saved' || move === 'fit') {
      this.apply(this.framed(move), move);
    } else if (move.zoom) {
      this.zoom(move.zoom);
    } else {
      this.pan(move.dx, move.dy);
    }
  }

  /** Replace the image's pixels (RGBA of the payload's image size), e.g. after a channel changed. */
  setImage(rgba: Uint8ClampedArray): void {
    if (this.image.setPixels(rgba)) {
      this.deck?.update(this.scene(), IMAGES);
    }
  }

  /** Draw the image tiles of `frame` over the overview (`since`: a view change's time; imagedrawing.ts). */
  setTiles(frame: TileFrame, since?: number): void {
    this.image.setTiles(frame, since);
    this.deck?.update(this.scene(), IMAGES);
  }

  /** The stage's size in device pixels (what tiles are chosen for). */
  screen(): [number, number] {
    const ratio = deviceRatio();
    return [Math.round(this.size[0] * ratio), Math.round(this.size[1] * ratio)];
  }

  /** Recolor the cells: `color` and `value` as the canvas payload describes them. */
  setColors(color: CanvasPayload['color'], value: CanvasData['value'], none: string): void {
    this.cells.setColors(color, value, none);
    this.cells.refresh(true);
    this.sync();
  }

  /** Draw the cells as `shapes` from now on (the outlines gathered so far, or the circles; outlinegathering.ts). */
  drawShapes(shapes: NonNullable<CanvasData['shapes']>, cellSize: number): void {
    (this as { data: CanvasData }).data = { ...this.data, shapes };
    this.cells.reshaped(cellSize, this.viewState?.zoom ?? 0);
    this.node.dataset.cells = this.cells.mode;
    this.node.dataset.outlines = shapes.kind === 'polygons' ? String(this.outlines?.size ?? 0) : '0';
    this.cells.refresh(true);
    this.sync();
  }

  /** Push the layers' state to deck (when there is one). */
  sync(): void {
    this.deck?.update(this.scene());
  }

  /** Once the camera rests: the raster at the screen's resolution. */
  private settleLater(): void {
    if (this.settleTimer) {
      clearTimeout(this.settleTimer);
    }
    this.settleTimer = setTimeout(() => {
      this.settleTimer = null;
      if (!this.disposed && this.cells.refresh(true)) {
        this.sync();
      }
    }, SETTLE_MS);
  }

  /**
   * The cell under the pointer: the one deck's GPU picking found (`picked`, the GPU tier), a
   * hidden one not counted; else picked on the CPU.
   */
  private cellUnder(sx: number, sy: number, picked?: number): number {
    if (picked === undefined) {
      return this.pick(sx, sy);
    }
    return picked >= 0 && this.cellsVisible && this.cells.colorOf(picked) >>> 24 !== 0 ? picked : -1;
  }

  /** The pointer moved to (sx, sy) (negative: it left): the hovered cell, its ring and the host's tooltip. */
  private hover(sx: number, sy: number, picked?: number): void {
    this.pointer = sx < 0 || sy < 0 ? null : [sx, sy];
    const i = sx < 0 || sy < 0 ? -1 : this.cellUnder(sx, sy, picked);
    if (i === this.hovered) {
      return;
    }
    this.hovered = i;
    this.sync();
    this.callbacks.onHover?.(i);
  }

  private scene(): DeckScene {
    const cells = this.cells;
    if (!cells.subset && !cells.raster) {
      cells.refresh(true);
    }
    return {
      gpu: this.tier === 'gpu' ? cells.gpuCells : null,
      cells: cells.subset?.cells ?? null,
      raster: cells.raster?.layer ?? null,
      cellMode: cells.mode,
      radius: Math.max(0.5, (this.payload.point_size || 2) / 2),
      cellsVisible: this.cellsVisible,
      cellsOpacity: this.cellsOpacity,
      outline: (this.payload.point_size || 2) >= 3,
      highlight: cells.highlight(this.hovered),
      ...this.image.scene(),
      imageVisible: this.imageVisible,
      colorVersion: cells.colorVersion,
      points: this.points,
      labels: this.labels,
      labelsOpacity: this.labelsOpacity,
      shapeLayers: [...this.shapeLayers.values()],
      tier: this.tier
    };
  }

  /** The transcripts drawn over the cells (transcripts.ts gathers them), or null for none. */
  private points: PointsScene | null = null;

  /** The labels tiles drawn over the cells (labels.ts gathers them), or null for none. */
  private labels: LabelTile[] | null = null;

  /** The labels layer's opacity, 0 to 1 (taken with the next setLabels). */
  labelsOpacity = 1;

  /** Draw labels `tiles` over the cells (null: none); only the labels' and points' layers are made anew. */
  setLabels(tiles: LabelTile[] | null): void {
    this.labels = tiles;
    this.deck?.update(this.scene(), OVER_CELLS);
    this.deck?.redraw();
  }

  /** The shapes elements outlined over the cells (figures/shapes.ts gathers them), by element. */
  private readonly shapeLayers = new Map<string, ShapesDrawing>();

  /** Outline shapes element `element` as `drawing` (null: not at all); only the shapes' layers are made anew. */
  setShapes(element: string, drawing: ShapesDrawing | null): void {
    if (drawing) {
      this.shapeLayers.set(element, drawing);
    } else {
      this.shapeLayers.delete(element);
    }
    this.node.dataset.shapes = [...this.shapeLayers.keys()].join(',');
    // how many rings are drawn (flows wait on it: a tile on its way draws none yet)
    this.node.dataset.shapeRings = String([...this.shapeLayers.values()].reduce((n, d) => n + d.rings.starts.length - 1, 0));
    this.deck?.update(this.scene(), SHAPES);
    this.deck?.redraw();
  }

  /** Draw `points` over the cells (null: none); only the points' layer is made anew. */
  setPoints(points: PointsScene | null): void {
    this.points = points;
    this.deck?.update(this.scene(), OVER_CELLS);
    this.deck?.redraw();
  }

  private async ensureDeck(): Promise<void> {
    if (this.deck || this.creating || this.disposed || !this.visibility.shown) {
      return this.creating ?? undefined;
    }
    this.creating = (async () => {
      const { DeckView } = await (preloadDeck() ?? import('./deck'));
      if (this.disposed || !this.visibility.shown || this.deck) {
        return;
      }
      if (!this.viewState) {
        this.resized();
      }
      const vs = this.viewState ?? this.framed('saved');
      // the first deck's first draw counts from the data's arrival (the index and raster included)
      const meter = new FrameMeter(this.decks++ === 0 ? this.born : now(), this.payload.n_cells);
      // software WebGL shades every sample of a multisampled frame: 4x the cost of each frame
      const picking = this.tier === 'gpu' ? { pickRadius: PICK_SLOP } : {};
      const made = now();
      this.deck = new DeckView(this.canvas, vs, this.range, { antialias: !softwareRenderer(), ...picking }, {
        onViewState: next => this.apply(next, 'user'),
        onHover: (x, y, picked) => this.hover(x, y, picked),
        onClick: (x, y, picked) => {
          const i = this.cellUnder(x, y, picked);
          if (i >= 0) {
            this.callbacks.onPin?.(i);
          }
        },
        hovering: () => this.hovered >= 0,
        onError: err => {
          this.node.dataset.error = err.message;
        },
        onBeforeFrame: () => meter.before(),
        onFrame: () => {
          const t = now();
          // a stage shown again (keptviews.ts) counts its draw from when it came back
          const back = this.backAt;
          this.backAt = null;
          const frames = meter.after(t, back, () => ({ drawn: this.inView(), width: this.canvas.width, height: this.canvas.height }));
          this.image.drawn(t);
          this.node.dataset.frames = String(frames);
        }
      });
      this.deck.update(this.scene());
      // the context and the layers made (the software tier's raster of the cells too): before the first frame
      measure('sds:deck-create', made, now(), { n_cells: this.payload.n_cells, tier: this.tier });
      this.node.dataset.live = 'true';
    })();
    try {
      await this.creating;
    } catch (err) {
      this.callbacks.onFallback?.(`WebGL failed: ${(err as Error).message}`);
    } finally {
      this.creating = null;
    }
  }

  /** Give the WebGL context back (the figure left the screen). */
  release(): void {
    if (this.deck) {
      this.deck.finalize();
      this.deck = null;
      // deck leaves the context alive on a canvas it did not create: give it back now
      const old = this.canvas;
      this.freshCanvas();
      try {
        (old.getContext('webgl2') as WebGL2RenderingContext | null)?.getExtension('WEBGL_lose_context')?.loseContext();
      } catch {
        // already gone
      }
      this.node.dataset.live = 'false';
      this.node.dataset.released = String(Number(this.node.dataset.released ?? 0) + 1);
    }
  }

  private contextLost(ev: Event): void {
    if (ev.target !== this.canvas) {
      return; // a canvas this view released on purpose
    }
    ev.preventDefault();
    this.losses++;
    try {
      this.deck?.finalize();
    } catch {
      // its context is gone
    }
    this.deck = null;
    this.node.dataset.live = 'false';
    if (this.losses >= MAX_LOSSES) {
      this.callbacks.onFallback?.('the browser keeps taking the WebGL context away');
      return;
    }
    // a fresh canvas gets a fresh context; the old one may stay lost
    this.freshCanvas();
    setTimeout(() => void this.ensureDeck(), 50);
  }

  dispose(): void {
    this.disposed = true;
    if (this.settleTimer) {
      clearTimeout(this.settleTimer);
    }
    this.visibility.stop();
    this.release();
  }

  /** How cells are drawn now (points, filled or outlined polygons). */
  get drawnAs(): CellMode {
    return this.cells.mode;
  }

  /** Cells inside the current region. */
  inView(): number {
    return this.countIn(this.region());
  }

  /** Cells inside `region` (through the index: only the bins over it are read). */
  countIn(region: Region): number {
    return this.cells.countIn(region);
  }

}

export { typicalWidth };
