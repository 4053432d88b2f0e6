import { afterEach, describe, expect, it, vi } from 'vitest';
import { compile } from 'vega-lite';
import { ACTION_MESSAGE_MS, mountApp, type AppHandle } from '../app';
import { columnOf, fitSpec } from '../app/shared/chart';
import { columnFormat, fullValue, isPValueColumn, plural } from '../app/shared/format';
import { resultCodeFor } from '../app/results/results';
import { tabKeyTarget } from '../app/shared/tabs';
import { VirtualList } from '../app/shared/vlist';
import type { Params, Result, ResultPage } from '../app/shared/types';
import charts from './fixtures/charts.json';
import { FakeTransport, NOW, fakeCharts, history, settle, text } from './fixtures';

let app: AppHandle | null = null;
afterEach(() => {
  app?.dispose();
  app = null;
  document.body.replaceChildren();
});

describe('number formats per column', () => {
  it('gives a float column one precision from its range', () => {
    const f = columnFormat('score', 'float64', { min: -0.0167695, max: 0.262 });
    expect([0.262, -0.0167695, 0.1].map(f)).toEqual(['0.2620', '-0.0168', '0.1000']);
    const big = columnFormat('mean', 'float32', { min: 3, max: 1234.56 });
    expect([1234.56, 3.14159].map(big)).toEqual(['1,235', '3']);
    const mid = columnFormat('logfc', 'float64', { min: -5.123456, max: 7.5 });
    expect([7.5, -5.123456].map(mid)).toEqual(['7.500', '-5.123']);
    // tiny magnitudes switch to scientific notation
    expect(columnFormat('x', 'float64', { min: 0, max: 3e-6 })(2.5e-6)).toBe('2.500e-6');
  });

  it('shows p-values and q-values in scientific notation, integers as integers', () => {
    for (const name of ['pvals_adj', 'pval', 'p_value', 'padj', 'qval', 'q_value', 'fdr', 'P', 'pval_norm']) {
      expect(isPValueColumn(name), name).toBe(true);
    }
    for (const name of ['score', 'group', 'I', 'pct', 'n_cells']) {
      expect(isPValueColumn(name), name).toBe(false);
    }
    const p = columnFormat('pvals_adj', 'float64', { min: 1e-30, max: 0.9 });
    expect([0.000123456, 0.9, 0].map(p)).toEqual(['1.23e-4', '9.00e-1', '0']);
    const n = columnFormat('n_cells', 'int64', { min: 0, max: 12000 });
    expect([12000, 7].map(n)).toEqual(['12,000', '7']);
    // text, missing values and NaN (null in JSON) pass through
    expect(columnFormat('gene', 'object')('CD8A')).toBe('CD8A');
    expect(columnFormat('score', 'float64', { min: 0, max: 1 })(null)).toBe('');
  });

  it('keeps every digit for hover and copies', () => {
    expect(fullValue(-0.0167695)).toBe('-0.0167695');
    expect(fullValue(0.1 + 0.2)).toBe('0.30000000000000004');
  });

  it('counts with the right plural', () => {
    expect(plural(1, 'key')).toBe('1 key');
    expect(plural(2, 'key')).toBe('2 keys');
    expect(plural(0, 'row')).toBe('0 rows');
    expect(plural(1500, 'cell')).toBe('1,500 cells');
    expect(plural(2, 'child', 'children')).toBe('2 children');
  });
});

