import { afterEach, describe, expect, it } from 'vitest';
import { mountApp, type AppHandle } from '../app';
import { TransportError } from '../app/shared/transport';
import type { Params, Result, ResultPage } from '../app/shared/types';
import { FakeTransport, NOW, fakeCharts, history, settle, text } from './fixtures';

let app: AppHandle | null = null;
afterEach(() => {
  app?.dispose();
  app = null;
  document.body.replaceChildren();
});

const MARKERS: Result = {
  id: 'markers_leiden',
  kind: 'markers',
  title: 'Markers of leiden',
  meta: {
    kind: 'markers',
    title: 'Markers of leiden',
    method: 'wilcoxon',
    parameters: { groupby: 'leiden', n_genes: 25 },
    summary: { n_groups: 7 },
    created_by: 'ana',
    created_at: new Date(NOW - 2 * 86400_000).toISOString(),
    app_version: '1.2.0'
  },
  tables: [
    { name: 'per_group', n_rows: 7, columns: [{ name: 'group', dtype: 'str' }] },
    {
      name: 'table',
      n_rows: 120,
      columns: [
        { name: 'gene', dtype: 'str' },
        { name: 'score', dtype: 'float32' }
      ]
    }
  ],
  chart: { mark: 'point' }
};

const BROKEN: Result = {
  id: 'orphan',
  kind: null,
  title: null,
  meta: null,
  tables: [],
  error: { kind: 'result', message: 'result orphan has no meta' }
};

/** A server that pages and sorts 120 rows of (gene_i, i). */
function pageOf(p: Params<'result_page'>): ResultPage {
  const offset = p.offset ?? 0;
  let rows: unknown[][] = Array.from({ length: 120 }, (_, i) => [`gene_${i}`, i / 2]);
  if (p.sort === 'score' && p.descending) {
    rows = rows.reverse();
  }
  return {
    columns: [
      { name: 'gene', dtype: 'str' },
      { name: 'score', dtype: 'float32' }
    ],
    rows: rows.slice(offset, offset + (p.limit ?? 100)),
    total: 120,
    offset,
    unfiltered: 120
  };
}

function mount(t: FakeTransport, tab: 'results' | 'compare', charts = fakeCharts()): HTMLElement {
  const el = document.createElement('div');
  document.body.append(el);
  app = mountApp(el, t, { now: () => NOW, renderChart: charts.render, initialTab: tab });
  return el;
}

describe('results view', () => {
  it('reports the meta, draws the default chart, and pages the main table from the server', async () => {
    const charts = fakeCharts();
    const t = new FakeTransport()
      .on('history', () => history(2))
      .on('results', () => ({ results: [MARKERS, BROKEN] }))
      .on('result_page', p => pageOf(p));
    const el = mount(t, 'results', charts);
    await settle(10);
    const r = el.querySelector<HTMLElement>('[data-result="markers_leiden"]')!;
    const report = text(r.querySelector('.sds-report'));
    for (const s of ['markers', 'wilcoxon', 'groupby', 'leiden', 'n_genes', '25', 'n_groups', '7', 'ana', '2 days ago', '1.2.0']) {
      expect(report).toContain(s);
    }
    expect(charts.specs).toEqual([{ mark: 'point' }]);

    // the default table ("table") first, one page, never the whole table
    expect(t.callsOf('result_page')).toEqual([
      { version: 2, result: 'markers_leiden', table: 'table', offset: 0, limit: 50 }
    ]);
    const grid = r.querySelector<HTMLElement>('.sds-table-view[data-table="table"]')!;
    expect(grid.querySelectorAll('tbody tr').length).toBe(50);
    expect(text(grid.querySelector('.sds-page-status'))).toBe('rows 1–50 of 120');
    expect(grid.querySelector<HTMLButtonElement>('.sds-prev')!.disabled).toBe(true);

    grid.querySelector<HTMLButtonElement>('.sds-next')!.click();
    await settle();
    expect(text(grid.querySelector('.sds-page-status'))).toBe('rows 51–100 of 120');
    expect(text(grid.querySelector('tbody tr td'))).toBe('gene_50');

    // sorting asks the server, from the first page
    const sortButton = () => grid.querySelector<HTMLButtonElement>('th[data-column="score"] button')!;
    sortButton().click();
    await settle();
    sortButton().click();
    await settle();
    expect(t.callsOf('result_page').slice(-2)).toEqual([
      { version: 2, result: 'markers_leiden', table: 'table', offset: 0, limit: 50, sort: 'score', descending: false },
      { version: 2, result: 'markers_leiden', table: 'table', offset: 0, limit: 50, sort: 'score', descending: true }
    ]);
    expect(grid.querySelector('th[data-column="score"]')!.getAttribute('aria-sort')).toBe('descending');
    expect(text(grid.querySelector('tbody tr td'))).toBe('gene_119');
    expect(text(grid.querySelectorAll('tbody tr td')[1])).toBe('59.5');

    // further tables load when opened
    const more = r.querySelector<HTMLDetailsElement>('details.sds-more-table')!;
    expect(text(more.querySelector('summary'))).toBe('per_group 7 rows');
    more.open = true;
    more.dispatchEvent(new Event('toggle'));
    await settle();
    expect(t.callsOf('result_page').slice(-1)[0]).toEqual({
      version: 2,
      result: 'markers_leiden',
      table: 'per_group',
      offset: 0,
      limit: 50
    });

    // a result with an error shows it in place
    expect(text(el.querySelector('[data-result="orphan"] .sds-error'))).toContain('result orphan has no meta');
  });

  it('shows a failed page in place and keeps the rest', async () => {
    const t = new FakeTransport()
      .on('history', () => history(1))
      .on('results', () => ({ results: [MARKERS] }))
      .on('result_page', () => {
        throw new TransportError('bad-request', 'unknown column');
      });
    const el = mount(t, 'results');
    await settle(10);
    expect(text(el.querySelector('.sds-table-view .sds-error'))).toContain('unknown column');
    expect(text(el.querySelector('.sds-report'))).toContain('wilcoxon');
  });
});
