/** Figures of the selected version: charts (Vega-Lite), canvas views, and the rest as JSON. */

import type { ChartHandle, ChartRenderer } from '../shared/chart';
import { devicePixelWidth, download, empty, errorBox, fill, h, loading, runDisposers } from '../shared/dom';
import { printWidth } from '../shared/format';
import { mark, measure } from '../spatial/canvasplot';
import type { CanvasData } from '../spatial/raster';
import { SpatialFigure, type CellSelection } from './spatialfigure';
import { KeptViews, type Keepable } from './keptviews';
import { loadCanvas } from '../spatial/cellstore';
import { preloadDeck, webglAvailable } from '../spatial/spatial';
import { loadInto, whenVisible, type Current } from '../shared/load';
import { TransportError, pinned, type Transport } from '../shared/transport';
import { splitReply } from '../shared/buffers';
import type { AnnotateData, CanvasPayload, Figure, Figures as FiguresData, Params } from '../shared/types';

/** What a canvas export shows, beside the version, figure and format it is asked for. */
type ExportShown = Omit<Params<'export'>, 'version' | 'figure' | 'format'>;

/**
 * How near the viewport a canvas figure's placeholder must come for it to ask anything: none. A
 * tissue's colour column is 1 MB at a million cells, and a figure below the fold may never be
 * scrolled to, so it asks nothing, not even its colours, until some of it is on screen.
 */
export const CANVAS_MARGIN = '0px';

/** The formats the service draws a figure in (the one renderer of `sds-jupyter export`). */
const EXPORT_FORMATS = ['svg', 'png', 'pdf'] as const;

/** A canvas figure's whole element (header, export tools, view) and its view, kept across visits. */
class KeptFigure implements Keepable {
  constructor(
    readonly node: HTMLElement,
    readonly spatial: SpatialFigure
  ) {}
  get bytes(): number {
    return this.spatial.bytes;
  }
  get live(): boolean {
    return this.spatial.live;
  }
  park(): void {
    this.spatial.park();
  }
  unpark(): void {
    this.spatial.unpark();
  }
  releaseContext(): void {
    this.spatial.releaseContext();
  }
  dispose(): void {
    this.spatial.dispose();
  }
}

/** The page's kept canvas views (one bound on views, bytes and WebGL contexts for every panel). */
export const keptViews = new KeptViews<KeptFigure>();
/** Versions' figure lists kept by version identity (a version's figures never change). */
const MAX_KEPT_LISTS = 32;

export class FiguresView {
  readonly node: HTMLElement;
  private disposers: (() => void)[] = [];
  /** Told when a figure's regions were saved as a new version (the app opens it). */
  onAnnotated: ((saved: AnnotateData) => Promise<void> | void) | null = null;
  /** Told the cells inside the regions drawn on a figure (the widget binds them as `browser.selection`). */
  onSelection: ((selection: CellSelection) => void) | null = null;

  constructor(
    private readonly transport: Transport,
    private readonly renderChart: ChartRenderer
  ) {
    this.node = h('div', { class: 'sds-figures' });
  }

  /** The canvas figures on show that may be kept (by version identity and figure), to park when another version shows. */
  private shown = new Map<string, KeptFigure>();
  /** Figure lists by version identity (see show's `key`). */
  private lists = new Map<string, FiguresData>();

  dispose(): void {
    this.clear();
    keptViews.drop(this);
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
    for (const [key, kept] of this.shown) {
      keptViews.keep(this, key, kept);
    }
    this.shown.clear();
    runDisposers(this.disposers);
  }

  /**
   * Show the figures of `version` (`_label` is no longer used: the service names export files).
   * `own` (the figure the version saved itself) comes first: it is what the version is about.
   */
  show(version: number, _label?: string, own?: string | null, key?: string | null): Promise<void> {
    this.clear();
    const listed = key ? this.lists.get(key) : undefined;
    // the figures of this version keep asking its stack, even once the panel moved on (kept views too)
    const transport = pinned(this.transport);
    return loadInto(
      this.node,
      () => (listed ? Promise.resolve({ data: listed }) : transport.request('figures', { version })),
      (data, current) => {
        if (key && !data.error) {
          this.lists.delete(key);
          this.lists.set(key, data);
          if (this.lists.size > MAX_KEPT_LISTS) {
            this.lists.delete(this.lists.keys().next().value!);
          }
        }
        const all = data.figures ?? [];
        const figures = [...all.filter(f => f.id === own), ...all.filter(f => f.id !== own)];
        const back: KeptFigure[] = [];
        // a missing dataset with figures listed: each figure says what it needs, once (no box above them)
        const said = data.error?.kind === 'missing-dataset' && figures.length > 0;
        fill(
          this.node,
          data.error && !said ? errorBox(data.error.message, data.error.kind) : null,
          figures.length || data.error ? null : empty('This version has no figures.'),
          figures.map(fig => {
            const keptKey = key && fig.kind === 'canvas' ? `${key}/${fig.id}` : null;
            const kept = keptKey ? keptViews.take(this, keptKey) : null;
            if (kept && keptKey) {
              this.shown.set(keptKey, kept);
              back.push(kept);
              return kept.node;
            }
            return this.figure(transport, version, fig, current, keptKey);
          })
        );
        for (const kept of back) {
          kept.unpark(); // on the page again: drawn from what it kept, nothing asked
        }
      }
    );
  }

