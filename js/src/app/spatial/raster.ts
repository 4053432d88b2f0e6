/**
 * Cells as points, rasterised straight into an RGBA pixel buffer: one pass over
 * typed arrays, no per-point canvas call, so a million cells draw in tens of ms.
 */

import { splitDrawing, splitReply, typed } from '../shared/buffers';
import type { Buffer } from '../shared/transport';
import type { Bounds, CanvasColor, CanvasPayload } from '../shared/types';

export { typed };

/** The cells' outlines (cell i: vertices starts[i] to starts[i + 1], x,y pairs) or radii. */
export type CellShapeData =
  | { kind: 'polygons'; starts: Uint32Array; vertices: Float32Array }
  | { kind: 'circles'; radius: Float32Array };

export type CanvasData = {
  x: Float32Array;
  y: Float32Array;
  value: Uint8Array | Uint16Array | Float32Array | null;
  image: Uint8ClampedArray | null;
  /** Present when the table annotates polygons or circles (absent for older servers). */
  shapes?: CellShapeData | null;
};

/** A whole canvas drawing's buffers (x, y, values, image, shapes), split by its generated layout. */
export function decodeCanvas(payload: CanvasPayload, buffers: Buffer[]): CanvasData {
  const split = splitDrawing(payload, buffers);
  const image = split.image ? new Uint8ClampedArray(split.image.buffer, split.image.byteOffset, split.image.length) : null;
  return { x: split.x, y: split.y, value: split.values ?? null, image, shapes: cellShapes(payload.n_cells, split) };
}

/**
 * The cells' shapes from their split buffers (a drawing's or a `cells` reply's): polygons when
 * `starts` came, circles when `radius` did. The layout checked the lengths; the last start must
 * still point at the end of the vertices.
 */
export function cellShapes(n: number, split: { starts?: Uint32Array; vertices?: Float32Array; radius?: Float32Array }): CellShapeData | null {
  if (split.starts && split.vertices) {
    if (split.starts[n] * 2 !== split.vertices.length) {
      throw new Error(`canvas polygons: the last of ${n + 1} starts is ${split.starts[n]}, there are ${split.vertices.length / 2} vertices`);
    }
    return { kind: 'polygons', starts: split.starts, vertices: split.vertices };
  }
  return split.radius ? { kind: 'circles', radius: split.radius } : null;
}

/**
 * A color column's buffer as per-cell values, typed as the `color_values` layout says: category
 * codes (uint8 when `codes: "uint8"`, else uint16) or float32 values.
 */
export function colorValues(color: CanvasColor, buffer: Buffer): Uint8Array | Uint16Array | Float32Array {
  const { values } = splitReply('color_values', color, [buffer]);
  if (!values) {
    throw new Error('a color column without a coloring (mode "none") has no values');
  }
  return values;
}

/** Data → screen: screen = s·R(θ)·(p − target) + centre. */
export type View = {
  width: number;
  height: number;
  target: [number, number];
  /** Pixels per data unit. */
  scale: number;
  /** Degrees. */
  rotation: number;
};

/** The affine (a, b, c, d, e, f) of a view, as canvas `setTransform` takes it. */
export function affine(view: View): [number, number, number, number, number, number] {
  const t = (view.rotation * Math.PI) / 180;
  const a = view.scale * Math.cos(t);
  const b = view.scale * Math.sin(t);
  const c = -b;
  const d = a;
  const [tx, ty] = view.target;
  return [a, b, c, d, view.width / 2 - (a * tx + c * ty), view.height / 2 - (b * tx + d * ty)];
}

/** The saved viewport: deck.gl's orthographic zoom, 2^zoom pixels per unit. */
export function savedView(payload: CanvasPayload, width: number, height: number): View {
  const vp = payload.viewport;
  return {
    width,
    height,
    target: vp?.target ?? centre(payload.bounds),
    scale: Math.pow(2, vp?.zoom ?? 0),
    rotation: vp?.rotation ?? 0
  };
}

