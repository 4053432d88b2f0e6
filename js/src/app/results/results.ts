/** Results of the selected version: meta as a report, tables paged and sorted by the server. */

import type { ChartHandle, ChartRenderer } from '../shared/chart';
import { badge, download, empty, errorBox, fill, h, report, runDisposers } from '../shared/dom';
import { DotPlotPanel } from './dotplot';
import { cell, columnFormat, exactTime, fullValue, plural, relativeTime, type CellFormat } from '../shared/format';
import type { ColorTarget } from '../figures/spatialfigure';
import { loadInto, type Current } from '../shared/load';
import { TissuePane } from '../figures/tissue';
import { TransportError, type Transport } from '../shared/transport';
import type { Result, ResultMeta, ResultPage, ResultTable } from '../shared/types';

export const PAGE_SIZE = 50;
/** Wait this long after the last key in a filter box before asking the server. */
export const FILTER_DELAY_MS = 250;

/** The Python line that brings a result's table into a notebook. */
export type ResultCode = (result: string, table: string, version: number) => string;

/** A Python string literal for any text (JSON's escapes are Python's too). */
export function pyString(text: string): string {
  return JSON.stringify(text);
}

/** `VersionBrowser(path).result(...)` for a browser opened on `path`. */
export function resultCodeFor(pathOrGetter: string | (() => string) | undefined): ResultCode {
  return (result, table, version) => {
    const path = typeof pathOrGetter === 'function' ? pathOrGetter() : pathOrGetter;
    const args = [pyString(result), table === 'table' ? null : `table=${pyString(table)}`, `version=${version}`]
      .filter(Boolean)
      .join(', ');
    const browser = path === undefined ? 'browser' : `VersionBrowser(${pyString(path)})`;
    const imports = path === undefined ? '' : 'from sds_jupyter import VersionBrowser; ';
    return `${imports}table = ${browser}.result(${args})`;
  };
}

/** What a click on a value of a result shows on the tissue, and how the view names it. */
export type TissueLink = { target: ColorTarget; what: string };
/** Links of one result's cells: null where a value leads nowhere. */
export type LinkOf = (column: string, value: unknown) => TissueLink | null;

/** Columns whose values are var names (scanpy's `names`, squidpy's features, our `gene`). */
const GENE_COLUMNS = new Set(['gene', 'genes', 'names', 'gene_name', 'gene_names', 'gene_symbol', 'feature', 'features', 'var_name']);
/** Columns whose values are groups of cells: of the obs column the result's parameters name. */
const GROUP_COLUMNS = new Set(['group', 'groups', 'cluster', 'clusters', 'source', 'target', 'niche', 'niches', 'region', 'regions', 'domain']);
/** The parameters that name a result's obs column, in the order they are trusted. */
const OBS_PARAMETERS = ['groupby', 'cluster_key', 'groupby_key', 'niche_key', 'region_key', 'library_key'];

/**
 * Where a result's value leads on the tissue: a gene colors the cells by its expression
 * (from X, or the layer the result's parameters name); a group, cluster or niche highlights
 * its cells in the obs column the parameters name (`groupby`, `cluster_key`, …).
 */
export function tissueLink(column: string, value: unknown, meta: ResultMeta | null | undefined): TissueLink | null {
  if (value === null || value === undefined || typeof value === 'object' || String(value) === '') {
    return null;
  }
  const text = String(value);
  const name = column.toLowerCase();
  const params = (meta?.parameters ?? {}) as Record<string, unknown>;
  if (GENE_COLUMNS.has(name)) {
    const layer = typeof params.layer === 'string' && params.layer ? params.layer : undefined;
    return { target: layer ? { gene: text, layer } : { gene: text }, what: `${text} expression${layer ? ` (${layer})` : ''}` };
  }
  const obs = OBS_PARAMETERS.map(k => params[k]).find((v): v is string => typeof v === 'string' && v !== '');
  if (obs && (GROUP_COLUMNS.has(name) || name === obs.toLowerCase())) {
    return { target: { column: obs, highlight: text }, what: `${obs} ${text}` };
  }
  return null;
}

