/**
 * The interactive spatial view of a canvas figure: deck.gl (WebGL) when the browser
 * has it, today's Canvas 2D drawing (CanvasPlot) otherwise; the 2D drawing also makes
 * the exports, at the camera on screen.
 *
 * WebGL contexts are scarce (16 per page in Chrome; past it the oldest is lost), so a
 * figure holds one only while it is on screen (IntersectionObserver), releases it when
 * it leaves (deck's `finalize`), and redraws after a lost context, falling back to 2D
 * when contexts keep being lost.
 */

import {
  countInRegion,
  fitViewState,
  panBy,
  regionOf,
  savedRegion,
  viewStateFor,
  zoomBy,
  zoomRange,
  aspectOf,
  type Region,
  type ViewState
} from './camera';
import type { CellMode, DeckScene, DeckView, ImageTileLayer, PolygonLayerData } from './deck';
import { h } from './dom';
import { cellModeAt, colorFn, packColor, typicalWidth, type CanvasData } from './raster';
import type { TileFrame } from './tiles';
import type { CanvasPayload } from './types';

/** Whether this browser can draw with WebGL2 (probed once; the probe's context is released at once). */
let webgl: boolean | null = null;
export function webglAvailable(): boolean {
  if (webgl === null) {
    try {
      const c = document.createElement('canvas');
      const gl = c.getContext('webgl2') as WebGL2RenderingContext | null;
      webgl = !!gl && typeof gl.getParameter === 'function';
      gl?.getExtension('WEBGL_lose_context')?.loseContext();
    } catch {
      webgl = false;
    }
  }
  return webgl;
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

/** Lost contexts after which a view gives up on WebGL and draws in 2D. */
const MAX_LOSSES = 3;

export type SpatialCallbacks = {
  /** Called when the camera moves (after the view state is applied). */
  onView?: (vs: ViewState, region: Region) => void;
  onHover?: (index: number) => void;
  onPin?: (index: number) => void;
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
  private onScreen = false;
  private size: [number, number] = [0, 0];
  private colors: Uint8Array;
  private lines: Uint8Array;
  private colorVersion = 0;
  private positions: Float32Array;
  private polygons: PolygonLayerData | null = null;
  /** A typical cell's width in data units (from its outline), to pick how cells are drawn at a zoom. */
  private cellSize = 0;
  private cellMode: CellMode = 'points';
  private imageSource: HTMLCanvasElement | null = null;
  /** The image tiles drawn over the overview, and their bitmaps by RGBA (a recolored tile is a new bitmap). */
  private tiles: ImageTileLayer[] = [];
  private readonly bitmaps = new WeakMap<Uint8ClampedArray, HTMLCanvasElement>();
  /** Since when (a view change) the tiles on screen are awaited, and whether they are all here. */
  private tileWait: number | null = null;
  private tileFrame: TileFrame | null = null;
  private disposed = false;

  constructor(
    readonly payload: CanvasPayload,
    readonly data: CanvasData,
    private readonly callbacks: SpatialCallbacks = {}
  ) {
    const n = payload.n_cells;
    this.positions = new Float32Array(n * 3);
    for (let i = 0; i < n; i++) {
      this.positions[i * 3] = data.x[i];
      this.positions[i * 3 + 1] = data.y[i];
    }
    this.colors = new Uint8Array(n * 4);
    this.lines = new Uint8Array(n * 4);
    const shapes = data.shapes;
    if (shapes?.kind === 'polygons') {
      const count = shapes.starts[n];
      this.polygons = {
        starts: shapes.starts,
        vertices: shapes.vertices,
        fills: new Uint8Array(count * 4),
        lines: new Uint8Array(count * 4)
      };
      this.cellSize = typicalWidth(shapes.starts, shapes.vertices, n);
    }
    this.canvas = h('canvas', {
      class: 'sds-deck-canvas',
      role: 'application',
      'aria-roledescription': 'spatial view',
      'aria-label':
        `${n.toLocaleString()} cells. Drag or arrow keys to pan; wheel, + and - to zoom.`,
      tabindex: '0'
    });
    this.node = h('div', { class: 'sds-deck-stage' }, this.canvas);
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
      this.observer = new IntersectionObserver(entries => {
        const visible = entries.some(e => e.isIntersecting);
        if (visible !== this.onScreen) {
          this.onScreen = visible;
          if (visible) {
            void this.ensureDeck();
          } else {
            this.release();
          }
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

  /** Whether a deck.gl instance (a WebGL context) is alive now. */
  get live(): boolean {
    return this.deck !== null;
  }

  get range(): [number, number] {
    const [w, hgt] = this.size;
    return zoomRange(this.payload.bounds, w || 1, hgt || 1);
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
    this.viewState = { target: [vs.target[0], vs.target[1]], zoom };
    this.mode = mode;
    this.deck?.setView(this.viewState, this.range);
    this.node.dataset.zoom = zoom.toFixed(4);
    const drawn = this.modeAt(zoom);
    if (drawn !== this.cellMode) {
      this.cellMode = drawn;
      this.node.dataset.cells = drawn;
      this.sync();
    }
    this.node.dataset.target = this.viewState.target.map(v => v.toFixed(3)).join(',');
    this.callbacks.onView?.(this.viewState, this.region());
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
    const src = document.createElement('canvas');
    src.width = img.width;
    src.height = img.height;
    src.getContext('2d')?.putImageData(new ImageData(rgba as never, img.width, img.height), 0, 0);
    this.imageSource = src; // a new object: deck uploads it as a new texture
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
    this.tiles = frame.tiles.map(tile => ({ id: tile.key, source: this.bitmap(tile.rgba!, tile.width, tile.height), bounds: tile.bounds }));
    this.node.dataset.tileWanted = String(frame.level);
    this.deck?.setImageLayers(this.scene());
  }

  private bitmap(rgba: Uint8ClampedArray, width: number, height: number): HTMLCanvasElement {
    let src = this.bitmaps.get(rgba);
    if (!src) {
      src = document.createElement('canvas');
      src.width = width;
      src.height = height;
      src.getContext('2d')?.putImageData(new ImageData(rgba as never, width, height), 0, 0);
      this.bitmaps.set(rgba, src);
    }
    return src;
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
    const colorOf = colorFn(color, value, packColor(none));
    const packed = new Uint32Array(this.colors.buffer, this.colors.byteOffset, this.payload.n_cells);
    const lines = new Uint32Array(this.lines.buffer, this.lines.byteOffset, this.payload.n_cells);
    const outline = 0xbe000000; // black, alpha 190
    for (let i = 0; i < packed.length; i++) {
      const c = colorOf(i);
      packed[i] = c;
      lines[i] = c >>> 24 ? outline : 0;
    }
    const p = this.polygons;
    if (p) {
      // per vertex, as deck's binary polygons take colors: the fill is the cell's color, so is the outline
      const fills = new Uint32Array(p.fills.buffer, p.fills.byteOffset, p.fills.length / 4);
      const edges = new Uint32Array(p.lines.buffer, p.lines.byteOffset, p.lines.length / 4);
      for (let i = 0; i < packed.length; i++) {
        fills.fill(packed[i], p.starts[i], p.starts[i + 1]);
      }
      edges.set(fills);
    }
    this.colorVersion++;
    this.sync();
  }

  /** Push the layers' state to deck (when there is one). */
  sync(): void {
    this.deck?.setScene(this.scene());
  }

  private scene(): DeckScene {
    const img = this.payload.image;
    if (img && this.data.image && !this.imageSource) {
      const src = document.createElement('canvas');
      src.width = img.width;
      src.height = img.height;
      src.getContext('2d')?.putImageData(new ImageData(this.data.image as never, img.width, img.height), 0, 0);
      this.imageSource = src;
    }
    return {
      cells: { n: this.payload.n_cells, positions: this.positions, colors: this.colors, lines: this.lines },
      polygons: this.polygons,
      cellMode: this.cellMode,
      radii: this.data.shapes?.kind === 'circles' ? this.data.shapes.radius : null,
      radius: Math.max(0.5, (this.payload.point_size || 2) / 2),
      cellsVisible: this.cellsVisible,
      cellsOpacity: this.cellsOpacity,
      outline: (this.payload.point_size || 2) >= 3,
      image: img && this.imageSource ? { source: this.imageSource, bounds: img.bounds } : null,
      tiles: this.tiles,
      imageVisible: this.imageVisible,
      colorVersion: this.colorVersion
    };
  }

  private async ensureDeck(): Promise<void> {
    if (this.deck || this.creating || this.disposed || !this.onScreen) {
      return this.creating ?? undefined;
    }
    this.creating = (async () => {
      const { DeckView } = await import('./deck');
      if (this.disposed || !this.onScreen || this.deck) {
        return;
      }
      if (!this.viewState) {
        this.resized();
      }
      const vs = this.viewState ?? this.framed('saved');
      const created = now();
      let frames = 0;
      let lastFrame = created;
      this.deck = new DeckView(this.canvas, vs, this.range, {
        onViewState: next => this.apply(next, 'user'),
        onHover: (index) => this.callbacks.onHover?.(index),
        onClick: index => this.callbacks.onPin?.(index),
        onError: err => {
          this.node.dataset.error = err.message;
        },
        onFrame: () => {
          // User Timing: the first draw (deck created to first frame), then every frame's interval
          const t = now();
          const detail: Record<string, unknown> = { n_cells: this.payload.n_cells, renderer: 'webgl' };
          if (frames === 0) {
            Object.assign(detail, { drawn: this.inView(), width: this.canvas.width, height: this.canvas.height });
          }
          measure(frames === 0 ? 'sds:canvas-draw' : 'sds:frame', frames === 0 ? created : lastFrame, t, detail);
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
    this.observer?.disconnect();
    this.resize?.disconnect();
    this.release();
  }

  /** How cells are drawn at `zoom` (the same rule as the 2D drawing's, cellModeAt). */
  private modeAt(zoom: number): CellMode {
    return this.polygons ? cellModeAt(this.cellSize, Math.pow(2, zoom)) : 'points';
  }

  /** How cells are drawn now (points, filled or outlined polygons). */
  get drawnAs(): CellMode {
    return this.cellMode;
  }

  /** Cells inside the current region. */
  inView(): number {
    return countInRegion(this.data.x, this.data.y, this.region());
  }
}

export { typicalWidth };