/** All cells in view. */
export function fitView(bounds: Bounds, width: number, height: number): View {
  const bw = Math.max(bounds[2] - bounds[0], 1e-9);
  const bh = Math.max(bounds[3] - bounds[1], 1e-9);
  return {
    width,
    height,
    target: centre(bounds),
    scale: 0.95 * Math.min(width / bw, height / bh),
    rotation: 0
  };
}

function centre(b: Bounds): [number, number] {
  return [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2];
}

/** "#rrggbb" / "#rgb" / "#rrggbbaa" → RGBA packed for a little-endian Uint32 view. */
export function packColor(hex: string, fallback = 0xffb4771f): number {
  const m = /^#?([0-9a-f]{3,8})$/i.exec((hex ?? '').trim());
  if (!m) {
    return fallback;
  }
  let s = m[1];
  if (s.length === 3 || s.length === 4) {
    s = [...s].map(ch => ch + ch).join('');
  }
  if (s.length !== 6 && s.length !== 8) {
    return fallback;
  }
  const r = parseInt(s.slice(0, 2), 16);
  const g = parseInt(s.slice(2, 4), 16);
  const b = parseInt(s.slice(4, 6), 16);
  const a = s.length === 8 ? parseInt(s.slice(6, 8), 16) : 255;
  return ((a << 24) | (b << 16) | (g << 8) | r) >>> 0;
}

/** Per-point colours (packed RGBA) as a function of the point index. */
export function colorFn(color: CanvasColor, value: CanvasData['value'], none: number): (i: number) => number {
  if (color.mode === 'categorical' && value) {
    const palette = Uint32Array.from(color.colors ?? [], c => packColor(c, none));
    const missing = 0x80808080; // grey, half alpha: codes outside the categories
    return i => {
      const code = value[i];
      return code < palette.length ? palette[code] : missing;
    };
  }
  if (color.mode === 'continuous' && value) {
    const lut = Uint32Array.from(color.lut?.length ? color.lut : ['#440154', '#fde725'], c =>
      packColor(c, none)
    );
    const lo = color.min;
    const span = color.max - color.min || 1;
    const top = lut.length - 1;
    return i => {
      const v = value[i];
      if (!Number.isFinite(v)) {
        return 0x80808080;
      }
      const k = Math.round(((v - lo) / span) * top);
      return lut[k < 0 ? 0 : k > top ? top : k];
    };
  }
  return () => none;
}

/** Offsets (dx, dy pairs) of a filled disc `diameter` pixels across, centred on the point. */
export function disc(diameter: number): Int32Array {
  const r = diameter / 2;
  const lo = -Math.floor((diameter - 1) / 2);
  // the disc's centre, in the same offsets: between pixels for even diameters
  const c = lo + (diameter - 1) / 2;
  const offs: number[] = [];
  for (let dy = lo; dy < lo + diameter; dy++) {
    for (let dx = lo; dx < lo + diameter; dx++) {
      const ex = dx - c;
      const ey = dy - c;
      if (diameter <= 2 || ex * ex + ey * ey <= r * r) {
        offs.push(dx, dy);
      }
    }
  }
  return Int32Array.from(offs);
}

/**
 * Draw the points over `pixels` (RGBA, `width`×`height`, row-major, top row first).
 * Returns how many points landed in view.
 */
export function rasterizePoints(
  pixels: Uint8ClampedArray,
  data: CanvasData,
  color: CanvasColor,
  view: View,
  diameter: number,
  noneColor = '#1f77b4'
): number {
  const colorOf = colorFn(color, data.value, packColor(noneColor));
  return paintPoints(pixels, view, data.x, data.y, colorOf, diameter, null);
}

