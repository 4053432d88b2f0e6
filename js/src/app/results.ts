/** Results of the selected version: meta as a report, tables paged and sorted by the server. */

import type { ChartHandle, ChartRenderer } from './chart';
import { empty, errorBox, fill, h, loading, report, runDisposers } from './dom';
import { cell, exactTime, relativeTime } from './format';
import { badge } from './history';
import { TransportError, type Transport } from './transport';
import type { Result, ResultMeta, ResultPage, ResultTable } from './types';

export const PAGE_SIZE = 50;

export class ResultsView {
  readonly node: HTMLElement;
  private token = 0;
  private disposers: (() => void)[] = [];

  constructor(
    private readonly transport: Transport,
    private readonly renderChart: ChartRenderer,
    private readonly now: () => number = Date.now
  ) {
    this.node = h('div', { class: 'sds-results' });
  }

  dispose(): void {
    this.clear();
  }

  private clear(): void {
    runDisposers(this.disposers);
  }

  async show(version: number): Promise<void> {
    const token = ++this.token;
    this.clear();
    fill(this.node, loading());
    try {
      const { data } = await this.transport.request('results', { version });
      if (token !== this.token) {
        return;
      }
      const results = data.results ?? [];
      fill(
        this.node,
        data.error ? errorBox(data.error.message, data.error.kind) : null,
        results.length ? null : empty('This version has no results.'),
        results.map(r => this.result(version, r, token))
      );
    } catch (err) {
      if (token === this.token) {
        const e = TransportError.from(err);
        fill(this.node, errorBox(e.message, e.kind));
      }
    }
  }

  private result(version: number, r: Result, token: number): HTMLElement {
    const meta = r.meta ?? {};
    const kind = r.kind ?? meta.kind ?? null;
    const node = h(
      'section',
      { class: 'sds-result', 'data-result': r.id },
      h(
        'header',
        { class: 'sds-result-head' },
        h('span', { class: 'sds-result-title' }, r.title || meta.title || r.id),
        kind ? badge(kind, 'result') : null
      ),
      r.error ? errorBox(r.error.message, r.error.kind) : null,
      r.meta ? this.reportOf(r.id, kind, meta) : null
    );
    const tables = r.tables ?? [];
    if (r.chart) {
      const target = h('div', { class: 'sds-chart' });
      node.append(target);
      let handle: ChartHandle | null = null;
      this.disposers.push(() => handle?.dispose());
      this.renderChart(target, r.chart).then(
        hd => {
          if (token !== this.token) {
            hd.dispose();
          } else {
            handle = hd;
          }
        },
        err => target.replaceWith(errorBox(`chart failed: ${TransportError.from(err).message}`, 'chart'))
      );
    }
    const [first, ...rest] = sortTables(tables);
    if (first) {
      node.append(new TableView(this.transport, version, r.id, first).node);
    }
    for (const t of rest) {
      const details = h(
        'details',
        { class: 'sds-more-table' },
        h('summary', {}, `${t.name} `, h('span', { class: 'sds-count' }, `${t.n_rows.toLocaleString()} rows`))
      );
      let opened = false;
      details.addEventListener('toggle', () => {
        if (details.open && !opened) {
          opened = true;
          details.append(new TableView(this.transport, version, r.id, t).node);
        }
      });
      node.append(details);
    }
    return node;
  }

  private reportOf(id: string, kind: string | null, meta: ResultMeta): HTMLElement {
    const rows: [string, Node | string][] = [];
    const add = (label: string, value: Node | string | null | undefined) => {
      if (value !== null && value !== undefined && value !== '') {
        rows.push([label, value]);
      }
    };
    add('Result', id);
    add('Kind', kind ?? undefined);
    add('Title', meta.title);
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

/** One result table, paged and sorted on the server through `result_page`. */
export class TableView {
  readonly node: HTMLElement;
  offset = 0;
  sort: string | undefined;
  descending = false;
  private token = 0;
  private page: ResultPage | null = null;
  private readonly grid: HTMLElement;
  private readonly pager: HTMLElement;
  private readonly status: HTMLElement;

  constructor(
    private readonly transport: Transport,
    private readonly version: number,
    private readonly result: string,
    private readonly table: ResultTable,
    private readonly limit = PAGE_SIZE
  ) {
    this.grid = h('div', { class: 'sds-grid' });
    this.status = h('span', { class: 'sds-page-status' });
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
      h('div', { class: 'sds-table-name' }, table.name),
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

  async load(): Promise<void> {
    const token = ++this.token;
    this.node.classList.add('sds-busy');
    const params: {
      version: number;
      result: string;
      table: string;
      offset: number;
      limit: number;
      sort?: string;
      descending?: boolean;
    } = {
      version: this.version,
      result: this.result,
      table: this.table.name,
      offset: this.offset,
      limit: this.limit
    };
    if (this.sort !== undefined) {
      params.sort = this.sort;
      params.descending = this.descending;
    }
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
      }
    }
  }

  private render(page: ResultPage): void {
    const columns = page.columns?.length ? page.columns : this.table.columns;
    const numeric = columns.map(c => /int|float|uint|double|decimal/i.test(c.dtype));
    const head = h(
      'tr',
      {},
      columns.map(c => {
        const sorted = this.sort === c.name;
        const th = h(
          'th',
          {
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
        return th;
      })
    );
    const body = h(
      'tbody',
      {},
      (page.rows ?? []).map(row =>
        h(
          'tr',
          {},
          row.map((v, i) => h('td', { class: numeric[i] ? 'sds-num' : null }, cell(v)))
        )
      )
    );
    fill(this.grid, h('table', { class: 'sds-table' }, h('thead', {}, head), body));
    const n = page.rows?.length ?? 0;
    const from = n ? page.offset + 1 : 0;
    this.status.textContent = `rows ${from.toLocaleString()}–${(page.offset + n).toLocaleString()} of ${page.total.toLocaleString()}`;
    (this.pager.querySelector('.sds-prev') as HTMLButtonElement).disabled = page.offset <= 0;
    (this.pager.querySelector('.sds-next') as HTMLButtonElement).disabled = page.offset + n >= page.total;
  }
}
