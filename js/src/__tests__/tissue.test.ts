import { afterEach, describe, expect, it } from 'vitest';
import { mountApp, type AppHandle, type TabName } from '../app';
import { tissueLink } from '../app/results/results';
import { NO_TISSUE } from '../app/figures/tissue';
import type { Figure, Result, ResultPage } from '../app/shared/types';
import { FakeTransport, NOW, fakeCharts, settle, text } from './fixtures';
import { CANVAS, comparison, tissueTransport } from './tissuekit';

let app: AppHandle | null = null;
afterEach(() => {
  app?.dispose();
  app = null;
  document.body.replaceChildren();
});

const MARKERS: Result = {
  id: 'markers',
  kind: 'markers',
  title: 'Markers of leiden',
  meta: { kind: 'markers', title: 'Markers of leiden', parameters: { groupby: 'leiden', layer: 'counts' } },
  tables: [
    {
      name: 'table',
      n_rows: 2,
      columns: [
        { name: 'group', dtype: 'str' },
        { name: 'gene', dtype: 'str' },
        { name: 'score', dtype: 'float64' }
      ]
    }
  ],
  chart: { mark: 'bar' }
};

const PAGE: ResultPage = {
  columns: MARKERS.tables[0].columns,
  rows: [
    ['0', 'CD3E', 2.5],
    ['1', 'MS4A1', 1.25]
  ],
  offset: 0,
  total: 2
} as ResultPage;

function transport(figures: Figure[] = [CANVAS]): FakeTransport {
  return tissueTransport(figures)
    .on('results', () => ({ results: [MARKERS] }))
    .on('result_page', () => PAGE);
}

function mount(t: FakeTransport, tab: TabName, charts = fakeCharts()): HTMLElement {
  const el = document.createElement('div');
  document.body.append(el);
  app = mountApp(el, t, { now: () => NOW, renderChart: charts.render, initialTab: tab });
  return el;
}

describe('linked to the tissue: which values lead where', () => {
  it('genes color by expression (in the layer the result names), groups highlight the groupby column', () => {
    const meta = { parameters: { groupby: 'leiden', layer: 'counts' } };
    expect(tissueLink('gene', 'CD3E', meta)).toEqual({ target: { gene: 'CD3E', layer: 'counts' }, what: 'CD3E expression (counts)' });
    expect(tissueLink('names', 'CD3E', {})).toEqual({ target: { gene: 'CD3E' }, what: 'CD3E expression' });
    expect(tissueLink('group', 3, meta)).toEqual({ target: { column: 'leiden', highlight: '3' }, what: 'leiden 3' });
    // squidpy's neighborhood enrichment names its column cluster_key; the table can use the column's own name
    expect(tissueLink('leiden', '2', { parameters: { cluster_key: 'leiden' } })?.target).toEqual({ column: 'leiden', highlight: '2' });
    // no obs column named: a group leads nowhere; numbers, missing values and other columns neither
    expect(tissueLink('group', '3', { parameters: {} })).toBeNull();
    expect(tissueLink('score', 2.5, meta)).toBeNull();
    expect(tissueLink('gene', null, meta)).toBeNull();
  });
});

describe('linked to the tissue: results', () => {
  it('a click (or Enter) on a gene colors the spatial view beside the result; Back returns to the row', async () => {
    const t = transport();
    const el = mount(t, 'results');
    await settle(10);
    const links = [...el.querySelectorAll<HTMLButtonElement>('.sds-tissue-link')];
    // group and gene cells are buttons (keyboard reachable), the score is not
    expect(links.map(b => text(b))).toEqual(['0', 'CD3E', '1', 'MS4A1']);
    expect(links[1].getAttribute('aria-label')).toBe('CD3E: show CD3E expression (counts) on the tissue');
    links[1].focus();
    links[1].click();
    await settle(10);
    const pane = el.querySelector<HTMLElement>('.sds-tissue')!;
    expect(pane.hidden).toBe(false);
    expect(text(pane.querySelector('.sds-tissue-title'))).toBe('On the tissue: CD3E expression (counts)');
    expect(pane.closest('.sds-result')?.getAttribute('data-result')).toBe('markers');
    expect(t.callsOf('canvas')).toEqual([{ version: 2, figure: 'tissue' }]);
    expect(t.callsOf('color_values')).toEqual([{ version: 2, figure: 'tissue', gene: 'CD3E', layer: 'counts' }]);
    expect(pane.querySelector<HTMLElement>('.sds-spatial')!.dataset.colorBy).toBe('CD3E');
    expect(pane.dataset.drawn).toBe('CD3E expression (counts)');

    // a group highlights its cells; the view is loaded once
    links[2].click();
    await settle(10);
    expect(t.callsOf('color_values')[1]).toEqual({ version: 2, figure: 'tissue', column: 'leiden', highlight: '1' });
    expect(t.callsOf('canvas')).toHaveLength(1);
    const legend = [...pane.querySelectorAll('.sds-legend-label')].map(l => text(l));
    expect(legend).toEqual(['1', 'other cells']);

    // Back (or Escape) hides the view and gives the focus back to the value clicked
    pane.querySelector<HTMLButtonElement>('.sds-tissue-back')!.click();
    expect(pane.hidden).toBe(true);
    expect(document.activeElement).toBe(links[2]);
    links[1].click();
    await settle(10);
    // Escape where the focus is (moved into the view when it opened: issue 29), not on the pane itself
    expect(pane.contains(document.activeElement)).toBe(true);
    document.activeElement!.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    expect(pane.hidden).toBe(true);
    expect(document.activeElement).toBe(links[1]);
  });

  it('a click on a chart mark leads to its gene first', async () => {
    const t = transport();
    const charts = fakeCharts();
    const el = mount(t, 'results', charts);
    await settle(10);
    charts.click({ group: '0', gene: 'MS4A1', score: 1 });
    await settle(10);
    expect(t.callsOf('color_values')).toEqual([{ version: 2, figure: 'tissue', gene: 'MS4A1', layer: 'counts' }]);
    expect(text(el.querySelector('.sds-tissue-title'))).toBe('On the tissue: MS4A1 expression (counts)');
  });

  it('says so where the version has no spatial view', async () => {
    const t = transport([]);
    const el = mount(t, 'results');
    await settle(10);
    el.querySelector<HTMLButtonElement>('.sds-tissue-link')!.click();
    await settle(10);
    expect(text(el.querySelector('.sds-tissue .sds-empty'))).toBe(NO_TISSUE);
    expect(t.callsOf('canvas')).toEqual([]);
  });
});