/** Offsets of `disc(size)` and, per offset, whether it lies on the disc's edge (the outline ring). */
function ringOf(size: number): { offs: Int32Array; edge: Uint8Array } {
  const offs = disc(size);
  const inside = new Set<number>();
  for (let k = 0; k < offs.length; k += 2) {
    inside.add(offs[k] * 4096 + offs[k + 1]);
  }
  const edge = new Uint8Array(offs.length / 2);
  for (let k = 0; k < offs.length; k += 2) {
    const dx = offs[k];
    const dy = offs[k + 1];
    edge[k / 2] = [[1, 0], [-1, 0], [0, 1], [0, -1]].some(([ex, ey]) => !inside.has((dx + ex) * 4096 + dy + ey)) ? 1 : 0;
  }
  return { offs, edge };
}

/** A packed RGBA colour darkened as the outline (black at alpha 190) over it would show. */
function darkened(col: number): number {
  const k = 65 / 255;
  const r = Math.round((col & 255) * k);
  const g = Math.round(((col >>> 8) & 255) * k);
  const b = Math.round(((col >>> 16) & 255) * k);
  return ((col & 0xff000000) | (b << 16) | (g << 8) | r) >>> 0;
}

/** Polygon cells (cell i: vertices starts[i] to starts[i + 1], x, y pairs in data units). */
export type PolygonShapes = { starts: Uint32Array; vertices: Float32Array };

/**
 * How big a cell is drawn: a disc of one diameter in pixels; a disc of each cell's radius
 * (`radius[i] · scale · 2` px; circles such as Visium spots); or each cell's own polygon.
 */
export type CellSizing = number | { radius: Float32Array; scale: number } | { polygons: PolygonShapes };

/**
 * The rasteriser behind rasterizePoints and the WebGL view's raster of many cells. The cells:
 * all (`cells` null), or those of `cells.order` in the slices `cells.spans` (start, end pairs;
 * the index's bins over a region). Each as `diameter` says (discs 1 to 32 px across, or its
 * polygon) in `colorOf(i)` (alpha 0: hidden), with a darkened one-pixel ring when `outline`
 * and the cell is 3 px or more across.
 */
export function paintPoints(
  pixels: Uint8ClampedArray,
  view: View,
  x: Float32Array,
  y: Float32Array,
  colorOf: (i: number) => number,
  diameter: CellSizing,
  cells: { order: Uint32Array; spans: Uint32Array } | null,
  outline = false
): number {
  const out = new Uint32Array(pixels.buffer, pixels.byteOffset, view.width * view.height);
  const spans = cells ? cells.spans : Uint32Array.of(0, Math.min(x.length, y.length));
  const order = cells ? cells.order : null;
  if (typeof diameter !== 'number') {
    return 'polygons' in diameter
      ? paintPolygons(out, view, x, y, colorOf, diameter.polygons, spans, order, outline)
      : paintSized(out, view, x, y, colorOf, diameter, spans, order, outline);
  }
  const size = Math.max(1, Math.min(32, Math.round(diameter)));
  return size === 1 ? paintPixels(out, view, x, y, colorOf, spans, order) : paintDiscs(out, view, x, y, colorOf, size, spans, order, outline);
}

type Spans = Uint32Array;

/** Cells of one pixel: one write each (most cells when many share a pixel, zoomed out). */
function paintPixels(out: Uint32Array, view: View, x: Float32Array, y: Float32Array, colorOf: (i: number) => number, spans: Spans, order: Uint32Array | null): number {
  const { width: w, height: hgt } = view;
  const [a, b, c, d, e, f] = affine(view);
  let drawn = 0;
  for (let s = 0; s < spans.length; s += 2) {
    const end = spans[s + 1];
    for (let k = spans[s]; k < end; k++) {
      const i = order ? order[k] : k;
      const xi = x[i];
      const yi = y[i];
      const fx = a * xi + c * yi + e;
      const fy = b * xi + d * yi + f;
      // NaN positions (cells outside the annotated element) fail these tests
      if (fx >= 0 && fx < w && fy >= 0 && fy < hgt) {
        const col = colorOf(i);
        if (col >>> 24 !== 0) {
          out[(fy | 0) * w + (fx | 0)] = col;
          drawn++;
        }
      }
    }
  }
  return drawn;
}

