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
  spacingOf,
  aspectOf,
  type Region,
  type ViewState
} from './camera';
import { buildIndex, containing, countIn, forEachIn, nearest, type CellIndex } from './cellindex';
import { MARGIN, covers, grow, lodFor, planRaster, rasterizeCells, stale, MOVING_RESOLUTION, type RasterPlan } from './celllod';
import type { CellLayerData, CellMode, CellRaster, DeckScene, DeckView, GpuCells, ImageTileLayer, PointsScene } from './deck';
import { h } from '../shared/dom';
import { OUTLINE, polygonsOf } from './geometry';
import type { LabelTile } from './labeltiles';
import { tilesInView, type OutlineTileSet } from './outlinetiles';
import { cellModeAt, colorFn, packColor, rgbaCanvas, typicalWidth, type CanvasData } from './raster';
import type { TileFrame } from './tiles';
import type { CanvasPayload } from '../shared/types';

/** Whether this browser can draw with WebGL2 (probed once; the probe's context is released at once). */
let webgl: boolean | null = null;
/** Whether the probe's renderer is a software one (SwiftShader, llvmpipe): what the view then saves on. */
let software = false;
export function webglAvailable(): boolean {
  if (webgl === null) {
    try {
      const c = document.createElement('canvas');
      const gl = c.getContext('webgl2') as WebGL2RenderingContext | null;
      webgl = !!gl && typeof gl.getParameter === 'function';
      if (gl && webgl) {
        const info = gl.getExtension('WEBGL_debug_renderer_info');
        const renderer = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER) ?? '');
        software = /swiftshader|llvmpipe|softpipe|software/i.test(renderer);
      }
      gl?.getExtension('WEBGL_lose_context')?.loseContext();
    } catch {
      webgl = false;
    }
  }
  return webgl;
}

/**
 * How the view draws. "gpu": deck.gl's stock layers over every cell, picked on the GPU (a
 * hardware WebGL2). "software": a software renderer (SwiftShader, llvmpipe) runs the vertex
 * shader on the CPU, so a frame costs per cell: geometry of the cells near the view while few
 * are (GEOMETRY_BUDGET), a CPU raster of them beyond, picked through the CPU grid.
 */
export type Tier = 'gpu' | 'software';

const TIERS: readonly Tier[] = ['gpu', 'software'];
const TIER_KEY = 'sds-tier';

/**
 * The tier a page forces with `?sds-tier=gpu|software` (tests, comparisons on one machine).
 * Read when this module loads and kept for the tab's session: JupyterLab's router rewrites the
 * address soon after, and a reload should keep the choice.
 */
function forcedTier(): Tier | null {
  try {
    const asked = new URLSearchParams(window.location.search).get(TIER_KEY);
    if (asked !== null) {
      if (TIERS.includes(asked as Tier)) {
        window.sessionStorage.setItem(TIER_KEY, asked);
      } else {
        window.sessionStorage.removeItem(TIER_KEY); // anything else: back to the probe's answer
      }
    }
    const kept = window.sessionStorage.getItem(TIER_KEY);
    return TIERS.includes(kept as Tier) ? (kept as Tier) : null;
  } catch {
    return null; // no window (tests in Node) or no storage
  }
}

let forced: Tier | null | undefined = typeof window !== 'undefined' ? forcedTier() : undefined;

/** The tier of this page: the forced one, else by the probe's renderer (null without WebGL). */
export function renderTier(): Tier | null {
  if (!webglAvailable()) {
    return null;
  }
  if (forced === undefined) {
    forced = forcedTier();
  }
  return forced ?? (software ? 'software' : 'gpu');
}

/** For tests: force a tier (null: the probe's answer). */
export function setTier(tier: Tier | null): void {
  forced = tier;
}

let deckModule: Promise<typeof import('./deck')> | null = null;

/**
 * Start loading deck.gl (and probe WebGL) ahead of the data: a figure calls it when its
 * request starts, so that the first draw after the data arrive does not wait for the bundle
 * (about 0.3 s of software WebGL's first draw at 1M cells was the import). Null without WebGL.
 */
export function preloadDeck(): Promise<typeof import('./deck')> | null {
  if (!webglAvailable()) {
    return null;
  }
  deckModule ??= import('./deck').catch((err: unknown) => {
    deckModule = null; // tried again by the next figure
    throw err;
  });
  return deckModule;
}

