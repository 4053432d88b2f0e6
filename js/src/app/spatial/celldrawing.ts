/**
 * The cells as the stage draws them, on either tier: what is derived from them once (their
 * index, typical size), their colours, and the drawing of the moment: every cell for the GPU
 * tier's stock layers, or (software tier) the geometry of the cells near the view while few are
 * and a CPU raster of them beyond. Also what is under the pointer (CPU picking through the
 * index). The stage (spatial.ts) owns the camera and deck; this owns the cells' side of its scene.
 */

import type { Region, ViewState } from './camera';
import { spacingOf } from './camera';
import { buildIndex, containing, countIn, forEachIn, nearest, type CellIndex } from './cellindex';
import { MARGIN, covers, grow, lodFor, planRaster, rasterizeCells, stale, MOVING_RESOLUTION, type RasterPlan } from './celllod';
import { OUTLINE, polygonsOf } from './geometry';
import type { CellLayerData, CellMode, CellRaster, DeckScene, GpuCells, Tier } from './layers/scene';
import { cellModeAt, colorFn, packColor, typicalWidth, type CanvasData } from './raster';
import { measure, now } from './tier';
import type { CanvasPayload } from '../shared/types';
import { deviceRatio } from '../shared/dom';

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

/** How near the pointer (CSS px, beyond a disc's radius) a cell is picked. */
export const PICK_SLOP = 3;

/** Device pixels per CSS pixel as the views draw (`deviceRatio`, the one rule). */
export const devicePixels = deviceRatio;

/** What the cells' drawing reads of its stage (read each time: the stage's data and tier may change). */
export type CellHost = {
  readonly payload: CanvasPayload;
  readonly data: CanvasData;
  readonly tier: Tier;
  readonly viewState: ViewState | null;
  readonly node: HTMLElement;
  readonly cellsVisible: boolean;
  readonly size: [number, number];
  region(): Region;
};

export class CellDrawing {
  /** The grid over the cells, built once: what views, rasters and picking read. */
  readonly index: CellIndex;
  /** Whether the index came from another figure of the same cells. */
  readonly shared: boolean;
  /** A typical cell's width in data units (from its outline), to pick how cells are drawn at a zoom. */
  cellSize = 0;
  /** A circles tissue's typical width (twice the median radius). */
  readonly circleSize: number;
  /** How cells are drawn now (points, filled or outlined polygons). */
  mode: CellMode = 'points';
  /** The GPU tier's cells: every cell's position (interleaved once) and the colors of the current coloring. */
  gpuCells: GpuCells | null = null;
  private positions: Float32Array | null = null;
  /** Packed RGBA of cell i (alpha 0: hidden), from the coloring setColors last got. */
  colorOf: (i: number) => number = () => 0xffb4771f;
  colorVersion = 0;
  /** The cells drawn as geometry: which ones (and the region they cover), or null. */
  subset: { cells: CellLayerData; region: Region; version: number; mode: CellMode } | null = null;
  /** The cells drawn as a raster: its plan, picture and the coloring it was made with. */
  raster: { plan: RasterPlan; layer: CellRaster; version: number } | null = null;

  constructor(private readonly host: CellHost) {
    const started = now();
    const derived = cellsDerived(host.payload.cells_key, host.data);
    this.index = derived.index;
    this.cellSize = derived.cellSize;
    this.circleSize = derived.circleSize;
    this.shared = !!derived.shared;
    measure('sds:cell-index', started, now(), { n_cells: host.payload.n_cells, shared: derived.shared });
  }

  /** Recolor the cells: `color` and `value` as the canvas payload describes them. */
  setColors(color: CanvasPayload['color'], value: CanvasData['value'], none: string): void {
    this.colorOf = colorFn(color, value, packColor(none));
    this.colorVersion++;
  }

  /** The shapes changed (outline tiles gathered, or back to circles): every drawing is made again. */
  reshaped(cellSize: number, zoom: number): void {
    this.cellSize = cellSize;
    this.shapeExtent = null;
    this.mode = this.modeAt(zoom);
    this.subset = null;
    this.raster = null;
    this.gpuCells = null;
  }