/**
 * Discs of one `size` (2 to 32 px): the disc's pixels as offsets into the buffer, made once, so
 * a disc wholly inside is written without a test per pixel; one at the edge is clipped.
 */
function paintDiscs(
  out: Uint32Array,
  view: View,
  x: Float32Array,
  y: Float32Array,
  colorOf: (i: number) => number,
  size: number,
  spans: Spans,
  order: Uint32Array | null,
  outline: boolean
): number {
  const { width: w, height: hgt } = view;
  const [a, b, c, d, e, f] = affine(view);
  const { offs, edge } = ringOf(size);
  const m = offs.length / 2;
  const linear = new Int32Array(m);
  let lo = 0;
  let hi = 0;
  for (let q = 0; q < m; q++) {
    linear[q] = offs[2 * q + 1] * w + offs[2 * q];
    lo = Math.min(lo, offs[2 * q], offs[2 * q + 1]);
    hi = Math.max(hi, offs[2 * q], offs[2 * q + 1]);
  }
  const ringed = outline && size >= 3;
  let drawn = 0;
  for (let s = 0; s < spans.length; s += 2) {
    const end = spans[s + 1];
    for (let k = spans[s]; k < end; k++) {
      const i = order ? order[k] : k;
      const xi = x[i];
      const yi = y[i];
      const px = Math.round(a * xi + c * yi + e);
      const py = Math.round(b * xi + d * yi + f);
      if (!(px >= -size && px < w + size && py >= -size && py < hgt + size)) {
        continue; // out of view, or no position (NaN)
      }
      const col = colorOf(i);
      if (col >>> 24 === 0) {
        continue; // a hidden category
      }
      drawn++;
      const line = ringed ? darkened(col) : col;
      if (px + lo >= 0 && px + hi < w && py + lo >= 0 && py + hi < hgt) {
        const at = py * w + px;
        if (ringed) {
          for (let q = 0; q < m; q++) {
            out[at + linear[q]] = edge[q] ? line : col;
          }
        } else {
          for (let q = 0; q < m; q++) {
            out[at + linear[q]] = col;
          }
        }
        continue;
      }
      stampClipped(out, w, hgt, px, py, offs, edge, col, line);
    }
  }
  return drawn;
}

/** A disc (its offsets and ring) at (px, py), only the pixels inside the w × hgt raster: a disc across the edge. */
function stampClipped(out: Uint32Array, w: number, hgt: number, px: number, py: number, offs: Int32Array, edge: Uint8Array, col: number, line: number): void {
  for (let q = 0; q < offs.length; q += 2) {
    const qx = px + offs[q];
    const qy = py + offs[q + 1];
    if (qx >= 0 && qx < w && qy >= 0 && qy < hgt) {
      out[qy * w + qx] = edge[q >> 1] ? line : col;
    }
  }
}

/** Discs of each cell's own size (`radius[i] · scale · 2`, 1 to 32 px): circles such as Visium spots. */
function paintSized(
  out: Uint32Array,
  view: View,
  x: Float32Array,
  y: Float32Array,
  colorOf: (i: number) => number,
  perCell: { radius: Float32Array; scale: number },
  spans: Spans,
  order: Uint32Array | null,
  outline: boolean
): number {
  const { width: w, height: hgt } = view;
  const [a, b, c, d, e, f] = affine(view);
  const rings: ({ offs: Int32Array; edge: Uint8Array } | undefined)[] = [];
  let drawn = 0;
  for (let s = 0; s < spans.length; s += 2) {
    const end = spans[s + 1];
    for (let k = spans[s]; k < end; k++) {
      const i = order ? order[k] : k;
      const fx = a * x[i] + c * y[i] + e;
      const fy = b * x[i] + d * y[i] + f;
      const size = Math.max(1, Math.min(32, Math.round(2 * perCell.radius[i] * perCell.scale)));
      if (size === 1) {
        if (fx >= 0 && fx < w && fy >= 0 && fy < hgt) {
          const col = colorOf(i);
          if (col >>> 24 !== 0) {
            out[(fy | 0) * w + (fx | 0)] = col;
            drawn++;
          }
        }
        continue;
      }
      const px = Math.round(fx);
      const py = Math.round(fy);
      if (!(px >= -size && px < w + size && py >= -size && py < hgt + size)) {
        continue;
      }
      const col = colorOf(i);
      if (col >>> 24 === 0) {
        continue;
      }
      const { offs, edge } = rings[size] ?? (rings[size] = ringOf(size));
      const line = outline && size >= 3 ? darkened(col) : col;
      drawn++;
      stampClipped(out, w, hgt, px, py, offs, edge, col, line);
    }
  }
  return drawn;
}