/** Put `text` on the clipboard; false when the browser refuses (no permission, no secure context). */
async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

export class ResultsView {
  readonly node: HTMLElement;
  private disposers: (() => void)[] = [];

  constructor(
    private readonly transport: Transport,
    private readonly renderChart: ChartRenderer,
    private readonly now: () => number = Date.now,
    private readonly code: ResultCode = resultCodeFor(undefined)
  ) {
    this.node = h('div', { class: 'sds-results' });
  }

  dispose(): void {
    this.clear();
  }

  private clear(): void {
    runDisposers(this.disposers);
  }

  show(version: number): Promise<void> {
    this.clear();
    return loadInto(
      this.node,
      () => this.transport.request('results', { version }),
      (data, current) => {
        const results = data.results ?? [];
        const dots = new DotPlotPanel(this.transport, version, this.renderChart);
        this.disposers.push(() => dots.dispose());
        fill(
          this.node,
          data.error ? errorBox(data.error.message, data.error.kind) : null,
          results.length ? null : empty('This version has no results.'),
          results.map(r => this.result(version, r, current)),
          dots.node
        );
      }
    );
  }

  private result(version: number, r: Result, current: Current): HTMLElement {
    const meta = r.meta ?? {};
    const kind = r.kind ?? meta.kind ?? null;
    const title = r.title || meta.title || r.id;
    const tables = r.tables ?? [];
    const headingId = `sds-result-${++resultIds}`;
    const pane = new TissuePane(this.transport, version, `Back to ${title}`);
    this.disposers.push(() => pane.dispose());
    const links: LinkOf = (column, value) => tissueLink(column, value, r.meta);
    const follow = (link: TissueLink, from?: HTMLElement) => void pane.show(link.target, link.what, from);
    const node = h(
      'section',
      { class: 'sds-result', 'data-result': r.id, 'aria-labelledby': headingId },
      h(
        'header',
        { class: 'sds-result-head' },
        h('h3', { class: 'sds-result-title', id: headingId }, title),
        kind ? badge(kind, 'result') : null,
        tables.length ? this.codeButton(version, r.id) : null
      ),
      r.error ? errorBox(r.error.message, r.error.kind) : null,
      r.meta ? this.reportOf(r.id, kind, meta, title) : null,
      pane.node
    );
    if (r.chart) {
      // wider than the card only when the card is very narrow: then it scrolls, by keyboard too
      const target = h('div', { class: 'sds-chart', tabindex: '0', role: 'group', 'aria-label': `Chart of ${title}` });
      node.append(target);
      let handle: ChartHandle | null = null;
      this.disposers.push(() => handle?.dispose());
      this.renderChart(target, r.chart).then(
        hd => {
          if (!current()) {
            hd.dispose();
          } else {
            handle = hd;
            // a click on a bar or a cell of the chart: the first of its fields that leads to the tissue
            hd.onClick?.(datum => {
              const found = Object.entries(datum)
                .map(([k, v]) => links(k, v))
                .filter((l): l is TissueLink => l !== null);
              const link = found.find(l => l.target.gene) ?? found[0];
              if (link) {
                follow(link, target);
              }
            });
          }
        },
        err => target.replaceWith(errorBox(`chart failed: ${TransportError.from(err).message}`, 'chart'))
      );
    }
    const [first, ...rest] = sortTables(tables);
    if (first) {
      node.append(new TableView(this.transport, version, r.id, first, PAGE_SIZE, links, follow).node);
    }
    for (const t of rest) {
      const details = h(
        'details',
        { class: 'sds-more-table' },
        h('summary', {}, `${t.name} `, h('span', { class: 'sds-count' }, plural(t.n_rows, 'row')))
      );
      let opened = false;
      details.addEventListener('toggle', () => {
        if (details.open && !opened) {
          opened = true;
          details.append(new TableView(this.transport, version, r.id, t, PAGE_SIZE, links, follow).node);
        }
      });
      node.append(details);
    }
    return node;
  }

