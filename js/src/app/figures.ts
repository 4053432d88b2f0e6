/** Figures of the selected version: charts (Vega-Lite), canvas views, and the rest as JSON. */

import { pointsOf, printChart, type ChartHandle, type ChartRenderer } from './chart';
import { download, empty, errorBox, fill, h, loading, runDisposers } from './dom';
import { printWidth, rangeFormat } from './format';
import { PRINT_DPI, composePrint, printBlob, printLayout, printPixels, printSVG, printWidthMm } from './print';
import {
  cellPaths,
  fillPaths,
  packColor,
  typicalWidth,
  rasterizePoints,
  rgbaCanvas,
  affine,
  vectorSVG,
  type CanvasData,
  type CellMode,
  type CellPaths,
  type View
} from './raster';
import { fitViewState, savedRegion, viewStateFor, type ViewState } from './camera';
import { SpatialFigure } from './spatialfigure';
import { loadCanvas } from './cellstore';
import { preloadDeck, webglAvailable } from './spatial';
import { loadInto, whenVisible, type Current } from './load';
import { TransportError, type Transport } from './transport';
import type { CanvasPayload, Figure } from './types';

/** Canvas figures with at most this many cells export as vector SVG. */
export const VECTOR_LIMIT = 50_000;

export class FiguresView {
  readonly node: HTMLElement;
  private label = '';
  private disposers: (() => void)[] = [];

  constructor(
    private readonly transport: Transport,
    private readonly renderChart: ChartRenderer
  ) {
    this.node = h('div', { class: 'sds-figures' });
  }

  dispose(): void {
    this.clear();
  }

  /**
   * Color every canvas figure on show by an obs column or a gene (`{}`: their own coloring).
   * For other views, e.g. "click a gene in a markers table"; resolves when all are drawn.
   */
  async colorCanvases(target: { column?: string; gene?: string }): Promise<void> {
    const views = [...this.node.querySelectorAll('.sds-spatial')].map(
      el => (el as HTMLElement & { sdsSpatial?: SpatialFigure }).sdsSpatial
    );
    await Promise.all(views.filter((v): v is SpatialFigure => !!v).map(v => v.colorBy(target)));
  }

  private clear(): void {
    runDisposers(this.disposers);
  }

  /**
   * Show the figures of `version`; `label` (e.g. "v3 Redrawn regions") goes into export file names.
   * `own` (the figure the version saved itself) comes first: it is what the version is about.
   */
  show(version: number, label?: string, own?: string | null): Promise<void> {
    this.label = label ?? `v${version}`;
    this.clear();
    return loadInto(
      this.node,
      () => this.transport.request('figures', { version }),
      (data, current) => {
        const all = data.figures ?? [];
        const figures = [...all.filter(f => f.id === own), ...all.filter(f => f.id !== own)];
        fill(
          this.node,
          data.error ? errorBox(data.error.message, data.error.kind) : null,
          figures.length || data.error ? null : empty('This version has no figures.'),
          figures.map(fig => this.figure(version, fig, current))
        );
      }
    );
  }

  private figure(version: number, fig: Figure, current: Current): HTMLElement {
    const body = h('div', { class: 'sds-figure-body' });
    const tools = h('div', { class: 'sds-figure-tools' });
    const width = printWidth(fig.print_width);
    const node = h(
      'figure',
      { class: `sds-figure sds-figure-${fig.kind}`, 'data-figure': fig.id },
      h(
        'header',
        { class: 'sds-figure-head' },
        h('span', { class: 'sds-figure-title' }, fig.title || fig.id),
        width ? h('span', { class: 'sds-chip', title: 'print width' }, width) : null,
        tools
      ),
      body,
      fig.caption ? h('figcaption', { class: 'sds-caption' }, fig.caption) : null
    );
    const name = exportName(this.label || `v${version}`, fig.id || 'figure');
    try {
      if (fig.kind === 'chart' && fig.vega_lite) {
        this.chart(body, tools, fig, fig.vega_lite, name, current);
      } else if (fig.kind === 'canvas') {
        this.canvas(body, tools, version, fig, name, current);
      } else {
        unsupported(body, fig.reason ?? `figures of kind "${fig.kind}" are not drawn here`, fig.spec);
      }
    } catch (err) {
      unsupported(body, `could not draw: ${TransportError.from(err).message}`, fig.spec);
    }
    return node;
  }