/** A Vega-Lite spec is open JSON: these tests read it field by field, as the builders wrote it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

describe('charts fit their card (specs from the Python builders)', () => {
  const markers = charts.markers_12 as Record<string, Json>;

  it('wraps facets into as many columns as fit the width', () => {
    const fit = markers.usermeta.fit;
    const cell = fit.label + fit.min + 20;
    for (const width of [300, 450, 700, 1400]) {
      const fitted = fitSpec(markers, width) as Record<string, Json>;
      expect(fitted.columns).toBe(Math.max(1, Math.min(12, Math.floor((width - 12) / cell))));
      // every column's plot plus its labels stays inside the width
      expect(fitted.columns * (fitted.spec.width + fit.label + 20)).toBeLessThanOrEqual(width);
    }
    expect(markers.columns).toBeLessThanOrEqual(4); // the spec as stored wraps too
  });

  it('sorts facets of numbered groups as numbers and compiles with Vega-Lite', () => {
    const order = Array.from({ length: 12 }, (_, i) => String(i));
    expect(markers.facet.sort).toEqual(order);
    expect(markers.$schema).toMatch(/vega-lite\/v6\.json$/);
    expect(markers.title).toBeUndefined();
    const vega = compile(fitSpec(markers, 450) as never).spec as Record<string, Json>;
    const cellGroup = JSON.stringify(vega);
    expect(cellGroup).toContain('"columns":1');
    const clusters = charts.clusters_12 as Record<string, Json>;
    expect(clusters.encoding.x.sort).toEqual(order);
    const fitted = fitSpec(clusters, 450) as Record<string, Json>;
    expect(fitted.width).toBe(438);
    expect(fitted.autosize).toEqual({ type: 'fit-x', contains: 'padding' });
    expect(() => compile(fitted as never)).not.toThrow();
  });

  /** Vega-Lite's compile warnings for `spec`. */
  const warningsOf = (spec: object): string[] => {
    const warned: string[] = [];
    const logger = {
      level: () => logger,
      warn: (...m: unknown[]) => (warned.push(m.join(' ')), logger),
      info: () => logger,
      debug: () => logger,
      error: (...m: unknown[]) => (warned.push(m.join(' ')), logger)
    };
    compile(spec as never, { logger: logger as never });
    return warned;
  };

  it('fits only the width of a heatmap: its rows keep a band each, and Vega-Lite drops no fit', () => {
    const heat = charts.nhood_4 as Record<string, Json>;
    // what the fit asked before: autosize fit-x over a stepped height, which Vega-Lite warns about
    expect(warningsOf({ ...heat, width: 438, autosize: { type: 'fit-x', contains: 'padding' } })).toEqual([
      'Dropping "fit-y" because spec has discrete height.'
    ]);
    const fitted = fitSpec(heat, 450) as Record<string, Json>;
    expect(fitted.width).toBe(438);
    expect(fitted.height).toBe(4 * 20); // four clusters down, Vega-Lite's band step each
    expect(fitted.autosize).toEqual({ type: 'fit-x', contains: 'padding' });
    expect(warningsOf(fitted)).toEqual([]);
    // ranked bars (a discrete y) too; a continuous y is left to Vega-Lite
    const clusters = fitSpec(charts.clusters_12, 450) as Record<string, Json>;
    expect(clusters.height).toBeUndefined();
    expect(warningsOf(clusters)).toEqual([]);
  });

  it('draws columns named like nested access (p.adj, score[1]): the Python builder escapes the fields', async () => {
    const dotted = charts.dotted_columns as Record<string, Json>;
    expect(columnOf(dotted.encoding.x.field)).toBe('p.adj');
    expect(columnOf(dotted.encoding.y.field)).toBe('score[1]');
    expect(Object.keys(dotted.data.values[0]).sort()).toEqual(['cell.type', 'p.adj', 'score[1]']);
    expect(warningsOf(fitSpec(dotted, 300))).toEqual([]);
  });

  it('leaves a spec that sets its own width alone', () => {
    expect(fitSpec({ mark: 'bar', width: 200 }, 500)).toEqual({ mark: 'bar', width: 200 });
    expect(fitSpec({ mark: 'bar' }, 0)).toEqual({ mark: 'bar' });
  });
});