  /** "Copy code": the line that returns this result's main table in a notebook. */
  private codeButton(version: number, id: string): HTMLElement {
    const line = this.code(id, 'table', version);
    const status = h('span', { class: 'sds-code-status', role: 'status' });
    const button = h(
      'button',
      {
        class: 'sds-button sds-copy-code',
        type: 'button',
        title: `Copy the Python line that returns this table as a DataFrame: ${line}`,
        onclick: async () => {
          const ok = await copyText(line);
          status.textContent = ok ? 'Copied' : `Copy this line: ${line}`;
          if (ok) {
            setTimeout(() => {
              status.textContent = '';
            }, 2500);
          }
        }
      },
      'Copy code'
    );
    return h('span', { class: 'sds-code' }, button, status);
  }

  private reportOf(id: string, kind: string | null, meta: ResultMeta, heading: string): HTMLElement {
    const rows: [string, Node | string][] = [];
    const add = (label: string, value: Node | string | null | undefined) => {
      if (value !== null && value !== undefined && value !== '') {
        rows.push([label, value]);
      }
    };
    add('Result', id);
    add('Kind', kind ?? undefined);
    // the card's heading already shows the title
    add('Title', meta.title === heading ? undefined : meta.title);
    add('Method', meta.method);
    add('Parameters', mapping(meta.parameters));
    add('Summary', mapping(meta.summary));
    add('By', meta.created_by);
    if (meta.created_at) {
      add(
        'When',
        h(
          'time',
          { datetime: meta.created_at, title: exactTime(meta.created_at) },
          relativeTime(meta.created_at, this.now())
        )
      );
    }
    add('App version', meta.app_version);
    return report(rows);
  }
}

let resultIds = 0;

/** The table named "table" first (the request's default), then the rest by name. */
function sortTables(tables: ResultTable[]): ResultTable[] {
  return [...tables].sort((a, b) =>
    a.name === 'table' ? -1 : b.name === 'table' ? 1 : a.name.localeCompare(b.name)
  );
}

function mapping(m: Record<string, unknown> | undefined): HTMLElement | null {
  if (!m || typeof m !== 'object') {
    return null;
  }
  const entries = Object.entries(m);
  if (!entries.length) {
    return null;
  }
  return h(
    'table',
    { class: 'sds-kv' },
    h(
      'tbody',
      {},
      entries.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, cell(v))))
    )
  );
}

/** One result table, paged, sorted and filtered on the server through `result_page`. */
export class TableView {
  readonly node: HTMLElement;
  offset = 0;
  sort: string | undefined;
  descending = false;
  filter = '';
  private token = 0;
  private page: ResultPage | null = null;
  private filterTimer: ReturnType<typeof setTimeout> | undefined;
  /** The value behind each drawn cell: hover and copies show every digit. */
  private values = new WeakMap<Element, unknown>();
  private readonly grid: HTMLElement;
  private readonly pager: HTMLElement;
  private readonly status: HTMLElement;
  private readonly search: HTMLInputElement;
  private readonly csvStatus: HTMLElement;