  private chart(body: HTMLElement, tools: HTMLElement, fig: Figure, spec: object, name: string, current: Current): void {
    const target = h('div', { class: 'sds-chart' });
    fill(body, target);
    let handle: ChartHandle | null = null;
    this.disposers.push(() => handle?.dispose());
    const title = fig.title || fig.id;
    const mm = printWidthMm(fig.print_width);
    this.renderChart(target, spec).then(
      hd => {
        if (!current()) {
          hd.dispose();
          return;
        }
        handle = hd;
        fill(
          tools,
          button('SVG', `Export for print as SVG: ${mm} mm wide, with title and legend, on white`, async () => {
            const drawn = await printChart(spec, chartWidthPt(mm));
            download(svgBlob(printSVG(await drawn.toSVG(), title, null, mm)), `${name}.svg`);
          }),
          button('PNG', 'Export the chart on screen as PNG', async () => download(await hd.toPNG(), `${name}.png`)),
          button('Print PNG', printTip(mm), async () => {
            const drawn = await printChart(spec, chartWidthPt(mm));
            const width = printPixels(mm);
            const drawing = await drawn.toCanvas(PRINT_DPI / 72);
            download(await printBlob(composePrint(drawing, title, null, width)), `${name}-${PRINT_DPI}dpi.png`);
          })
        );
      },
      err => {
        if (current()) {
          body.append(errorBox(`chart failed: ${TransportError.from(err).message}`, 'chart'));
        }
      }
    );
  }

  private async canvas(
    body: HTMLElement,
    tools: HTMLElement,
    version: number,
    fig: Figure,
    name: string,
    current: Current
  ): Promise<void> {
    fill(body, loading('Loading cells…'));
    body.dataset.lazy = 'waiting';
    await whenVisible(body);
    if (!current()) {
      return;
    }
    body.dataset.lazy = 'loading';
    let payload: CanvasPayload;
    let data: CanvasData;
    try {
      const start = mark('sds:canvas-request:start');
      void preloadDeck()?.catch(() => undefined); // in parallel with the request; a failure shows when the view is made
      ({ payload, data } = await loadCanvas(this.transport, version, fig.id));
      measure('sds:canvas-request', start, { version, figure: fig.id, n_cells: payload.n_cells });
      body.dataset.lazy = 'loaded';
    } catch (err) {
      if (current()) {
        const e = TransportError.from(err);
        fill(body, errorBox(e.message, e.kind));
      }
      return;
    }
    if (!current()) {
      return;
    }
    const spatial = new SpatialFigure(this.transport, version, fig.id, payload, data, webglAvailable());
    fill(body, spatial.node);
    spatial.start();
    this.disposers.push(() => spatial.dispose());
    const title = fig.title || fig.id;
    const mm = printWidthMm(fig.print_width);
    fill(
      tools,
      button('SVG', `Export the view on screen for print as SVG: ${mm} mm wide, with title and legend (cells as shapes; large drawings embedded as PNG)`, async () => {
        const plot = spatial.exportPlot();
        download(svgBlob(printSVG(await plot.toSVG(), title, plot.payload.color, mm, spatial.shownChannels())), `${name}.svg`);
      }),
      button('PNG', 'Export the view on screen as PNG', async () => {
        const plot = spatial.exportPlot();
        plot.draw();
        download(await plot.toBlob(), `${name}.png`);
      }),
      button('Print PNG', printTip(mm), async () => {
        const page = spatial.printPage(title, printPixels(mm));
        download(await printBlob(page), `${name}-${PRINT_DPI}dpi.png`);
      })
    );
  }
}

/** The print PNG's tooltip. */
function printTip(mm: number): string {
  return `Export for print: ${mm} mm wide at ${PRINT_DPI} dpi, with title and legend`;
}

/** A chart's drawing width in points on a page `mm` wide (the page's margins left out, as composePrint lays it). */
function chartWidthPt(mm: number): number {
  const page = printLayout(1, 1, null, pointsOf(mm), 72);
  return page.draw.width;
}

function svgBlob(svg: string): Blob {
  return new Blob([svg], { type: 'image/svg+xml' });
}