describe('tabs and lists', () => {
  it('moves between tabs with arrows, Home and End, wrapping', () => {
    expect(tabKeyTarget('ArrowRight', 0, 4)).toBe(1);
    expect(tabKeyTarget('ArrowRight', 3, 4)).toBe(0);
    expect(tabKeyTarget('ArrowLeft', 0, 4)).toBe(3);
    expect(tabKeyTarget('Home', 2, 4)).toBe(0);
    expect(tabKeyTarget('End', 0, 4)).toBe(3);
    expect(tabKeyTarget('a', 0, 4)).toBeNull();
  });

  it('is one Tab stop with tabpanel wiring', async () => {
    const t = new FakeTransport().on('history', () => history(2)).on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }));
    const el = document.createElement('div');
    document.body.append(el);
    app = mountApp(el, t, { now: () => NOW, renderChart: fakeCharts().render });
    await settle();
    const tabs = [...el.querySelectorAll<HTMLButtonElement>('[role="tab"]')];
    const panel = el.querySelector<HTMLElement>('[role="tabpanel"]')!;
    expect(tabs.filter(b => b.tabIndex === 0).map(b => b.dataset.tab)).toEqual(['changes']);
    expect(tabs.every(b => b.getAttribute('aria-controls') === panel.id)).toBe(true);
    expect(panel.getAttribute('aria-labelledby')).toBe(tabs[0].id);
    expect(panel.tabIndex).toBe(0);
    tabs[0].focus();
    tabs[0].dispatchEvent(new KeyboardEvent('keydown', { key: 'End', bubbles: true }));
    expect(document.activeElement).toBe(tabs[tabs.length - 1]);
    expect(tabs[tabs.length - 1].getAttribute('aria-selected')).toBe('true');
    expect(panel.getAttribute('aria-labelledby')).toBe(tabs[tabs.length - 1].id);
    expect(tabs.filter(b => b.tabIndex === 0).length).toBe(1);
  });

  it('gives rows their place in the list, and the active descendant only while rendered', () => {
    const node = document.createElement('div');
    document.body.append(node);
    let selected = 3;
    const list = new VirtualList(node, {
      rowHeight: 20,
      fallbackHeight: 100,
      overscan: 0,
      renderRow: i => {
        const row = document.createElement('div');
        row.setAttribute('aria-selected', String(i === selected));
        return row;
      }
    });
    list.setCount(1000);
    const row3 = node.querySelector<HTMLElement>('[data-index="3"]')!;
    expect(row3.getAttribute('aria-setsize')).toBe('1000');
    expect(row3.getAttribute('aria-posinset')).toBe('4');
    expect(node.getAttribute('aria-activedescendant')).toBe(row3.id);
    // scrolled away: the selected row leaves the DOM, and so does the reference
    list.scrollToIndex(900);
    expect(node.querySelector('[data-index="3"]')).toBeNull();
    expect(node.getAttribute('aria-activedescendant')).toBeNull();
    // a refresh with nothing selected (a new history): no stale reference either
    selected = -1;
    list.scrollToIndex(0);
    list.setCount(5);
    expect(node.getAttribute('aria-activedescendant')).toBeNull();
    list.dispose();
  });
});

const MARKERS: Result = {
  id: 'markers-leiden',
  kind: 'markers',
  title: 'Markers per Leiden cluster',
  meta: { kind: 'markers', title: 'Markers per Leiden cluster', method: 'wilcoxon' },
  tables: [{ name: 'table', n_rows: 3, columns: [{ name: 'gene', dtype: 'object' }, { name: 'pvals_adj', dtype: 'float64' }] }]
};

function pageOf(p: Params<'result_page'>): ResultPage {
  const offset = p.offset ?? 0;
  const all: unknown[][] = [
    ['CD8A', 0.000123456789],
    ['CD4', 0.5],
    ['MS4A1', 0.0421]
  ];
  const rows = p.filter ? all.filter(r => String(r[0]).toLowerCase().includes(p.filter!.toLowerCase())) : all;
  return {
    columns: [
      { name: 'gene', dtype: 'object' },
      { name: 'pvals_adj', dtype: 'float64', min: 0.000123456789, max: 0.5 }
    ],
    rows: rows.slice(offset, offset + (p.limit ?? 100)),
    total: rows.length,
    offset,
    unfiltered: all.length
  };
}

describe('result tables you can work with', () => {
  it('formats, filters in Python, downloads CSV from Python, and copies the notebook line', async () => {
    const t = new FakeTransport()
      .on('history', () => history(2))
      .on('results', () => ({ results: [MARKERS] }))
      .on('result_page', p => pageOf(p))
      .on('result_csv', () => ({ csv: 'gene,pvals_adj\nCD8A,0.000123456789\n', filename: 'markers-leiden.csv', rows: 1 }));
    const el = document.createElement('div');
    document.body.append(el);
    app = mountApp(el, t, { now: () => NOW, renderChart: fakeCharts().render, initialTab: 'results', path: 'data/v2' });
    await settle(10);
    const r = el.querySelector<HTMLElement>('[data-result="markers-leiden"]')!;
    // one title: the heading, not again in the report
    expect(text(r.querySelector('h3'))).toBe('Markers per Leiden cluster');
    expect(text(r.querySelector('.sds-report'))).not.toContain('Markers per Leiden cluster');
    const first = r.querySelectorAll('.sds-table tbody tr')[0].querySelectorAll('td');
    expect(text(first[1])).toBe('1.23e-4');
    expect(first[1].getAttribute('title')).toBe('0.000123456789');

    const box = r.querySelector<HTMLInputElement>('input.sds-filter')!;
    expect(box.getAttribute('aria-label')).toContain('table of markers-leiden');
    box.value = 'cd';
    box.dispatchEvent(new Event('input'));
    await new Promise(res => setTimeout(res, 300));
    await settle();
    expect(t.callsOf('result_page').slice(-1)[0]).toEqual({
      version: 2, result: 'markers-leiden', table: 'table', offset: 0, limit: 50, filter: 'cd'
    });
    expect(r.querySelectorAll('.sds-table tbody tr').length).toBe(2);
    expect(text(r.querySelector('.sds-page-status'))).toBe('rows 1–2 of 2 (filtered from 3)');

    r.querySelector<HTMLButtonElement>('.sds-csv')!.click();
    await settle();
    expect(t.callsOf('result_csv')).toEqual([{ version: 2, result: 'markers-leiden', table: 'table', filter: 'cd' }]);
    expect(text(r.querySelector('.sds-csv-status'))).toBe('Saved markers-leiden.csv (1 row)');

    const grid = r.querySelector<HTMLElement>('.sds-grid')!;
    expect(grid.getAttribute('tabindex')).toBe('0');
    expect(grid.getAttribute('aria-label')).toBeTruthy();
    expect(r.querySelector('.sds-copy-code')!.getAttribute('title')).toContain(
      'from sds_jupyter import VersionBrowser; table = VersionBrowser("data/v2").result("markers-leiden", version=2)'
    );
  });

  it('writes the notebook line as Python, whatever the names hold', () => {
    const line = resultCodeFor('a "quoted"\nfolder')('r"1', 'cells', 3);
    expect(line).toBe('from sds_jupyter import VersionBrowser; table = VersionBrowser("a \\"quoted\\"\\nfolder").result("r\\"1", table="cells", version=3)');
    expect(resultCodeFor(undefined)('r', 'table', 1)).toBe('table = browser.result("r", version=1)');
  });
});