  /**
   * How far a typical cell reaches from its centre on screen now (CSS px): its disc or outline
   * at this zoom, else the point size drawn. The annotate veil's hole over a selected cell.
   */
  cellRadius(): number {
    const shapes = this.host.data.shapes;
    const point = (this.host.payload.point_size || 2) / 2;
    if (!shapes || (shapes.kind === 'polygons' && this.mode === 'points')) {
      return point;
    }
    this.shapeExtent ??= this.cellExtent();
    return Math.max(point, (this.shapeExtent / 2) * Math.pow(2, this.host.viewState?.zoom ?? 0));
  }

  /** `cellExtent()` of a tissue with shapes, worked out once (a median over every cell). */
  private shapeExtent: number | null = null;

  /** A typical cell's size in data units (what the zoom-in limit shows filling the view). */
  cellExtent(): number {
    const shapes = this.host.data.shapes;
    if (shapes?.kind === 'polygons' && this.cellSize > 0) {
      return this.cellSize;
    }
    if (shapes?.kind === 'circles' && shapes.radius.length > 0) {
      return 2 * medianOf(shapes.radius);
    }
    return spacingOf(this.host.payload.bounds, this.host.payload.n_cells);
  }

  /** Device pixels per data unit now. */
  private deviceScale(): number {
    return Math.pow(2, this.host.viewState?.zoom ?? 0) * devicePixels();
  }

  /** How far beyond a cell's centre its disc reaches, in data units, for the raster's pad. */
  private pad(scale: number): number {
    const shapes = this.host.data.shapes;
    const disc = Math.max(1, (this.host.payload.point_size || 2) * devicePixels()) / scale;
    return Math.max(disc, shapes?.kind === 'polygons' ? this.cellSize : 0, shapes?.kind === 'circles' ? maxOf(shapes.radius) * 2 : 0);
  }

  /**
   * Bring the cells' layer up to the view: geometry of the cells near the view when few are,
   * else a raster. `settled`: the camera rests (or the colors changed), so a raster that is
   * not pixel for pixel the screen's is made again now; while moving, only a missing one is.
   * Returns whether the layer changed.
   */
  refresh(settled: boolean): boolean {
    if (!this.host.viewState) {
      return false;
    }
    const view = this.host.region();
    const scale = this.deviceScale();
    if (this.host.tier === 'gpu') {
      return this.refreshGpu(view);
    }
    if (lodFor(this.index, grow(view)) === 'geometry') {
      this.raster = null;
      return this.refreshSubset(view);
    }
    this.subset = null;
    const bounds = this.host.payload.bounds;
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
    this.host.node.dataset.lod = 'raster';
    return true;
  }

  /** The geometry of the cells near `view`, made again when it no longer covers the view. Returns whether it changed. */
  private refreshSubset(view: Region): boolean {
    const s = this.subset;
    const region = grow(view, MARGIN * 2);
    // kept while it covers the view and is not much larger than needed (zooming in: fewer cells)
    const oversized = s !== null && s.region[2] - s.region[0] > 2 * (region[2] - region[0]);
    if (s && s.version === this.colorVersion && s.mode === this.mode && covers(s.region, view) && !oversized) {
      return false;
    }
    this.subset = { cells: this.geometryIn(region), region, version: this.colorVersion, mode: this.mode };
    this.host.node.dataset.lod = 'geometry';
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
    if (this.host.data.shapes?.kind === 'polygons' && this.mode !== 'points') {
      return this.refreshSubset(view) || changed;
    }
    changed ||= this.subset !== null;
    this.subset = null;
    this.host.node.dataset.lod = 'geometry';
    return changed;
  }