/**
 * An export's file name: the version (depth and title) and the figure id, so two versions'
 * exports never collide. Anything but letters, digits, dot, dash and underscore becomes "_".
 */
export function exportName(versionLabel: string, figureId: string): string {
  const clean = (s: string) => s.replace(/[^\w.-]+/g, '_').replace(/^[._]+|_+$/g, '');
  return `${clean(versionLabel).slice(0, 60) || 'version'}-${clean(figureId).slice(0, 60) || 'figure'}`;
}

/** A User Timing mark; its time (NaN where User Timing is missing). */
function mark(name: string): number {
  try {
    return performance.mark(name).startTime;
  } catch {
    return NaN;
  }
}

/** `performance.measure(name)` from `start` (a mark's time) to now, for profiling in DevTools. */
function measure(name: string, start: number, detail: Record<string, unknown>): void {
  if (Number.isNaN(start)) {
    return;
  }
  try {
    performance.measure(name, { start, end: performance.now(), detail });
  } catch {
    // no User Timing level 3
  }
}

/** A figure that cannot be drawn: the reason, and the spec as readable JSON. */
function unsupported(body: HTMLElement, reason: string, spec: unknown): void {
  let text: string;
  if (typeof spec === 'string') {
    try {
      text = JSON.stringify(JSON.parse(spec), null, 2);
    } catch {
      text = spec;
    }
  } else {
    text = JSON.stringify(spec ?? null, null, 2) ?? String(spec);
  }
  // no spec (a figure named only by a version's ops, above a missing dataset): the reason alone
  fill(body, h('p', { class: 'sds-reason' }, reason), spec == null ? null : h('pre', { class: 'sds-json' }, text));
}

function button(
  label: string,
  title: string,
  run: (ev: MouseEvent) => Promise<void>
): HTMLButtonElement {
  const b = h('button', { class: 'sds-button', type: 'button', title }, label);
  b.addEventListener('click', ev => {
    run(ev).catch(err => {
      b.title = `${title}: failed (${TransportError.from(err).message})`;
      b.classList.add('sds-failed');
    });
  });
  return b;
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
    const ratio = this.pixelRatio ?? Math.min(2, (typeof window !== 'undefined' && window.devicePixelRatio) || 1);
    const view = this.view(width, height, ratio);
    this.canvas.width = view.width;
    this.canvas.height = view.height;
    this.canvas.style.width = `${width}px`;
    this.canvas.style.aspectRatio = `${width} / ${height}`;
    let ctx: CanvasRenderingContext2D | null = null;
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

  toBlob(): Promise<Blob> {
    return new Promise((resolve, reject) =>
      this.canvas.toBlob(b => (b ? resolve(b) : reject(new Error('the canvas gave no PNG'))), 'image/png')
    );
  }

  /**
   * SVG export: up to VECTOR_LIMIT cells as circles over the image (vector, for
   * print); beyond that the drawing embedded as a PNG.
   */
  async toSVG(): Promise<string> {
    const w = parseFloat(this.canvas.style.width) || this.canvas.width;
    const hgt = Math.round((w * this.canvas.height) / Math.max(1, this.canvas.width));
    if (this.payload.n_cells <= VECTOR_LIMIT) {
      let imageHref: string | null = null;
      const img = this.payload.image;
      if (img && this.data.image) {
        imageHref = rgbaCanvas(this.data.image, img.width, img.height).toDataURL('image/png');
      }
      const tiles = this.tiles.flatMap(t => (t.rgba ? [{ href: rgbaCanvas(t.rgba, t.width, t.height).toDataURL('image/png'), bounds: t.bounds }] : []));
      const noneColor =
        getComputedStyle(this.node).getPropertyValue('--jp-brand-color1').trim() || '#1f77b4';
      return vectorSVG(this.payload, this.data, this.view(w, hgt, 1), imageHref, noneColor, img ? tiles : []);
    }
    const url = this.canvas.toDataURL('image/png');
    return (
      `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" ` +
      `width="${w}" height="${hgt}" viewBox="0 0 ${w} ${hgt}">` +
      `<image width="${w}" height="${hgt}" xlink:href="${url}" href="${url}"/></svg>`
    );
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