/**
 * Each cell's own polygon, filled where pixel centres fall inside it (even-odd, row by row),
 * so that big and small cells keep their sizes and shapes; a polygon too small to hold a pixel
 * centre, or without vertices, is the pixel at its position, so no cell vanishes.
 */
function paintPolygons(
  out: Uint32Array,
  view: View,
  x: Float32Array,
  y: Float32Array,
  colorOf: (i: number) => number,
  shapes: PolygonShapes,
  spans: Spans,
  order: Uint32Array | null,
  outline: boolean
): number {
  const { width: w, height: hgt } = view;
  const [a, b, c, d, e, f] = affine(view);
  const { starts, vertices } = shapes;
  const mask = new PolygonMask();
  let drawn = 0;
  /** The raster pixel under cell i's position, or -1 when it is out of view (or has none). */
  const pixelOf = (i: number): number => {
    const fx = a * x[i] + c * y[i] + e;
    const fy = b * x[i] + d * y[i] + f;
    return fx >= 0 && fx < w && fy >= 0 && fy < hgt ? (fy | 0) * w + (fx | 0) : -1;
  };
  for (let s = 0; s < spans.length; s += 2) {
    const end = spans[s + 1];
    for (let k = spans[s]; k < end; k++) {
      const i = order ? order[k] : k;
      const polygon = mask.project(vertices, starts[i], starts[i + 1], a, b, c, d, e, f);
      // out of view (NaN vertices or positions fail these tests too)
      if (polygon ? !mask.meets(w, hgt) : pixelOf(i) < 0) {
        continue;
      }
      const col = colorOf(i);
      if (col >>> 24 === 0) {
        continue; // a hidden category
      }
      drawn++;
      if (!polygon || !mask.fill(w, hgt)) {
        // no polygon, or one under a pixel: the pixel at its position
        const p = pixelOf(i);
        if (p >= 0) {
          out[p] = col;
        }
        continue;
      }
      mask.paint(out, w, outline ? darkened(col) : col, col, outline);
    }
  }
  return drawn;
}

/**
 * One polygon at a time in screen pixels: its vertices projected, then the pixels whose
 * centres it covers as a mask over its bounding box (clipped to the raster and a pixel
 * around it), from which the fill and its one-pixel ring are written. Buffers grow and are reused.
 */
class PolygonMask {
  private sx = new Float64Array(64);
  private sy = new Float64Array(64);
  private n = 0;
  private bits = new Uint8Array(256);
  private crossings = new Float64Array(64);
  private c0 = 0;
  private r0 = 0;
  private bw = 0;
  private bh = 0;
  // the projected polygon's bounding box in pixels (fields: no array made per cell)
  private x0 = 0;
  private y0 = 0;
  private x1 = 0;
  private y1 = 0;

