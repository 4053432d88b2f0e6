/**
 * A canvas figure drawn with Canvas 2D (where WebGL is missing, and the print export's
 * size), and its legend. A leaf below both figures.ts (which lays figures out) and
 * spatialfigure.ts (the interactive view that falls back to this plot), so neither
 * imports the other to reach it.
 */

import { fitViewState, savedRegion, viewStateFor, type ViewState } from './camera';
import { deviceRatio, h } from '../shared/dom';
import { rangeFormat } from '../shared/format';
import {
  cellPaths,
  fillPaths,
  packColor,
  typicalWidth,
  rasterizePoints,
  rgbaCanvas,
  affine,
  type CanvasData,
  type CellMode,
  type CellPaths,
  type View
} from './raster';
import type { CanvasPayload } from '../shared/types';

/** A User Timing mark; its time (NaN where User Timing is missing). */
export function mark(name: string): number {
  try {
    return performance.mark(name).startTime;
  } catch {
    return NaN;
  }
}

/** `performance.measure(name)` from `start` (a mark's time) to now, for profiling in DevTools. */
export function measure(name: string, start: number, detail: Record<string, unknown>): void {
  if (Number.isNaN(start)) {
    return;
  }
  try {
    performance.measure(name, { start, end: performance.now(), detail });
  } catch {
    // no User Timing level 3
  }
}

/** An image tile drawn over the overview (tiles.ts's Tile fits): its RGBA and where it sits. */
export type PlotTile = { key: string; rgba: Uint8ClampedArray | null; width: number; height: number; bounds: [number, number, number, number] };

/** A canvas view: the composited image underneath, the cells on top, a legend. */
export class CanvasPlot {
  readonly node: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  fit = false;
  /** The camera to draw with (the interactive view's); null: the saved view, or all cells when `fit`. */
  camera: ViewState | null = null;
  /** Fixed logical size (export at the size on screen); null: from the available width. */
  fixedSize: [number, number] | null = null;
  /** Pixels per CSS px to draw at (the print export's); null: the screen's, at most 2. */
  pixelRatio: number | null = null;
  lastDrawn = 0;
  /** How the last draw drew the cells (points, or their polygons/circles). */
  drawnAs: CellMode = 'points';
  private cellSize: number | null = null;
  /** Leave room for a legend beside the drawing (when it sits in this plot's node). */
  reserveLegend = true;
  /** Tiles of finer pyramid levels over the overview, coarsest first (what the view shows). */
  tiles: readonly PlotTile[] = [];

  constructor(
    readonly payload: CanvasPayload,
    readonly data: CanvasData
  ) {
    this.canvas = h('canvas', { class: 'sds-canvas' });
    this.node = h(
      'div',
      { class: 'sds-canvas-wrap' },
      this.canvas,
      legend(payload),
      h('div', { class: 'sds-canvas-note' }, `${payload.n_cells.toLocaleString()} cells`)
    );
  }

  /** Logical size: the available width, the data's aspect ratio (clamped). */
  size(): [number, number] {
    if (this.fixedSize) {
      return this.fixedSize;
    }
    const wrap = this.node.clientWidth || 480;
    // leave room for the legend beside the drawing when there is room for both
    const avail = wrap > 520 && this.reserveLegend ? wrap - 180 : wrap;
    const width = Math.max(160, Math.min(avail, 1200));
    const [x0, y0, x1, y1] = this.payload.bounds;
    const aspect = Math.max(0.4, Math.min(1.5, (y1 - y0) / Math.max(x1 - x0, 1e-9) || 1));
    return [Math.round(width), Math.round(width * aspect)];
  }

  view(width: number, height: number, ratio: number): View {
    const vs =
      this.camera ??
      (this.fit
        ? fitViewState(this.payload.bounds, width, height)
        : viewStateFor(savedRegion(this.payload), width, height));
    const scale = Math.pow(2, vs.zoom);
    return { width: width * ratio, height: height * ratio, target: vs.target, scale: scale * ratio, rotation: 0 };
  }

  draw(): void {
    const start = mark('sds:canvas-draw:start');
    const [width, height] = this.size();
    const ratio = this.pixelRatio ?? deviceRatio();
    const view = this.view(width, height, ratio);
    this.canvas.width = view.width;
    this.canvas.height = view.height;
    this.canvas.style.width = `${width}px`;
    this.canvas.style.aspectRatio = `${width} / ${height}`;
    let ctx: CanvasRenderingContext2D | null;
    try {
      ctx = this.canvas.getContext('2d');
    } catch {
      ctx = null;
    }
    if (!ctx) {
      this.node.dataset.nocontext = 'true';
      return;
    }
    ctx.clearRect(0, 0, view.width, view.height);
    const img = this.payload.image;
    if (img && this.data.image) {
      ctx.save();
      ctx.setTransform(...affine(view));
      ctx.imageSmoothingEnabled = false;
      const [bx0, by0, bx1, by1] = img.bounds;
      ctx.drawImage(rgbaCanvas(this.data.image, img.width, img.height), bx0, by0, bx1 - bx0, by1 - by0);
      for (const tile of this.tiles) {
        if (tile.rgba) {
          const [tx0, ty0, tx1, ty1] = tile.bounds;
          ctx.drawImage(rgbaCanvas(tile.rgba, tile.width, tile.height), tx0, ty0, tx1 - tx0, ty1 - ty0);
        }
      }
      ctx.restore();
    }
    const noneColor =
      getComputedStyle(this.node).getPropertyValue('--jp-brand-color1').trim() || '#1f77b4';
    const shapes = this.shapesFor(view, noneColor);
    if (shapes) {
      // the cells' polygons or circles, as the WebGL view draws them at this zoom
      fillPaths(ctx, shapes, 1.5 * ratio);
      this.lastDrawn = shapes.drawn;
      this.drawnAs = shapes.mode;
    } else {
      this.lastDrawn = this.drawPoints(ctx, view, ratio, noneColor);
      this.drawnAs = 'points';
    }
    measure('sds:canvas-draw', start, {
      n_cells: this.payload.n_cells,
      drawn: this.lastDrawn,
      width: view.width,
      height: view.height
    });
  }