describe('compare: show on tissue, and versions on other branches', () => {
  it('colors A by how a column changed since B; a branch version is picked by its dataset ID', async () => {
    const t = transport()
      .on('compare', p => comparison(p.a, p.b as number))
      .on('tree', () => ({
        current: 'ds-2',
        base: null,
        notes: [],
        nodes: [
          { dataset_id: 'ds-2', parent: 'ds-1', depth: 2, title: 'Version 2', folder: 'v2', created_at: null, created_by: null },
          { dataset_id: 'ds-1', parent: null, depth: 1, title: 'Version 1', folder: 'v1', created_at: null, created_by: null },
          { dataset_id: 'side-9', parent: 'ds-1', depth: 2, title: 'Side', folder: 'side', created_at: null, created_by: null }
        ]
      }))
      .on('fingerprint', () => ({ fingerprint: 'x' }));
    const el = mount(t, 'compare');
    await settle(10);
    expect(t.callsOf('compare')).toEqual([{ a: 1, b: 2 }]);
    const show = el.querySelector<HTMLButtonElement>('.sds-obs-change[data-column="regions"] .sds-show-tissue')!;
    show.click();
    await settle(10);
    expect(t.callsOf('color_values')).toEqual([{ version: 2, figure: 'tissue', column: 'regions', against: 1 }]);
    const pane = el.querySelector<HTMLElement>('.sds-obs-change[data-column="regions"] .sds-tissue')!;
    expect(pane.hidden).toBe(false);
    expect([...pane.querySelectorAll('.sds-legend-label')].map(l => text(l))).toEqual(['0 → 1', 'unchanged']);

    // the branch version is offered in B's picker, apart from the history
    const selectB = el.querySelector<HTMLSelectElement>('select[aria-label^="Version B"]')!;
    const groups = [...selectB.querySelectorAll('optgroup')].map(g => g.label);
    expect(groups).toEqual(['This history', 'Other branches']);
    expect([...selectB.querySelectorAll('optgroup')[1].querySelectorAll('option')].map(o => o.value)).toEqual(['side-9']);
    selectB.value = 'side-9';
    selectB.dispatchEvent(new Event('change'));
    await settle(10);
    expect(t.callsOf('compare').slice(-1)[0]).toEqual({ a: 'side-9', b: 2 });
    expect(text(el.querySelector('.sds-compare-intro'))).toContain('From B (Side (branch, v2)) to A (v2 Version 2)');
    expect(text(el.querySelector('.sds-transitions thead'))).toContain('in Side (B)');
    // A on the chain: its tissue, colored against the branch version
    el.querySelector<HTMLButtonElement>('.sds-show-tissue')!.click();
    await settle(10);
    expect(t.callsOf('color_values').slice(-1)[0]).toEqual({ version: 2, figure: 'tissue', column: 'regions', against: 'side-9' });
    expect(el.querySelector<HTMLElement>('.sds-show-tissue')!.hidden).toBe(false);
    // A on a branch: no tissue of it here (it is not the opened chain)
    const selectA = el.querySelector<HTMLSelectElement>('select[aria-label="Version A"]')!;
    selectA.value = 'side-9';
    selectB.value = '2';
    selectA.dispatchEvent(new Event('change'));
    await settle(10);
    expect(el.querySelector('.sds-show-tissue')).toBeNull();
  });

  it('offers no "Show on tissue" where A has no spatial view', async () => {
    const t = transport([]).on('compare', p => comparison(p.a, p.b as number));
    const el = mount(t, 'compare');
    await settle(10);
    expect(el.querySelector('.sds-obs-change[data-column="regions"]')).not.toBeNull();
    expect(el.querySelector<HTMLElement>('.sds-show-tissue')?.hidden).toBe(true);
  });
});