  /** Project vertices v0..v1 and take their bounding box; false when there are fewer than 3 (no polygon). */
  project(vertices: Float32Array, v0: number, v1: number, a: number, b: number, c: number, d: number, e: number, f: number): boolean {
    const n = v1 - v0;
    if (n < 3) {
      return false;
    }
    if (this.sx.length < n) {
      this.sx = new Float64Array(2 * n);
      this.sy = new Float64Array(2 * n);
      this.crossings = new Float64Array(2 * n);
    }
    let x0 = Infinity;
    let y0 = Infinity;
    let x1 = -Infinity;
    let y1 = -Infinity;
    for (let j = 0; j < n; j++) {
      const vx = vertices[2 * (v0 + j)];
      const vy = vertices[2 * (v0 + j) + 1];
      const px = a * vx + c * vy + e;
      const py = b * vx + d * vy + f;
      this.sx[j] = px;
      this.sy[j] = py;
      x0 = Math.min(x0, px);
      y0 = Math.min(y0, py);
      x1 = Math.max(x1, px);
      y1 = Math.max(y1, py);
    }
    this.n = n;
    this.x0 = x0;
    this.y0 = y0;
    this.x1 = x1;
    this.y1 = y1;
    return true;
  }

  /** Whether the projected polygon's box reaches into a w × hgt raster (false for NaN vertices). */
  meets(w: number, hgt: number): boolean {
    return this.x1 >= 0 && this.x0 < w && this.y1 >= 0 && this.y0 < hgt;
  }

  /** Mark the pixels whose centres lie inside; false when none does (a polygon under a pixel). */
  fill(w: number, hgt: number): boolean {
    // pixel (col, row) has its centre at (col + 0.5, row + 0.5)
    const c0 = Math.max(-1, Math.ceil(this.x0 - 0.5));
    const c1 = Math.min(w, Math.floor(this.x1 - 0.5));
    const r0 = Math.max(-1, Math.ceil(this.y0 - 0.5));
    const r1 = Math.min(hgt, Math.floor(this.y1 - 0.5));
    const bw = c1 - c0 + 1;
    const bh = r1 - r0 + 1;
    if (bw <= 0 || bh <= 0) {
      return false;
    }
    // a border of empty pixels around the box: a neighbour is read with no bounds test
    const stride = bw + 2;
    const size = stride * (bh + 2);
    if (this.bits.length < size) {
      this.bits = new Uint8Array(2 * size);
    }
    const bits = this.bits;
    bits.fill(0, 0, size);
    this.c0 = c0;
    this.r0 = r0;
    this.bw = bw;
    this.bh = bh;
    const { sx, sy, n, crossings } = this;
    let any = false;
    for (let r = r0; r <= r1; r++) {
      const yc = r + 0.5;
      let m = 0;
      for (let j = 0, k = n - 1; j < n; k = j++) {
        if (sy[j] <= yc !== sy[k] <= yc) {
          const xc = sx[k] + ((yc - sy[k]) / (sy[j] - sy[k])) * (sx[j] - sx[k]);
          let q = m++;
          while (q > 0 && crossings[q - 1] > xc) {
            crossings[q] = crossings[q - 1];
            q--;
          }
          crossings[q] = xc;
        }
      }
      const row = (r - r0 + 1) * stride + 1 - c0;
      for (let p = 0; p + 1 < m; p += 2) {
        const from = Math.max(c0, Math.ceil(crossings[p] - 0.5));
        const to = Math.min(c1, Math.floor(crossings[p + 1] - 0.5));
        for (let q = row + from; q <= row + to; q++) {
          bits[q] = 1;
          any = true;
        }
      }
    }
    return any;
  }

  /** Write the marked pixels inside the raster: `line` where a 4-neighbour is outside (when `ringed` and 3 px across), else `col`. */
  paint(out: Uint32Array, w: number, line: number, col: number, ringed: boolean): void {
    const { bits, c0, r0, bw, bh } = this;
    const stride = bw + 2;
    const ring = ringed && bw >= 3 && bh >= 3;
    const hgt = out.length / w;
    const x0 = Math.max(0, c0);
    const x1 = Math.min(w - 1, c0 + bw - 1);
    for (let ry = 0; ry < bh; ry++) {
      const py = r0 + ry;
      if (py < 0 || py >= hgt) {
        continue;
      }
      const row = (ry + 1) * stride + 1 - c0;
      const at = py * w;
      for (let px = x0; px <= x1; px++) {
        const q = row + px;
        if (bits[q] === 0) {
          continue;
        }
        out[at + px] = ring && (bits[q - 1] & bits[q + 1] & bits[q - stride] & bits[q + stride]) === 0 ? line : col;
      }
    }
  }
}