  constructor(
    private readonly transport: Transport,
    private readonly version: number,
    private readonly result: string,
    private readonly table: ResultTable,
    private readonly limit = PAGE_SIZE,
    private readonly links: LinkOf = () => null,
    private readonly follow: (link: TissueLink, from: HTMLElement) => void = () => undefined
  ) {
    const label = `${table.name} of ${result}`;
    this.grid = h('div', { class: 'sds-grid', tabindex: '0', role: 'region', 'aria-label': `Table ${label}` });
    this.grid.addEventListener('copy', e => this.onCopy(e));
    this.status = h('span', { class: 'sds-page-status', 'aria-live': 'polite' });
    this.search = h('input', {
      class: 'sds-filter',
      type: 'search',
      placeholder: 'Filter rows',
      'aria-label': `Filter the rows of ${label}`,
      oninput: () => this.onFilterInput()
    }) as HTMLInputElement;
    this.csvStatus = h('span', { class: 'sds-csv-status', role: 'status' });
    this.pager = h(
      'div',
      { class: 'sds-pager' },
      h('button', { class: 'sds-button sds-prev', type: 'button', onclick: () => this.go(-1) }, 'Previous'),
      this.status,
      h('button', { class: 'sds-button sds-next', type: 'button', onclick: () => this.go(1) }, 'Next')
    );
    this.node = h(
      'div',
      { class: 'sds-table-view', 'data-table': table.name },
      h(
        'div',
        { class: 'sds-table-tools' },
        h('span', { class: 'sds-table-name' }, table.name),
        this.search,
        h(
          'button',
          {
            class: 'sds-button sds-csv',
            type: 'button',
            title: 'Download the whole table (filtered and sorted as shown) as CSV, every digit kept',
            onclick: () => void this.downloadCsv()
          },
          'Download CSV'
        ),
        this.csvStatus
      ),
      this.grid,
      this.pager
    );
    void this.load();
  }

  private go(step: number): void {
    const total = this.page?.total ?? this.table.n_rows;
    const next = this.offset + step * this.limit;
    if (next < 0 || next >= total) {
      return;
    }
    this.offset = next;
    void this.load();
  }

  /** Sort by a column: first click ascending, second descending. */
  sortBy(column: string): Promise<void> {
    if (this.sort === column) {
      this.descending = !this.descending;
    } else {
      this.sort = column;
      this.descending = false;
    }
    this.offset = 0;
    return this.load();
  }

  /** Keep the rows whose text contains `text` (ignoring case); from the first page. */
  filterBy(text: string): Promise<void> {
    clearTimeout(this.filterTimer);
    this.filter = text.trim();
    this.offset = 0;
    return this.load();
  }

  private onFilterInput(): void {
    clearTimeout(this.filterTimer);
    this.filterTimer = setTimeout(() => void this.filterBy(this.search.value), FILTER_DELAY_MS);
  }

  /** What the server needs to reproduce the view: sort and filter. */
  private viewParams(): { sort?: string; descending?: boolean; filter?: string } {
    const p: { sort?: string; descending?: boolean; filter?: string } = {};
    if (this.sort !== undefined) {
      p.sort = this.sort;
      p.descending = this.descending;
    }
    if (this.filter) {
      p.filter = this.filter;
    }
    return p;
  }

  async load(): Promise<void> {
    const token = ++this.token;
    this.node.classList.add('sds-busy');
    this.grid.setAttribute('aria-busy', 'true');
    const params = {
      version: this.version,
      result: this.result,
      table: this.table.name,
      offset: this.offset,
      limit: this.limit,
      ...this.viewParams()
    };
    try {
      const { data } = await this.transport.request('result_page', params);
      if (token !== this.token) {
        return;
      }
      this.page = data;
      this.render(data);
    } catch (err) {
      if (token === this.token) {
        const e = TransportError.from(err);
        fill(this.grid, errorBox(e.message, e.kind));
      }
    } finally {
      if (token === this.token) {
        this.node.classList.remove('sds-busy');
        this.grid.removeAttribute('aria-busy');
      }
    }
  }

  /** The whole table as CSV, made in Python (every row, every digit) and saved as a file. */
  async downloadCsv(): Promise<void> {
    this.csvStatus.textContent = 'Preparing CSV…';
    try {
      const { data } = await this.transport.request('result_csv', {
        version: this.version,
        result: this.result,
        table: this.table.name,
        ...this.viewParams()
      });
      download(new Blob([data.csv], { type: 'text/csv;charset=utf-8' }), data.filename);
      this.csvStatus.textContent = `Saved ${data.filename} (${plural(data.rows, 'row')})`;
    } catch (err) {
      this.csvStatus.textContent = `CSV failed: ${TransportError.from(err).message}`;
    }
  }