  /** Every cell for the GPU tier's stock layers: positions (made once), fill and outline colors. */
  private allCells(): GpuCells {
    const { x, y } = this.host.data;
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
    const shapes = this.host.data.shapes;
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

  /** The raster of the cells over `plan` (paintPoints through the index), as a canvas for deck's texture. */
  private rasterOf(plan: RasterPlan): CellRaster {
    const started = now();
    const shapes = this.host.data.shapes;
    const point = (this.host.payload.point_size || 2) * devicePixels() * (plan.scale / this.deviceScale());
    // polygons: each its own shape once big enough to show one (not points), as in the 2D
    // drawing; smaller, a square of its size by the area it covers (footprint.ts: no stripes)
    const diameter =
      shapes?.kind === 'circles'
        ? { radius: shapes.radius, scale: plan.scale }
        : shapes?.kind === 'polygons'
          ? this.mode === 'points'
            ? { footprint: this.cellSize * plan.scale }
            : { polygons: shapes }
          : point;
    const outline = shapes?.kind === 'polygons' ? this.mode !== 'points' : (this.host.payload.point_size || 2) >= 3;
    const { pixels, drawn } = rasterizeCells(plan, this.index, this.host.data.x, this.host.data.y, this.colorOf, diameter, 33, outline);
    const source = document.createElement('canvas');
    source.width = plan.width;
    source.height = plan.height;
    const ctx = source.getContext('2d');
    ctx?.putImageData(new ImageData(pixels as never, plan.width, plan.height), 0, 0);
    measure('sds:cell-raster', started, now(), { n_cells: this.host.payload.n_cells, drawn, width: plan.width, height: plan.height });
    this.host.node.dataset.raster = `${plan.width}x${plan.height}`;
    return { source, bounds: plan.region };
  }

  /** The geometry of the cells in `region`: positions, colors and shapes of those only. */
  private geometryIn(region: Region): CellLayerData {
    const picked: number[] = [];
    forEachIn(this.index, this.host.data.x, this.host.data.y, grow(region, 0.02), i => picked.push(i));
    const n = picked.length;
    const positions = new Float32Array(n * 2);
    const colors = new Uint32Array(n);
    const lines = new Uint32Array(n);
    const shapes = this.host.data.shapes;
    const radii = shapes?.kind === 'circles' ? new Float32Array(n) : null;
    const outline = OUTLINE;
    let vertexCount = 0;
    for (let k = 0; k < n; k++) {
      const i = picked[k];
      positions[2 * k] = this.host.data.x[i];
      positions[2 * k + 1] = this.host.data.y[i];
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
    if (shapes?.kind === 'polygons' && this.mode !== 'points') {
      polygons = polygonsOf(picked, shapes.starts, shapes.vertices, colors, vertexCount);
    }
    return { n, positions, colors: new Uint8Array(colors.buffer), lines: new Uint8Array(lines.buffer), radii, polygons, ids: Uint32Array.from(picked) };
  }

  /** The cell under the pointer at (sx, sy) CSS px of the view, or -1: picked on the CPU through the index. */
  pick(sx: number, sy: number): number {
    const vs = this.host.viewState;
    if (!vs || !this.host.cellsVisible || sx < 0 || sy < 0) {
      return -1;
    }
    const scale = Math.pow(2, vs.zoom);
    const px = vs.target[0] + (sx - this.host.size[0] / 2) / scale;
    const py = vs.target[1] + (sy - this.host.size[1] / 2) / scale;
    const visible = (i: number) => this.colorOf(i) >>> 24 !== 0;
    const { x, y } = this.host.data;
    const shapes = this.host.data.shapes;
    if (shapes?.kind === 'polygons' && this.mode !== 'points') {
      return containing(this.index, x, y, shapes.starts, shapes.vertices, px, py, this.cellSize * 1.5, visible);
    }
    if (shapes?.kind === 'circles') {
      const slop = PICK_SLOP / scale;
      const reach = maxOf(shapes.radius) + slop;
      const i = nearest(this.index, x, y, px, py, reach, j => visible(j) && Math.hypot(x[j] - px, y[j] - py) <= shapes.radius[j] + slop);
      return i;
    }
    const radius = Math.max(0.5, (this.host.payload.point_size || 2) / 2);
    return nearest(this.index, x, y, px, py, (radius + PICK_SLOP) / scale, visible);
  }

  /** The ring of hovered cell `i` (-1: none), or null. */
  highlight(i: number): DeckScene['highlight'] {
    if (i < 0 || !this.host.cellsVisible) {
      return null;
    }
    const shapes = this.host.data.shapes;
    const radius = shapes?.kind === 'circles' ? shapes.radius[i] : shapes?.kind === 'polygons' && this.mode !== 'points' ? this.cellSize / 2 : null;
    return { position: [this.host.data.x[i], this.host.data.y[i]], radius };
  }

  /** How cells are drawn at `zoom` (the same rule as the 2D drawing's, cellModeAt). */
  modeAt(zoom: number): CellMode {
    return this.host.data.shapes?.kind === 'polygons' ? cellModeAt(this.cellSize, Math.pow(2, zoom)) : 'points';
  }

  /** Cells inside `region` (through the index: only the bins over it are read). */
  countIn(region: Region): number {
    return countIn(this.index, this.host.data.x, this.host.data.y, region);
  }
}

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