/** Canvases by the pixels they hold: a redraw reuses them; recolored pixels are a new array, so a new canvas (a new texture for deck). */
const canvases = new WeakMap<Uint8ClampedArray, HTMLCanvasElement>();

/** RGBA pixels as a canvas (what drawImage, toDataURL and deck's BitmapLayer take), made once per array. */
export function rgbaCanvas(rgba: Uint8ClampedArray, width: number, height: number): HTMLCanvasElement {
  let src = canvases.get(rgba);
  if (!src || src.width !== width || src.height !== height) {
    src = document.createElement('canvas');
    src.width = width;
    src.height = height;
    src.getContext('2d')?.putImageData(new ImageData(rgba as never, width, height), 0, 0);
    canvases.set(rgba, src);
  }
  return src;
}

/** A packed RGBA colour as CSS: "#rrggbb" and its opacity. */
export function cssOf(packed: number): [string, number] {
  const hex = (v: number) => (v & 255).toString(16).padStart(2, '0');
  return [`#${hex(packed)}${hex(packed >>> 8)}${hex(packed >>> 16)}`, ((packed >>> 24) & 255) / 255];
}

/** How cells are drawn: centroids, filled outlines (zoomed out), or outlines over a light fill (zoomed in). */
export type CellMode = 'points' | 'filled' | 'outlined';

/** How strongly an outlined cell's fill shows under its outline (the same in WebGL and 2D). */
export const OUTLINED_FILL_OPACITY = 0.45;

/** The median width (larger of the x and y extents) of up to 1,000 cells' outlines, in data units. */
export function typicalWidth(starts: Uint32Array, vertices: Float32Array, n: number): number {
  const step = Math.max(1, Math.floor(n / 1000));
  const widths: number[] = [];
  for (let i = 0; i < n; i += step) {
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (let v = starts[i]; v < starts[i + 1]; v++) {
      const x = vertices[2 * v];
      const y = vertices[2 * v + 1];
      x0 = Math.min(x0, x);
      x1 = Math.max(x1, x);
      y0 = Math.min(y0, y);
      y1 = Math.max(y1, y);
    }
    if (x1 >= x0) {
      widths.push(Math.max(x1 - x0, y1 - y0));
    }
  }
  widths.sort((a, b) => a - b);
  return widths.length ? widths[Math.floor(widths.length / 2)] : 0;
}

/**
 * How polygon cells `cellSize` data units wide are drawn at `pixelsPerUnit`: centroids while a
 * cell would be under 3 px (too many to tell apart), filled outlines up to 14 px, outlines over
 * a light fill beyond. Cells without polygons are points (circles keep their radius either way).
 */
export function cellModeAt(cellSize: number, pixelsPerUnit: number): CellMode {
  if (!(cellSize > 0)) {
    return 'points';
  }
  const px = cellSize * pixelsPerUnit;
  return px < 3 ? 'points' : px < 14 ? 'filled' : 'outlined';
}

/** The cells as SVG path data grouped by packed color, for the 2D drawing and the SVG export. */
export type CellPaths = {
  mode: CellMode;
  /** Packed RGBA color → path data (screen coordinates of `view`). */
  groups: Map<number, string>;
  /** Cells with a part in view. */
  drawn: number;
};

const fmt = (v: number): string => String(Math.round(v * 100) / 100);