  private figure(transport: Transport, version: number, fig: Figure, current: Current, keptKey: string | null = null): HTMLElement {
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
    try {
      if (fig.kind === 'chart' && fig.vega_lite) {
        this.chart(transport, body, tools, version, fig, fig.vega_lite, current);
      } else if (fig.kind === 'canvas') {
        void this.canvas(transport, body, tools, version, fig, current, keptKey ? spatial => this.shown.set(keptKey, new KeptFigure(node, spatial)) : null);
      } else {
        unsupported(body, fig.reason ?? `figures of kind "${fig.kind}" are not drawn here`, fig.spec);
      }
    } catch (err) {
      unsupported(body, `could not draw: ${TransportError.from(err).message}`, fig.spec);
    }
    return node;
  }

  private chart(transport: Transport, body: HTMLElement, tools: HTMLElement, version: number, fig: Figure, spec: object, current: Current): void {
    const target = h('div', { class: 'sds-chart' });
    fill(body, target);
    let handle: ChartHandle | null = null;
    this.disposers.push(() => handle?.dispose());
    this.renderChart(target, spec).then(
      hd => {
        if (!current()) {
          hd.dispose();
          return;
        }
        handle = hd;
        fill(tools, exportButtons(transport, version, fig.id));
      },
      err => {
        if (current()) {
          body.append(errorBox(`chart failed: ${TransportError.from(err).message}`, 'chart'));
        }
      }
    );
  }

  private async canvas(
    transport: Transport,
    body: HTMLElement,
    tools: HTMLElement,
    version: number,
    fig: Figure,
    current: Current,
    keep: ((spatial: SpatialFigure) => void) | null = null
  ): Promise<void> {
    fill(body, loading('Loading cells…'));
    body.dataset.lazy = 'waiting'; // holds a view's height (base.css): the figures below stay off screen
    await whenVisible(body, CANVAS_MARGIN);
    if (!current()) {
      return;
    }
    body.dataset.lazy = 'loading';
    let payload: CanvasPayload;
    let data: CanvasData;
    try {
      const start = mark('sds:canvas-request:start');
      void preloadDeck()?.catch(() => undefined); // in parallel with the request; a failure shows when the view is made
      ({ payload, data } = await loadCanvas(transport, version, fig.id, devicePixelWidth(body)));
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
    const spatial = new SpatialFigure(transport, version, fig.id, payload, data, webglAvailable());
    fill(body, spatial.node);
    spatial.start();
    spatial.onAnnotated = saved => this.onAnnotated?.(saved);
    spatial.onSelection = selection => this.onSelection?.(selection);
    if (keep) {
      keep(spatial); // parked, not disposed, when another version shows (keptviews.ts)
    } else {
      this.disposers.push(() => spatial.dispose());
    }
    const where = h(
      'select',
      { class: 'sds-export-view', title: 'What an export shows' },
      h('option', { value: 'saved' }, 'saved view'),
      h('option', { value: 'screen' }, 'view on screen'),
      h('option', { value: 'whole' }, 'whole tissue')
    ) as HTMLSelectElement;
    // the region chosen, and the cells colored as on screen (a recoloring, hidden categories)
    const shown = () => ({ view: where.value === 'screen' ? spatial.region().join(',') : where.value, ...spatial.coloring() });
    // a visible label (not only a title): screen readers and sighted users read the same words
    const label = h('label', { class: 'sds-export-view-label' }, 'Export ', where);
    fill(tools, label, exportButtons(transport, version, fig.id, shown));
  }
}

/**
 * A figure's export buttons: each asks the service for the figure drawn as an SVG, PNG
 * (300 dpi) or PDF file, the same file `sds-jupyter export` and `VersionBrowser.export`
 * write, and saves it under the name the service gives (the version and the figure).
 * `shown`: for a canvas, what the export shows: `view` ("saved", "whole" or x0,y0,x1,y1) and
 * the view's coloring (`SpatialFigure.coloring`).
 */
export function exportButtons(transport: Transport, version: number, figure: string, shown?: () => ExportShown): HTMLButtonElement[] {
  return EXPORT_FORMATS.map(format => {
    const label = format.toUpperCase();
    const b = button(label, `Export for print as ${label}: title, legend and scale bar${format === 'png' ? ', 300 dpi' : ', vector'}`, () =>
      whileExporting(b, label, async () => {
        const reply = await transport.request('export', { version, figure, format, ...(shown ? shown() : {}) });
        download(new Blob([splitReply('export', reply.data, reply.buffers).file as Uint8Array<ArrayBuffer>], { type: reply.data.media_type }), reply.data.name);
      })
    );
    return b;
  });
}

/**
 * Run an export with its button saying so: a large figure takes seconds to draw, so the button
 * reads "PNG… 12 s" (counting), is busy and not clickable again until the file is saved; then
 * its label comes back.
 */
async function whileExporting(b: HTMLButtonElement, label: string, run: () => Promise<void>): Promise<void> {
  const started = Date.now();
  const tick = () => {
    const s = Math.floor((Date.now() - started) / 1000);
    b.textContent = s > 0 ? `${label}… ${s} s` : `${label}…`;
  };
  tick();
  b.disabled = true;
  b.setAttribute('aria-busy', 'true');
  b.classList.remove('sds-failed');
  const timer = setInterval(tick, 1000);
  try {
    await run();
  } finally {
    clearInterval(timer);
    b.textContent = label;
    b.disabled = false;
    b.removeAttribute('aria-busy');
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