/** For tests: force the probe's answer (null: probe again). */
export function setWebglAvailable(value: boolean | null): void {
  webgl = value;
}

function now(): number {
  return typeof performance !== 'undefined' ? performance.now() : Date.now();
}

function measure(name: string, start: number, end: number, detail: Record<string, unknown>): void {
  try {
    performance.measure(name, { start, end, detail });
  } catch {
    // no User Timing level 3
  }
}

/** What a stage derives from the cells alone: their index and typical sizes. */
type CellsDerived = { index: CellIndex; cellSize: number; circleSize: number; shared?: boolean };

/** Cells' derived parts kept by cells key (a handful of tissues: an index of a million cells is ~8 MB). */
const MAX_DERIVED = 4;
const derivedByCells = new Map<string, CellsDerived>();

/**
 * The index and sizes of `data`'s cells, built once per cells key. Why: the key names the stored
 * objects the cells were read from, so every figure and every version showing those cells (a
 * version switch recoloured, a second figure of the element) draws from one index; building it
 * is most of a second for a million cells. Without a key (an older server) it is built each time.
 */
function cellsDerived(key: string | undefined, data: CanvasData): CellsDerived {
  const found = key ? derivedByCells.get(key) : undefined;
  if (found && key) {
    derivedByCells.delete(key);
    derivedByCells.set(key, found);
    return { ...found, shared: true };
  }
  const shapes = data.shapes;
  const n = data.x.length;
  const made: CellsDerived = {
    index: buildIndex(data.x, data.y),
    cellSize: shapes?.kind === 'polygons' ? typicalWidth(shapes.starts, shapes.vertices, n) : 0,
    circleSize: shapes?.kind === 'circles' && shapes.radius.length > 0 ? 2 * medianOf(shapes.radius) : 0
  };
  if (key) {
    derivedByCells.set(key, made);
    if (derivedByCells.size > MAX_DERIVED) {
      derivedByCells.delete(derivedByCells.keys().next().value!);
    }
  }
  return { ...made, shared: false };
}

/** Lost contexts after which a view gives up on WebGL and draws in 2D. */
const MAX_LOSSES = 3;

/** How long the camera rests before a raster of the cells is made again (ms). */
const SETTLE_MS = 250;

/** How near the pointer (CSS px, beyond a disc's radius) a cell is picked. */
const PICK_SLOP = 3;

