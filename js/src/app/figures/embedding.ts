/**
 * An embedding beside the tissue (issue 27): the rules, with no DOM, so each is tested alone.
 * The `embedding` request, the fit of its points into a panel (y up, as plots of an embedding
 * are read), the nearest cell under the pointer (a grid of the points, built once), and the
 * rasterising of the points in the tissue's colours. Cells are linked by their table position,
 * which both the `cells` and the `embedding` buffers are ordered by.
 */

import type { Projection } from './annotatepanel';
import { TransportError, type Transport } from '../shared/transport';
import { splitReply } from '../shared/buffers';
import type { Bounds } from '../shared/types';

export type EmbeddingCoords = { key: string; name: string; x: Float32Array; y: Float32Array; bounds: Bounds | null; columns: number };

/** The embeddings a canvas figure's table has (obsm entries of 2 or more columns, spatial aside). */
export async function embeddingKeys(transport: Transport, version: number | string, figure: string): Promise<string[]> {
  const reply = await transport.request('embedding', { version, figure });
  return reply.data.keys;
}

/** Embedding `key`'s first two columns, as x and y per cell in table order. */
export async function loadEmbedding(transport: Transport, version: number | string, figure: string, key: string): Promise<EmbeddingCoords> {
  const { data, buffers } = await transport.request('embedding', { version, figure, key });
  const { x, y } = splitReply('embedding', data, buffers);
  if (!x || !y || data.key !== key) {
    throw new TransportError('protocol', `the embedding reply for ${key} has no coordinates`);
  }
  return { key, name: data.name ?? '', x, y, bounds: data.bounds, columns: data.columns };
}

/**
 * The projection that fits `bounds` into a `width` × `height` panel with `pad` CSS px around,
 * the same scale on both axes, y growing upwards (an embedding's axes are read as a plot's).
 */
export function fitProjection(bounds: Bounds | null, width: number, height: number, pad = 12, camera: EmbeddingCamera = FITTED): Projection {
  const [x0, y0, x1, y1] = bounds ?? [0, 0, 1, 1];
  const scale = camera.zoom * Math.min((width - 2 * pad) / Math.max(x1 - x0, 1e-12), (height - 2 * pad) / Math.max(y1 - y0, 1e-12));
  const cx = (x0 + x1) / 2;
  const cy = (y0 + y1) / 2;
  const ox = width / 2 + camera.dx;
  const oy = height / 2 + camera.dy;
  return {
    toScreen: (x, y) => [ox + (x - cx) * scale, oy - (y - cy) * scale],
    toData: (sx, sy) => [cx + (sx - ox) / scale, cy - (sy - oy) / scale]
  };
}

/** How far the embedding is zoomed (1: fitted) and panned (CSS px of its panel) from its fit. */
export type EmbeddingCamera = { zoom: number; dx: number; dy: number };
export const FITTED: EmbeddingCamera = { zoom: 1, dx: 0, dy: 0 };
/** The zoom range of the embedding: from half its fitted size to 1,000 times it. */
export const EMBEDDING_ZOOM: [number, number] = [0.5, 1000];

/**
 * `camera` zoomed by `factor` about (sx, sy) CSS px of a `width` × `height` panel (the point
 * under the pointer stays put), then kept so the fitted picture's centre stays in the panel.
 */
export function zoomEmbedding(camera: EmbeddingCamera, factor: number, sx: number, sy: number, width: number, height: number): EmbeddingCamera {
  const zoom = Math.max(EMBEDDING_ZOOM[0], Math.min(EMBEDDING_ZOOM[1], camera.zoom * factor));
  const f = zoom / camera.zoom;
  const ax = sx - width / 2;
  const ay = sy - height / 2;
  return keepInPanel({ zoom, dx: ax - (ax - camera.dx) * f, dy: ay - (ay - camera.dy) * f }, width, height);
}

/** `camera` panned by (mx, my) CSS px, kept in the panel. */
export function panEmbedding(camera: EmbeddingCamera, mx: number, my: number, width: number, height: number): EmbeddingCamera {
  return keepInPanel({ zoom: camera.zoom, dx: camera.dx + mx, dy: camera.dy + my }, width, height);
}

/**
 * The panel's centre kept over the picture (the fitted box inside the panel's padding, zoomed):
 * it can be dragged to an edge, never off screen.
 */