  /** The cells' shapes in `view` (null: draw points); the typical cell width is measured once. */
  private shapesFor(view: View, noneColor: string): CellPaths | null {
    const shapes = this.data.shapes;
    if (shapes?.kind === 'polygons' && this.cellSize === null) {
      this.cellSize = typicalWidth(shapes.starts, shapes.vertices, this.payload.n_cells);
    }
    return cellPaths(this.data, this.payload.color, view, noneColor, this.cellSize ?? undefined);
  }

  private drawPoints(ctx: CanvasRenderingContext2D, view: View, ratio: number, noneColor: string): number {
    const pixels = ctx.getImageData(0, 0, view.width, view.height);
    const drawn = rasterizePoints(
      pixels.data,
      this.data,
      this.payload.color,
      view,
      (this.payload.point_size || 2) * ratio,
      noneColor
    );
    ctx.putImageData(pixels, 0, 0);
    return drawn;
  }

  /** Redraw when the available width changes (panel or window resized); returns the undo. */
  watchSize(): () => void {
    let width = this.node.clientWidth;
    let raf = 0;
    const check = () => {
      raf = 0;
      if (this.node.isConnected && Math.abs(this.node.clientWidth - width) > 1) {
        width = this.node.clientWidth;
        this.draw();
      }
    };
    const schedule = () => {
      if (!raf) {
        raf = typeof requestAnimationFrame === 'undefined' ? (check(), 0) : requestAnimationFrame(check);
      }
    };
    if (typeof ResizeObserver !== 'undefined') {
      const ro = new ResizeObserver(schedule);
      ro.observe(this.node);
      return () => ro.disconnect();
    }
    window.addEventListener('resize', schedule);
    return () => window.removeEventListener('resize', schedule);
  }
}

/** Legend: categories with their colours, or the colormap as a gradient, and image channels. */
export function legend(payload: CanvasPayload, hidden?: Set<number>, onToggle?: (code: number) => void): HTMLElement {
  const node = h('div', { class: 'sds-legend' });
  const c = payload.color;
  if (c.mode === 'categorical') {
    const shown = 60;
    node.append(
      h('div', { class: 'sds-legend-title' }, c.column),
      h(
        'ul',
        { class: 'sds-legend-cats' },
        c.categories.slice(0, shown).map((cat, i) => {
          const swatch = h('span', { class: 'sds-swatch', style: `background:${cssColor(c.colors[i])}` });
          if (!onToggle) {
            return h('li', {}, swatch, h('span', { class: 'sds-legend-label' }, cat));
          }
          const off = hidden?.has(i) ?? false;
          const b = h(
            'button',
            {
              type: 'button',
              class: `sds-legend-toggle${off ? ' sds-off' : ''}`,
              'aria-pressed': String(!off),
              title: off ? `Show ${cat}` : `Hide ${cat}`
            },
            swatch,
            h('span', { class: 'sds-legend-label' }, cat)
          );
          b.addEventListener('click', () => onToggle(i));
          return h('li', {}, b);
        }),
        c.categories.length > shown
          ? h('li', { class: 'sds-muted' }, `… ${c.categories.length - shown} more`)
          : null
      )
    );
  } else if (c.mode === 'continuous') {
    const lut = c.lut?.length ? c.lut : ['#440154', '#fde725'];
    const step = Math.max(1, Math.floor(lut.length / 16));
    const stops = lut.filter((_, i) => i % step === 0 || i === lut.length - 1).map(cssColor);
    const format = rangeFormat(c.column, c.min, c.max);
    node.append(
      h('div', { class: 'sds-legend-title' }, `${c.column} (${c.colormap})`),
      h('div', {
        class: 'sds-gradient',
        style: `background:linear-gradient(to right, ${stops.join(', ')})`
      }),
      h(
        'div',
        { class: 'sds-gradient-range' },
        h('span', { title: String(c.min) }, format(c.min)),
        h('span', { title: String(c.max) }, format(c.max))
      )
    );
  }
  if (payload.image?.channels?.length) {
    node.append(
      h('div', { class: 'sds-legend-title' }, 'Channels'),
      h(
        'ul',
        { class: 'sds-legend-cats' },
        payload.image.channels.map(ch =>
          h(
            'li',
            {},
            h('span', { class: 'sds-swatch', style: `background:${cssColor(ch.color)}` }),
            h('span', { class: 'sds-legend-label' }, ch.name)
          )
        )
      )
    );
  }
  return node;
}

export function cssColor(hex: string | undefined): string {
  const v = packColor(hex ?? '', 0xff808080);
  return `rgb(${v & 255}, ${(v >>> 8) & 255}, ${(v >>> 16) & 255})`;
}