describe('a stack that cannot be read', () => {
  it('says so once, with a button that closes the panel', async () => {
    const t = new FakeTransport().on('history', () => {
      throw new Error('no such folder: gone/v3');
    });
    const el = document.createElement('div');
    document.body.append(el);
    let closed = 0;
    app = mountApp(el, t, { now: () => NOW, renderChart: fakeCharts().render, onClose: () => closed++ });
    await settle();
    expect(el.querySelectorAll('.sds-error').length).toBe(1);
    expect(text(el.querySelector('.sds-banner'))).toContain('no such folder: gone/v3');
    el.querySelector<HTMLButtonElement>('.sds-banner .sds-close')!.click();
    expect(closed).toBe(1);
  });

  it('a folder that holds no version: its reason said once, not again by the tree', async () => {
    const why = '/data/datasets holds no layer.json and is not a Zarr store; give a version folder, its layer.json, or a store';
    const t = new FakeTransport()
      .on('history', () => ({ versions: [], base: null, top_depth: 0, error: { kind: 'stack', message: why } }) as never)
      .on('tree', () => {
        throw new Error(why);
      })
      .on('fingerprint', () => ({ fingerprint: '' }));
    const el = document.createElement('div');
    document.body.append(el);
    app = mountApp(el, t, { now: () => NOW, renderChart: fakeCharts().render });
    await settle(10);
    expect(text(el.querySelector('.sds-banner'))).toContain(why);
    expect(el.textContent!.split(why).length - 1).toBe(1);
  });
});

describe('action messages', () => {
  it('"Refreshed" clears itself; an error stays', async () => {
    const t = new FakeTransport().on('history', () => history(1)).on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }));
    const el = document.createElement('div');
    document.body.append(el);
    let fail = false;
    app = mountApp(el, t, {
      now: () => NOW,
      renderChart: fakeCharts().render,
      actions: [{ id: 'refresh', label: 'Refresh', run: async () => { if (fail) throw new Error('gone'); return 'Refreshed'; } }]
    });
    await settle();
    const button = el.querySelector<HTMLButtonElement>('[data-action="refresh"]')!;
    const msg = () => text(el.querySelector('.sds-action-msg'));
    // the message's own timer, run on a fake clock: the test does not wait the 4 s it rests
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      button.click();
      await vi.advanceTimersByTimeAsync(10);
      expect(msg()).toBe('Refreshed');
      await vi.advanceTimersByTimeAsync(ACTION_MESSAGE_MS - 100);
      expect(msg()).toBe('Refreshed'); // not cleared early
      await vi.advanceTimersByTimeAsync(200);
      expect(msg()).toBe('');
      fail = true;
      button.click();
      await vi.advanceTimersByTimeAsync(10);
      await vi.advanceTimersByTimeAsync(ACTION_MESSAGE_MS + 100);
      expect(msg()).toBe('gone');
    } finally {
      vi.useRealTimers();
    }
  });
});
