import { afterEach, describe, expect, it } from 'vitest';
import { compile } from 'vega-lite';
import { mountApp, type AppHandle } from '../app';
import { dotPlotCsv, dotPlotFile, dotPlotSpec } from '../app/results/dotplot';
import type { DotPlot } from '../app/shared/types';
import { FakeTransport, NOW, fakeCharts, history, settle, text } from './fixtures';

const PLOT: DotPlot = {
  groupby: 'leiden',
  genes: ['EPCAM', 'CD3E'],
  groups: ['0', '1'],
  layer: null,
  rows: [
    { group: '0', gene: 'EPCAM', fraction: 0.9, mean: 3.2, n_cells: 100 },
    { group: '0', gene: 'CD3E', fraction: 0.05, mean: 0.1, n_cells: 100 },
    { group: '1', gene: 'EPCAM', fraction: 0.1, mean: 0.2, n_cells: 40 },
    { group: '1', gene: 'CD3E', fraction: 0.8, mean: 2.5, n_cells: 40 }
  ]
};

describe('the dot plot', () => {
  it('sizes dots by the percent expressing and colors them by the mean, genes in the order picked', () => {
    const spec = dotPlotSpec(PLOT) as {
      data: { values: { percent: number }[] };
      encoding: { x: { sort: string[] }; size: { field: string }; color: { field: string } };
    };
    expect(spec.data.values.map(v => v.percent)).toEqual([90, 5, 10, 80]);
    expect(spec.encoding.x.sort).toEqual(['EPCAM', 'CD3E']);
    expect([spec.encoding.size.field, spec.encoding.color.field]).toEqual(['percent', 'mean']);
    expect(() => compile(spec as never)).not.toThrow();
  });

  it('exports its numbers as CSV, texts from the dataset quoted and never a formula', () => {
    const csv = dotPlotCsv({ ...PLOT, rows: [{ group: '=HYPERLINK("x")', gene: 'EPCAM', fraction: 0.5, mean: 1, n_cells: 2 }] });
    expect(csv).toBe('"leiden",gene,fraction_expressing,mean,n_cells\n"\'=HYPERLINK(""x"")","EPCAM",0.5,1,2\n');
  });
});

let app: AppHandle | null = null;
afterEach(() => {
  app?.dispose();
  app = null;
  document.body.replaceChildren();
});

describe('the dot plot in Results', () => {
  it('plots the picked genes (any case) by a categorical column', async () => {
    const t = new FakeTransport()
      .on('history', () => history(2))
      .on('results', () => ({ results: [] }))
      .on('genes', () => ({ table: 'table', names: ['EPCAM', 'CD3E', 'KRT8'], symbol_column: null, symbols: null }))
      .on('contents', () => ({
        depth: 2,
        elements: [],
        tables: [
          {
            name: 'table',
            n_obs: 140,
            n_vars: 3,
            annotates: [],
            status: null,
            obs: [
              { column: 'leiden', kind: 'categorical' },
              { column: 'area', kind: 'numeric' }
            ],
            removed_obs: [],
            obsm: [],
            uns: []
          }
        ]
      }) as never)
      .on('dot_plot', () => PLOT);
    const charts = fakeCharts();
    const el = document.createElement('div');
    document.body.append(el);
    app = mountApp(el, t, { now: () => NOW, renderChart: charts.render, initialTab: 'results' });
    await settle(10);
    const panel = el.querySelector<HTMLElement>('.sds-dotplot')!;
    expect(panel.hidden).toBe(false);
    expect([...panel.querySelectorAll('select option')].map(o => text(o))).toEqual(['leiden']); // categorical columns only
    const input = panel.querySelector<HTMLInputElement>('input.sds-gene')!;
    expect(panel.querySelector('.sds-gene-combine')).toBeNull(); // a plot has no channels
    for (const g of ['epcam', 'Cd3e']) {
      input.focus();
      input.value = g;
      input.dispatchEvent(new Event('input'));
      await settle(10);
      input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', cancelable: true }));
      await settle(10);
    }
    expect(t.callsOf('dot_plot').slice(-1)[0]).toEqual({ version: 2, gene: 'EPCAM,CD3E', groupby: 'leiden' });
    expect(charts.specs.slice(-1)[0]).toEqual(dotPlotSpec(PLOT));
    await settle(10);
    const actions = [...panel.querySelectorAll<HTMLButtonElement>('.sds-dotplot-actions button')];
    expect(actions.map(b => [text(b), b.disabled])).toEqual([['Download CSV', false]]);
    expect(dotPlotFile({ ...PLOT, groupby: '../cell type' }, 'csv')).toBe('dotplot-cell_type-EPCAM-CD3E.csv');
  });
});