function keepInPanel(camera: EmbeddingCamera, width: number, height: number, pad = 12): EmbeddingCamera {
  const rx = Math.max(0, width / 2 - pad) * camera.zoom;
  const ry = Math.max(0, height / 2 - pad) * camera.zoom;
  return { zoom: camera.zoom, dx: Math.max(-rx, Math.min(rx, camera.dx)), dy: Math.max(-ry, Math.min(ry, camera.dy)) };
}

/**
 * The points binned on a square grid over their bounds, so the cell under the pointer is found
 * among a few bins instead of all cells (a hover at every pointer move).
 */
export class PointGrid {
  private readonly order: Uint32Array;
  private readonly starts: Uint32Array;
  private readonly x0: number;
  private readonly y0: number;
  private readonly size: number;
  private readonly side: number;

  constructor(
    private readonly x: Float32Array,
    private readonly y: Float32Array,
    bounds: Bounds | null
  ) {
    const [x0, y0, x1, y1] = bounds ?? [0, 0, 1, 1];
    this.side = Math.max(1, Math.min(512, Math.ceil(Math.sqrt(x.length / 4))));
    this.x0 = x0;
    this.y0 = y0;
    this.size = Math.max(x1 - x0, y1 - y0, 1e-12) / this.side;
    const bins = new Int32Array(x.length);
    const counts = new Uint32Array(this.side * this.side + 1);
    for (let i = 0; i < x.length; i++) {
      const b = this.bin(x[i], y[i]);
      bins[i] = b;
      if (b >= 0) counts[b + 1] += 1;
    }
    for (let b = 1; b < counts.length; b++) counts[b] += counts[b - 1];
    this.starts = counts.slice();
    const fill = counts.slice();
    this.order = new Uint32Array(counts[counts.length - 1]);
    for (let i = 0; i < x.length; i++) {
      if (bins[i] >= 0) this.order[fill[bins[i]]++] = i;
    }
  }

  private cell(v: number, origin: number): number {
    return Math.min(this.side - 1, Math.max(0, Math.floor((v - origin) / this.size)));
  }

  private bin(x: number, y: number): number {
    if (!Number.isFinite(x) || !Number.isFinite(y)) return -1;
    return this.cell(y, this.y0) * this.side + this.cell(x, this.x0);
  }

  /** The cell nearest (x, y) within `radius` (data units), else -1; ties go to the first in table order. */
  nearest(x: number, y: number, radius: number): number {
    let best = -1;
    let bestD = radius * radius;
    const [c0, c1] = [this.cell(x - radius, this.x0), this.cell(x + radius, this.x0)];
    const [r0, r1] = [this.cell(y - radius, this.y0), this.cell(y + radius, this.y0)];
    for (let r = r0; r <= r1; r++) {
      for (let c = c0; c <= c1; c++) {
        const b = r * this.side + c;
        for (let k = this.starts[b]; k < this.starts[b + 1]; k++) {
          const i = this.order[k];
          const dx = this.x[i] - x;
          const dy = this.y[i] - y;
          const d = dx * dx + dy * dy;
          if (d < bestD || (d === bestD && best >= 0 && i < best)) {
            best = i;
            bestD = d;
          }
        }
      }
    }
    return best;
  }
}

/**
 * Paint the points into `pixels` (RGBA, `width` × `height`), each a `size` px square in
 * `colorOf(i)` (packed RGBA; alpha 0 is a hidden category, not drawn). Returns how many were drawn.
 */
export function paintEmbedding(
  pixels: Uint8ClampedArray,
  width: number,
  height: number,
  view: Projection,
  x: Float32Array,
  y: Float32Array,
  colorOf: (i: number) => number,
  size = 3
): number {
  const out = new Uint32Array(pixels.buffer, pixels.byteOffset, width * height);
  const half = Math.floor(size / 2);
  let drawn = 0;
  for (let i = 0; i < x.length; i++) {
    const color = colorOf(i);
    if (color >>> 24 === 0) continue;
    const [sx, sy] = view.toScreen(x[i], y[i]);
    if (!Number.isFinite(sx) || !Number.isFinite(sy)) continue;
    const px = Math.round(sx) - half;
    const py = Math.round(sy) - half;
    if (px + size <= 0 || py + size <= 0 || px >= width || py >= height) continue;
    for (let dy = Math.max(0, py); dy < Math.min(height, py + size); dy++) {
      out.fill(color, dy * width + Math.max(0, px), dy * width + Math.min(width, px + size));
    }
    drawn += 1;
  }
  return drawn;
}