function devicePixels(): number {
  return Math.min(2, (typeof window !== 'undefined' && window.devicePixelRatio) || 1);
}

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
  private observer: IntersectionObserver | null = null;
  private resize: ResizeObserver | null = null;
  /** Whether the stage is on screen as its observer last said; null: not known since it came back on the page. */
  private onScreen: boolean | null = false;
  /** Whether start() watches visibility: before, the stage is taken as shown (a stage used alone). */
  private watched = false;
  private size: [number, number] = [0, 0];
  /** The grid over the cells, built once: what views, rasters and picking read. */
  readonly index: CellIndex;
  /** How this view draws (renderTier; fixed for its life, shown as `data-tier`). */
  readonly tier: Tier;
  /** The GPU tier's cells: every cell's position (interleaved once) and the colors of the current coloring. */
  private gpuCells: GpuCells | null = null;
  private positions: Float32Array | null = null;
  /** Packed RGBA of cell i (alpha 0: hidden), from the coloring setColors last got. */
  private colorOf: (i: number) => number = () => 0xffb4771f;
  private colorVersion = 0;
  /** The cells drawn as geometry: which ones (and the region they cover), or null. */
  private subset: { cells: CellLayerData; region: Region; version: number; mode: CellMode } | null = null;
  /** The cells drawn as a raster: its plan, picture and the coloring it was made with. */
  private raster: { plan: RasterPlan; layer: CellRaster; version: number } | null = null;
  private settleTimer: ReturnType<typeof setTimeout> | null = null;
  private hovered = -1;
  /** Where the pointer rests over the view (CSS px), null once it left: a zoom under it re-asks what it hovers. */
  private pointer: [number, number] | null = null;
  /** A typical cell's width in data units (from its outline), to pick how cells are drawn at a zoom. */
  private cellSize = 0;
  private cellMode: CellMode = 'points';
  /** When the data arrived (the stage was made): the first draw is measured from here. */
  private readonly born = now();
  private decks = 0;
  private imageSource: HTMLCanvasElement | null = null;
  /** The image tiles drawn over the overview. */
  private tiles: ImageTileLayer[] = [];
  /** Since when (a view change) the tiles on screen are awaited, and whether they are all here. */
  private tileWait: number | null = null;
  private tileFrame: TileFrame | null = null;
  private disposed = false;
  /** Kept off the page for a revisit (keptviews.ts): leaving the screen then keeps the context. */
  private parked = false;
  /** When a parked stage came back: its next frame is measured as a draw from here. */
  private backAt: number | null = null;

  /** A large tissue's circles as the cells reply sent them (what is drawn while zoomed out), when outlines come by tile. */
  private circles: CanvasData['shapes'] = null;
  /** That tissue's typical cell width in data units (twice the median radius): when its outlines are worth asking. */
  private outlineSize = 0;

  /** `outlines`: a large tissue's outline tiles, gathered once the view is zoomed in (outlinetiles.ts). */
  constructor(
    readonly payload: CanvasPayload,
    readonly data: CanvasData,
    private readonly callbacks: SpatialCallbacks = {},
    private readonly outlines: OutlineTileSet | null = null
  ) {
    const n = payload.n_cells;
    const started = now();
    const derived = cellsDerived(payload.cells_key, data);
    this.index = derived.index;
    const shapes = data.shapes;
    this.cellSize = derived.cellSize;
    if (outlines && shapes?.kind === 'circles' && shapes.radius.length > 0) {
      this.circles = shapes;
      this.outlineSize = derived.circleSize;
    }
    measure('sds:cell-index', started, now(), { n_cells: n, shared: derived.shared });
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
    if (typeof IntersectionObserver !== 'undefined') {
      this.watched = true;
      this.observer = new IntersectionObserver(entries => {
        const visible = entries.some(e => e.isIntersecting);
        if (visible !== this.onScreen) {
          this.onScreen = visible;
          if (visible) {
            void this.ensureDeck();
            this.gatherOutlines(); // what the view wanted while away (a resize) is asked now
          } else if (!this.parked) {
            this.release();
          }
          this.callbacks.onScreen?.(visible);
        }
      });
      this.observer.observe(this.node);
    } else {
      this.onScreen = true;
      void this.ensureDeck();
    }
    if (typeof ResizeObserver !== 'undefined') {
      this.resize = new ResizeObserver(() => this.resized());
      this.resize.observe(this.node);
    }
    this.resized();
  }

  /**
   * Whether the stage is known to be off screen (scrolled away, its tab hidden). Why: a figure
   * out of sight asks for no outline or image tile; what its view needs is asked when it is back.
   */
  get offScreen(): boolean {
    return this.watched && this.onScreen !== true;
  }

  /**
   * Taken off the page to be shown again later: keep the WebGL context (the keeper decides how
   * many parked stages may, and calls release() on the others). Off the page is off screen.
   */
  park(): void {
    this.parked = true;
    this.onScreen = false;
  }

  /**
   * Back on the page: draw again from what was kept (the first frame is measured as `sds:canvas-draw`).
   * Where it now sits is not known until its observer says (a version's figures lay out anew, and a
   * park and unpark within one frame are never reported): until then it asks for no tile, and the
   * observer is asked again, which always answers once.
   */
  unpark(): void {
    this.parked = false;
    this.backAt = now();
    if (this.observer) {
      this.onScreen = null;
      this.observer.unobserve(this.node);
      this.observer.observe(this.node);
    }
    this.deck?.redraw();
  }

  /** Whether a deck.gl instance (a WebGL context) is alive now. */
  get live(): boolean {
    return this.deck !== null;
  }

  get range(): [number, number] {
    const [w, hgt] = this.size;
    return zoomRange(this.payload.bounds, w || 1, hgt || 1, this.cellExtent());
  }

  /**
   * How far a typical cell reaches from its centre on screen now (CSS px): its disc or outline
   * at this zoom, else the point size drawn. The annotate veil's hole over a selected cell.
   */
  cellRadius(): number {
    const shapes = this.data.shapes;
    const point = (this.payload.point_size || 2) / 2;
    if (!shapes || (shapes.kind === 'polygons' && this.cellMode === 'points')) {
      return point;
    }
    this.shapeExtent ??= this.cellExtent();
    return Math.max(point, (this.shapeExtent / 2) * Math.pow(2, this.viewState?.zoom ?? 0));
  }

  /** `cellExtent()` of a tissue with shapes, worked out once (a median over every cell). */
  private shapeExtent: number | null = null;

  /** A typical cell's size in data units (what the zoom-in limit shows filling the view). */
  private cellExtent(): number {
    const shapes = this.data.shapes;
    if (shapes?.kind === 'polygons' && this.cellSize > 0) {
      return this.cellSize;
    }
    if (shapes?.kind === 'circles' && shapes.radius.length > 0) {
      return 2 * medianOf(shapes.radius);
    }
    return spacingOf(this.payload.bounds, this.payload.n_cells);
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
    const drawn = this.modeAt(zoom);
    const changed = drawn !== this.cellMode;
    if (changed) {
      this.cellMode = drawn;
      this.node.dataset.cells = drawn;
    }
    if (this.refreshCells(false) || changed) {
      this.sync();
    }
    this.gatherOutlines();
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

  /** The keyboard: arrows pan, + and - zoom, 0 or Home the saved view, f fits. */
  private key(ev: KeyboardEvent): void {
    if (ev.key === '0' || ev.key === 'Home') {
      this.showSaved();
      ev.preventDefault();
    } else if (ev.key === 'f' || ev.key === 'F') {
      this.fit();
      ev.preventDefault();
    } else {
      const step = 60;
      const moves: Record<string, () => void> = {
        ArrowLeft: () => this.pan(-step, 0),
        ArrowRight: () => this.pan(step, 0),
        ArrowUp: () => this.pan(0, -step),
        ArrowDown: () => this.pan(0, step),
        '+': () => this.zoom(1),
        '=': () => this.zoom(1),
        '-': () => this.zoom(-1)
      };
      const move = moves[ev.key];
      if (move) {
        move();
        ev.preventDefault();
      }
    }
  }

  /** Replace the image's pixels (RGBA of the payload's image size), e.g. after a channel changed. */
  setImage(rgba: Uint8ClampedArray): void {
    const img = this.payload.image;
    if (!img) {
      return;
    }
    this.imageSource = rgbaCanvas(rgba, img.width, img.height); // new pixels, a new canvas: deck uploads a new texture
    this.deck?.setImageLayers(this.scene());
  }

  /**
   * Draw the image tiles of `frame` over the overview. `since` (a view change's time) starts
   * a wait: the first frame drawn once all wanted tiles are here is measured as `sds:tiles`
   * and names the level on the stage (`data-tile-level`, `data-tiles`).
   */
  setTiles(frame: TileFrame, since?: number): void {
    if (since !== undefined && this.tileWait === null) {
      this.tileWait = since;
    }
    this.tileFrame = frame;
    this.tiles = frame.tiles.map(tile => ({ id: tile.key, source: rgbaCanvas(tile.rgba!, tile.width, tile.height), bounds: tile.bounds }));
    this.node.dataset.tileWanted = String(frame.level);
    this.deck?.setImageLayers(this.scene());
  }

  /** After a frame: when the awaited tiles are all drawn, measure the wait and name the level. */
  private tilesDrawn(t: number): void {
    const frame = this.tileFrame;
    if (this.tileWait === null || !frame?.complete) {
      return;
    }
    const level = frame.level;
    const drawn = frame.tiles.filter(tile => tile.level === level).length;
    measure('sds:tiles', this.tileWait, t, { level, tiles: drawn, renderer: 'webgl' });
    this.tileWait = null;
    this.node.dataset.tileLevel = String(level);
    this.node.dataset.tiles = String(drawn);
  }

  /** The stage's size in device pixels (what tiles are chosen for). */
  screen(): [number, number] {
    const ratio = Math.min(2, (typeof window !== 'undefined' && window.devicePixelRatio) || 1);
    return [Math.round(this.size[0] * ratio), Math.round(this.size[1] * ratio)];
  }

  /** Recolor the cells: `color` and `value` as the canvas payload describes them. */
  setColors(color: CanvasPayload['color'], value: CanvasData['value'], none: string): void {
    this.colorOf = colorFn(color, value, packColor(none));
    this.colorVersion++;
    this.refreshCells(true);
    this.sync();
  }

  /** The outline tiles the view asks for now (none while a cell is under OUTLINE_PX across). */
  private outlineTilesNow(): ReturnType<typeof tilesInView> {
    if (!this.outlines || !this.viewState) {
      return [];
    }
    return tilesInView(this.outlines.grid, this.region(), Math.pow(2, this.viewState.zoom), this.outlineSize);
  }

  /**
   * A large tissue zoomed in: ask for the outline tiles in view and draw the polygons they hold
   * (in either tier, as polygons sent at once are drawn); zoomed out again: the circles.
   */
  private gatherOutlines(): void {
    const circles = this.circles;
    if (!this.outlines || !circles || this.offScreen) {
      return;
    }
    const wanted = this.outlineTilesNow();
    this.node.dataset.outlineTiles = String(wanted.length);
    if (!wanted.length) {
      if (this.data.shapes !== circles) {
        this.drawShapes(circles);
      }
      return;
    }
    const tiles = this.outlines;
    tiles.want(wanted).then(
      fresh => {
        if (this.disposed || !this.outlineTilesNow().length) {
          return; // zoomed out meanwhile: the circles stay
        }
        if (tiles.size > 0 && (fresh || this.data.shapes === circles)) {
          this.drawShapes({ kind: 'polygons', ...tiles.polygons() });
        }
      },
      () => undefined // a tile that failed leaves its cells as circles; the next view change asks again
    );
  }

  /** Draw the cells as `shapes` from now on (the outlines gathered so far, or the circles). */
  private drawShapes(shapes: NonNullable<CanvasData['shapes']>): void {
    (this as { data: CanvasData }).data = { ...this.data, shapes };
    this.cellSize = shapes.kind === 'polygons' ? this.outlineSize : 0;
    this.shapeExtent = null;
    this.cellMode = this.modeAt(this.viewState?.zoom ?? 0);
    this.node.dataset.cells = this.cellMode;
    this.node.dataset.outlines = shapes.kind === 'polygons' ? String(this.outlines?.size ?? 0) : '0';
    this.subset = null;
    this.raster = null;
    this.gpuCells = null;
    this.refreshCells(true);
    this.sync();
  }

  /** Push the layers' state to deck (when there is one). */
  sync(): void {
    this.deck?.setScene(this.scene());
  }

  /** Device pixels per data unit now. */
  private deviceScale(): number {
    return Math.pow(2, this.viewState?.zoom ?? 0) * devicePixels();
  }

  /** How far beyond a cell's centre its disc reaches, in data units, for the raster's pad. */
  private pad(scale: number): number {
    const shapes = this.data.shapes;
    const disc = Math.max(1, (this.payload.point_size || 2) * devicePixels()) / scale;
    return Math.max(disc, shapes?.kind === 'polygons' ? this.cellSize : 0, shapes?.kind === 'circles' ? maxOf(shapes.radius) * 2 : 0);
  }

  /**
   * Bring the cells' layer up to the view: geometry of the cells near the view when few are,
   * else a raster. `settled`: the camera rests (or the colors changed), so a raster that is
   * not pixel for pixel the screen's is made again now; while moving, only a missing one is.
   * Returns whether the layer changed.
   */
  private refreshCells(settled: boolean): boolean {
    if (!this.viewState) {
      return false;
    }
    const view = this.region();
    const scale = this.deviceScale();
    if (this.tier === 'gpu') {
      return this.refreshGpu(view);
    }
    if (lodFor(this.index, grow(view)) === 'geometry') {
      this.raster = null;
      return this.refreshSubset(view);
    }
    this.subset = null;
    const bounds = this.payload.bounds;
    const pad = this.pad(scale);
    const r = this.raster;
    const fresh = r && r.version === this.colorVersion;
    if (fresh && !stale(r.plan, view, scale, bounds, pad, settled ? 1.01 : MOVING_RESOLUTION)) {
      return false;
    }
    if (fresh && !settled) {
      return false; // made again once the camera rests (settleLater)
    }
    const plan = planRaster(view, scale, bounds, pad);
    if (!plan) {
      return false;
    }
    this.raster = { plan, layer: this.rasterOf(plan), version: this.colorVersion };
    this.node.dataset.lod = 'raster';
    return true;
  }

  /** The geometry of the cells near `view`, made again when it no longer covers the view. Returns whether it changed. */
  private refreshSubset(view: Region): boolean {
    const s = this.subset;
    const region = grow(view, MARGIN * 2);
    // kept while it covers the view and is not much larger than needed (zooming in: fewer cells)
    const oversized = s !== null && s.region[2] - s.region[0] > 2 * (region[2] - region[0]);
    if (s && s.version === this.colorVersion && s.mode === this.cellMode && covers(s.region, view) && !oversized) {
      return false;
    }
    this.subset = { cells: this.geometryIn(region), region, version: this.colorVersion, mode: this.cellMode };
    this.node.dataset.lod = 'geometry';
    return true;
  }

  /**
   * The GPU tier: every cell, whatever the count in view (no budget: instanced discs cost the
   * GPU, not JS), colored once per coloring; the polygons of the cells near the view once cells
   * are big enough to show as shapes (then few fit the screen). Returns whether a layer changed.
   */
  private refreshGpu(view: Region): boolean {
    let changed = false;
    if (this.gpuCells?.version !== this.colorVersion) {
      this.gpuCells = this.allCells();
      changed = true;
    }
    if (this.data.shapes?.kind === 'polygons' && this.cellMode !== 'points') {
      return this.refreshSubset(view) || changed;
    }
    changed ||= this.subset !== null;
    this.subset = null;
    this.node.dataset.lod = 'geometry';
    return changed;
  }

  /** Every cell for the GPU tier's stock layers: positions (made once), fill and outline colors. */
  private allCells(): GpuCells {
    const { x, y } = this.data;
    const n = x.length;
    const hidden = (i: number) => !Number.isFinite(x[i]) || !Number.isFinite(y[i]);
    if (!this.positions) {
      const positions = new Float32Array(2 * n);
      for (let i = 0; i < n; i++) {
        if (!hidden(i)) {
          positions[2 * i] = x[i];
          positions[2 * i + 1] = y[i];
        }
      }
      this.positions = positions;
    }
    const colors = new Uint32Array(n);
    const lines = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      const c = hidden(i) ? 0 : this.colorOf(i);
      colors[i] = c;
      lines[i] = c >>> 24 ? OUTLINE : 0;
    }
    const shapes = this.data.shapes;
    return {
      n,
      positions: this.positions,
      colors: new Uint8Array(colors.buffer),
      lines: new Uint8Array(lines.buffer),
      radii: shapes?.kind === 'circles' ? shapes.radius : null,
      cellRadius: shapes?.kind === 'polygons' ? this.cellSize / 2 : 0,
      version: this.colorVersion
    };
  }

  /** Once the camera rests: the raster at the screen's resolution. */
  private settleLater(): void {
    if (this.settleTimer) {
      clearTimeout(this.settleTimer);
    }
    this.settleTimer = setTimeout(() => {
      this.settleTimer = null;
      if (!this.disposed && this.refreshCells(true)) {
        this.sync();
      }
    }, SETTLE_MS);
  }

  /** The raster of the cells over `plan` (paintPoints through the index), as a canvas for deck's texture. */
  private rasterOf(plan: RasterPlan): CellRaster {
    const started = now();
    const shapes = this.data.shapes;
    const point = (this.payload.point_size || 2) * devicePixels() * (plan.scale / this.deviceScale());
    // polygons: each its own shape once big enough to show one (not points), as in the 2D
    // drawing; smaller, a square of its size by the area it covers (footprint.ts: no stripes)
    const diameter =
      shapes?.kind === 'circles'
        ? { radius: shapes.radius, scale: plan.scale }
        : shapes?.kind === 'polygons'
          ? this.cellMode === 'points'
            ? { footprint: this.cellSize * plan.scale }
            : { polygons: shapes }
          : point;
    const outline = shapes?.kind === 'polygons' ? this.cellMode !== 'points' : (this.payload.point_size || 2) >= 3;
    const { pixels, drawn } = rasterizeCells(plan, this.index, this.data.x, this.data.y, this.colorOf, diameter, 33, outline);
    const source = document.createElement('canvas');
    source.width = plan.width;
    source.height = plan.height;
    const ctx = source.getContext('2d');
    ctx?.putImageData(new ImageData(pixels as never, plan.width, plan.height), 0, 0);
    measure('sds:cell-raster', started, now(), { n_cells: this.payload.n_cells, drawn, width: plan.width, height: plan.height });
    this.node.dataset.raster = `${plan.width}x${plan.height}`;
    return { source, bounds: plan.region };
  }

  /** The geometry of the cells in `region`: positions, colors and shapes of those only. */
  private geometryIn(region: Region): CellLayerData {
    const picked: number[] = [];
    forEachIn(this.index, this.data.x, this.data.y, grow(region, 0.02), i => picked.push(i));
    const n = picked.length;
    const positions = new Float32Array(n * 2);
    const colors = new Uint32Array(n);
    const lines = new Uint32Array(n);
    const shapes = this.data.shapes;
    const radii = shapes?.kind === 'circles' ? new Float32Array(n) : null;
    const outline = OUTLINE;
    let vertexCount = 0;
    for (let k = 0; k < n; k++) {
      const i = picked[k];
      positions[2 * k] = this.data.x[i];
      positions[2 * k + 1] = this.data.y[i];
      const c = this.colorOf(i);
      colors[k] = c;
      lines[k] = c >>> 24 ? outline : 0;
      if (radii && shapes?.kind === 'circles') {
        radii[k] = shapes.radius[i];
      }
      if (shapes?.kind === 'polygons') {
        vertexCount += shapes.starts[i + 1] - shapes.starts[i];
      }
    }
    let polygons: CellLayerData['polygons'] = null;
    if (shapes?.kind === 'polygons' && this.cellMode !== 'points') {
      polygons = polygonsOf(picked, shapes.starts, shapes.vertices, colors, vertexCount);
    }
    return { n, positions, colors: new Uint8Array(colors.buffer), lines: new Uint8Array(lines.buffer), radii, polygons, ids: Uint32Array.from(picked) };
  }

  /** The cell under the pointer at (sx, sy) CSS px of the view, or -1: picked on the CPU through the index. */
  pick(sx: number, sy: number): number {
    const vs = this.viewState;
    if (!vs || !this.cellsVisible || sx < 0 || sy < 0) {
      return -1;
    }
    const scale = Math.pow(2, vs.zoom);
    const px = vs.target[0] + (sx - this.size[0] / 2) / scale;
    const py = vs.target[1] + (sy - this.size[1] / 2) / scale;
    const visible = (i: number) => this.colorOf(i) >>> 24 !== 0;
    const { x, y } = this.data;
    const shapes = this.data.shapes;
    if (shapes?.kind === 'polygons' && this.cellMode !== 'points') {
      return containing(this.index, x, y, shapes.starts, shapes.vertices, px, py, this.cellSize * 1.5, visible);
    }
    if (shapes?.kind === 'circles') {
      const slop = PICK_SLOP / scale;
      const reach = maxOf(shapes.radius) + slop;
      const i = nearest(this.index, x, y, px, py, reach, j => visible(j) && Math.hypot(x[j] - px, y[j] - py) <= shapes.radius[j] + slop);
      return i;
    }
    const radius = Math.max(0.5, (this.payload.point_size || 2) / 2);
    return nearest(this.index, x, y, px, py, (radius + PICK_SLOP) / scale, visible);
  }

  /**
   * The cell under the pointer: the one deck's GPU picking found (`picked`, the GPU tier), a
   * hidden one not counted; else picked on the CPU.
   */
  private cellUnder(sx: number, sy: number, picked?: number): number {
    if (picked === undefined) {
      return this.pick(sx, sy);
    }
    return picked >= 0 && this.cellsVisible && this.colorOf(picked) >>> 24 !== 0 ? picked : -1;
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

  private highlight(): DeckScene['highlight'] {
    const i = this.hovered;
    if (i < 0 || !this.cellsVisible) {
      return null;
    }
    const shapes = this.data.shapes;
    const radius = shapes?.kind === 'circles' ? shapes.radius[i] : shapes?.kind === 'polygons' && this.cellMode !== 'points' ? this.cellSize / 2 : null;
    return { position: [this.data.x[i], this.data.y[i]], radius };
  }

  private scene(): DeckScene {
    const img = this.payload.image;
    if (img && this.data.image && !this.imageSource) {
      this.imageSource = rgbaCanvas(this.data.image, img.width, img.height);
    }
    if (!this.subset && !this.raster) {
      this.refreshCells(true);
    }
    return {
      gpu: this.tier === 'gpu' ? this.gpuCells : null,
      cells: this.subset?.cells ?? null,
      raster: this.raster?.layer ?? null,
      cellMode: this.cellMode,
      radius: Math.max(0.5, (this.payload.point_size || 2) / 2),
      cellsVisible: this.cellsVisible,
      cellsOpacity: this.cellsOpacity,
      outline: (this.payload.point_size || 2) >= 3,
      highlight: this.highlight(),
      image: img && this.imageSource ? { source: this.imageSource, bounds: img.bounds } : null,
      tiles: this.tiles,
      // every wanted tile is here: they cover the view (tilesIn covers the region asked for)
      imageCovered: !!this.tileFrame?.complete && this.tileFrame.level >= 0 && this.tiles.length > 0,
      imageVisible: this.imageVisible,
      colorVersion: this.colorVersion,
      points: this.points,
      labels: this.labels,
      tier: this.tier
    };
  }

  /** The transcripts drawn over the cells (transcripts.ts gathers them), or null for none. */
  private points: PointsScene | null = null;

  /** The labels tiles drawn over the cells (labels.ts gathers them), or null for none. */
  private labels: LabelTile[] | null = null;

  /** Draw labels `tiles` over the cells (null: none); only the labels' and points' layers are made anew. */
  setLabels(tiles: LabelTile[] | null): void {
    this.labels = tiles;
    this.deck?.setPointLayers(this.scene());
    this.deck?.redraw();
  }

  /** Draw `points` over the cells (null: none); only the points' layer is made anew. */
  setPoints(points: PointsScene | null): void {
    this.points = points;
    this.deck?.setPointLayers(this.scene());
    this.deck?.redraw();
  }

  private async ensureDeck(): Promise<void> {
    if (this.deck || this.creating || this.disposed || !this.onScreen) {
      return this.creating ?? undefined;
    }
    this.creating = (async () => {
      const { DeckView } = await (preloadDeck() ?? import('./deck'));
      if (this.disposed || !this.onScreen || this.deck) {
        return;
      }
      if (!this.viewState) {
        this.resized();
      }
      const vs = this.viewState ?? this.framed('saved');
      // the first deck's first draw counts from the data's arrival (the index and raster included)
      const created = this.decks++ === 0 ? this.born : now();
      let frames = 0;
      let lastFrame = created;
      let rendering = created;
      // software WebGL shades every sample of a multisampled frame: 4x the cost of each frame
      const picking = this.tier === 'gpu' ? { pickRadius: PICK_SLOP } : {};
      this.deck = new DeckView(this.canvas, vs, this.range, { antialias: !software, ...picking }, {
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
        onBeforeFrame: () => {
          rendering = now();
        },
        onFrame: () => {
          // User Timing: the first draw (deck created to first frame), then every frame's interval
          // and deck's own render of it (layers updated, draw calls issued; not the GPU's work)
          const t = now();
          if (frames > 0) {
            measure('sds:frame-work', rendering, t, {});
          }
          const detail: Record<string, unknown> = { n_cells: this.payload.n_cells, renderer: 'webgl' };
          // a stage shown again (keptviews.ts) counts its draw from when it came back
          const back = this.backAt;
          this.backAt = null;
          if (frames === 0 || back !== null) {
            Object.assign(detail, { drawn: this.inView(), width: this.canvas.width, height: this.canvas.height, again: back !== null });
            measure('sds:canvas-draw', back ?? created, t, detail);
          } else {
            measure('sds:frame', lastFrame, t, detail);
          }
          this.tilesDrawn(t);
          frames++;
          lastFrame = t;
          this.node.dataset.frames = String(frames);
        }
      });
      this.deck.setScene(this.scene());
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
    this.observer?.disconnect();
    this.resize?.disconnect();
    this.release();
  }

  /** How cells are drawn at `zoom` (the same rule as the 2D drawing's, cellModeAt). */
  private modeAt(zoom: number): CellMode {
    return this.data.shapes?.kind === 'polygons' ? cellModeAt(this.cellSize, Math.pow(2, zoom)) : 'points';
  }

  /** How cells are drawn now (points, filled or outlined polygons). */
  get drawnAs(): CellMode {
    return this.cellMode;
  }

  /** Cells inside the current region. */
  inView(): number {
    return this.countIn(this.region());
  }

  /** Cells inside `region` (through the index: only the bins over it are read). */
  countIn(region: Region): number {
    return countIn(this.index, this.data.x, this.data.y, region);
  }
}

export { typicalWidth };

function maxOf(values: Float32Array): number {
  let m = 0;
  for (let i = 0; i < values.length; i++) {
    if (values[i] > m) {
      m = values[i];
    }
  }
  return m;
}

function medianOf(values: Float32Array): number {
  const sorted = Float32Array.from(values).sort();
  return sorted[sorted.length >> 1];
}