/**
 * The cells' shapes (from the canvas reply's `shapes` buffers, as decodeCanvas split them) as
 * path data in `view`: polygons when the zoom makes them legible (cellModeAt), circles of
 * their radius (at least half a pixel); null when the cells are drawn as points.
 * Cells out of view, without a position, or of a hidden category are left out.
 */
export function cellPaths(data: CanvasData, color: CanvasColor, view: View, noneColor = '#1f77b4', cellSize?: number): CellPaths | null {
  const shapes = data.shapes;
  if (!shapes) {
    return null;
  }
  const n = data.x.length;
  const [a, b, c, d, e, f] = affine(view);
  const { width: w, height: hgt } = view;
  const colorOf = colorFn(color, data.value, packColor(noneColor));
  const parts = new Map<number, string[]>();
  const add = (col: number, s: string) => {
    let g = parts.get(col);
    if (!g) {
      parts.set(col, (g = []));
    }
    g.push(s);
  };
  let drawn = 0;
  let mode: CellMode = 'filled';
  if (shapes.kind === 'polygons') {
    mode = cellModeAt(cellSize ?? typicalWidth(shapes.starts, shapes.vertices, n), view.scale);
    if (mode === 'points') {
      return null;
    }
    const { starts, vertices } = shapes;
    for (let i = 0; i < n; i++) {
      const v0 = starts[i];
      const v1 = starts[i + 1];
      if (v1 - v0 < 3) {
        continue;
      }
      const col = colorOf(i);
      if (col >>> 24 === 0) {
        continue;
      }
      let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
      const pts: string[] = [];
      for (let v = v0; v < v1; v++) {
        const px = vertices[2 * v];
        const py = vertices[2 * v + 1];
        const sx = a * px + c * py + e;
        const sy = b * px + d * py + f;
        x0 = Math.min(x0, sx);
        x1 = Math.max(x1, sx);
        y0 = Math.min(y0, sy);
        y1 = Math.max(y1, sy);
        pts.push(`${fmt(sx)} ${fmt(sy)}`);
      }
      if (!(x1 >= 0 && x0 <= w && y1 >= 0 && y0 <= hgt)) {
        continue; // out of view (or NaN vertices)
      }
      drawn++;
      add(col, `M${pts.join('L')}Z`);
    }
  } else {
    const { radius } = shapes;
    for (let i = 0; i < n; i++) {
      const sx = a * data.x[i] + c * data.y[i] + e;
      const sy = b * data.x[i] + d * data.y[i] + f;
      const r = Math.max(0.5, (radius[i] || 0) * view.scale);
      if (!(sx >= -r && sx <= w + r && sy >= -r && sy <= hgt + r)) {
        continue;
      }
      const col = colorOf(i);
      if (col >>> 24 === 0) {
        continue;
      }
      drawn++;
      const rr = fmt(r);
      add(col, `M${fmt(sx - r)} ${fmt(sy)}a${rr} ${rr} 0 1 0 ${fmt(2 * r)} 0a${rr} ${rr} 0 1 0 ${fmt(-2 * r)} 0Z`);
    }
  }
  const groups = new Map<number, string>();
  for (const [col, list] of parts) {
    groups.set(col, list.join(''));
  }
  return { mode, groups, drawn };
}

/** Draw `paths` on a 2D context (already cleared, image drawn; identity transform). */
export function fillPaths(ctx: CanvasRenderingContext2D, paths: CellPaths, lineWidth = 1.5): void {
  ctx.save();
  ctx.lineJoin = 'round';
  ctx.lineWidth = lineWidth;
  for (const [col, d] of paths.groups) {
    const [css, opacity] = cssOf(col);
    const path = new Path2D(d);
    ctx.fillStyle = css;
    ctx.globalAlpha = opacity * (paths.mode === 'outlined' ? OUTLINED_FILL_OPACITY : 1);
    ctx.fill(path);
    if (paths.mode === 'outlined') {
      ctx.strokeStyle = css;
      ctx.globalAlpha = opacity;
      ctx.stroke(path);
    }
  }
  ctx.restore();
}