  /** Copying cells copies their full values, tab-separated by row, not the rounded text. */
  private onCopy(e: ClipboardEvent): void {
    const selection = document.getSelection();
    if (!selection || selection.isCollapsed || !e.clipboardData) {
      return;
    }
    const lines: string[] = [];
    for (const tr of this.grid.querySelectorAll('tr')) {
      const cells = [...tr.children].filter(c => selection.containsNode(c, true));
      if (cells.length) {
        lines.push(cells.map(c => (this.values.has(c) ? fullValue(this.values.get(c)) : (c.textContent ?? '').trim())).join('\t'));
      }
    }
    if (lines.length) {
      e.clipboardData.setData('text/plain', lines.join('\n'));
      e.preventDefault();
    }
  }

  /** A value that leads to the tissue: a button (Tab, Enter) that shows it there. */
  private linkButton(link: TissueLink, shown: string): HTMLElement {
    const button = h(
      'button',
      {
        type: 'button',
        class: 'sds-tissue-link',
        title: `Show ${link.what} on the tissue`,
        'aria-label': `${shown}: show ${link.what} on the tissue`
      },
      shown
    );
    button.addEventListener('click', () => this.follow(link, button));
    return button;
  }

  private render(page: ResultPage): void {
    const columns = page.columns?.length ? page.columns : this.table.columns;
    const numeric = columns.map(c => /int|float|uint|double|decimal/i.test(c.dtype));
    const formats: CellFormat[] = columns.map(c => columnFormat(c.name, c.dtype, c));
    const head = h(
      'tr',
      {},
      columns.map(c => {
        const sorted = this.sort === c.name;
        return h(
          'th',
          {
            scope: 'col',
            class: sorted ? 'sds-sorted' : null,
            'aria-sort': sorted ? (this.descending ? 'descending' : 'ascending') : 'none',
            title: `${c.name} (${c.dtype}): click to sort`,
            'data-column': c.name
          },
          h(
            'button',
            { type: 'button', class: 'sds-sort', onclick: () => void this.sortBy(c.name) },
            c.name,
            sorted ? (this.descending ? ' ▼' : ' ▲') : ''
          )
        );
      })
    );
    const body = h(
      'tbody',
      {},
      (page.rows ?? []).map(row =>
        h(
          'tr',
          {},
          row.map((v, i) => {
            const shown = (formats[i] ?? cell)(v);
            const full = fullValue(v);
            const link = this.links(columns[i]?.name ?? '', v);
            const td = h(
              'td',
              { class: numeric[i] ? 'sds-num' : null, title: full !== shown && !link ? full : null },
              link ? this.linkButton(link, shown) : shown
            );
            this.values.set(td, v);
            return td;
          })
        )
      )
    );
    const n = page.rows?.length ?? 0;
    fill(
      this.grid,
      h('table', { class: 'sds-table' }, h('thead', {}, head), body),
      n ? null : empty(this.filter ? `No rows contain “${this.filter}”.` : 'This table has no rows.')
    );
    const from = n ? page.offset + 1 : 0;
    const filtered =
      this.filter && page.unfiltered !== undefined ? ` (filtered from ${page.unfiltered.toLocaleString('en')})` : '';
    this.status.textContent = `rows ${from.toLocaleString('en')}–${(page.offset + n).toLocaleString('en')} of ${page.total.toLocaleString('en')}${filtered}`;
    (this.pager.querySelector('.sds-prev') as HTMLButtonElement).disabled = page.offset <= 0;
    (this.pager.querySelector('.sds-next') as HTMLButtonElement).disabled = page.offset + n >= page.total;
  }
}
