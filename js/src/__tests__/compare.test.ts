import { afterEach, describe, expect, it } from 'vitest';
import { mountApp, type AppHandle, type TabName } from '../app';
import { TransportError } from '../app/shared/transport';
import type { Changes, Comparison, Contents } from '../app/shared/types';
import { version as vegaLiteVersion } from 'vega-lite';
import { FakeTransport, NOW, fakeCharts, history, settle, text } from './fixtures';

let app: AppHandle | null = null;
afterEach(() => {
  app?.dispose();
  app = null;
  document.body.replaceChildren();
});

function mount(t: FakeTransport, tab: TabName, charts = fakeCharts()): HTMLElement {
  const el = document.createElement('div');
  document.body.append(el);
  app = mountApp(el, t, { now: () => NOW, renderChart: charts.render, initialTab: tab });
  return el;
}

/** A comparison of B (request a) to A (request b), as the service shapes it. */
function comparison(a: number, b: number): Comparison {
  return {
    a,
    b,
    obs: {
      added: ['leiden'],
      removed: ['old_col'],
      changed: [
        {
          column: 'regions',
          kind: 'categorical',
          n_changed: 85,
          transitions: [
            { a: 'margin', b: 'stroma', count: 60 },
            { a: 'core', b: null, count: 20 },
            { a: null, b: 'core', count: 5 }
          ],
          n_transitions: 3,
          counts_a: { core: 80, margin: 75 },
          counts_b: { core: 65, stroma: 85 }
        },
        {
          column: 'area',
          kind: 'numeric',
          n_changed: 5,
          max_abs_delta: 3,
          delta_histogram: { edges: [-2, 0.5, 3], counts: [2, 3] }
        }
      ],
      added_columns: [
        {
          column: 'leiden',
          kind: 'categorical',
          dtype: 'category',
          n: 240,
          n_missing: 0,
          n_values: 2,
          counts: [
            { value: '0', count: 160 },
            { value: '1', count: 80 }
          ]
        }
      ],
      removed_columns: [
        {
          column: 'old_col',
          kind: 'numeric',
          dtype: 'float64',
          n: 240,
          n_missing: 0,
          summary: { min: 0, median: 2, mean: 2.5, max: 9 }
        }
      ],
      n_cells_a: 240,
      n_cells_b: 240,
      n_common: 240
    },
    obsm: { added: [], removed: [], changed: ['spatial'] },
    uns: { added: ['notes'], removed: [], changed: [] },
    figures: { added: ['fig-1'], removed: [], changed: [] },
    results: { added: [], removed: [], changed: ['markers'] },
    obsm_changes: [{ key: 'spatial', change: 'changed', shape_a: [240, 2], shape_b: [240, 2], n_rows_changed: 1, max_displacement: 5 }],
    uns_changes: [{ key: 'notes', change: 'added', b: 'Pathology review: <b>split</b>' }],
    figure_changes: [{ id: 'fig-1', change: 'added', title: 'Clusters on the tissue' }],
    result_changes: [
      { id: 'markers', change: 'changed', title: 'Markers of leiden', kind: 'markers', n_rows_a: 2, n_rows_b: 2, table_changed: true, n_rows_changed: 1 }
    ]
  };
}

function last<T>(xs: T[]): T {
  return xs[xs.length - 1];
}

function tableRows(el: Element): string[] {
  return [...el.querySelectorAll('tbody tr')].map(r =>
    [...r.querySelectorAll('td')]
      .map(td => text(td))
      .filter(Boolean)
      .join(' ')
  );
}

describe('compare view', () => {
  it('compares the selected version (A) with its parent (B), follows the selection, picks and swaps', async () => {
    const t = new FakeTransport()
      .on('history', () => history(3))
      .on('compare', p => comparison(Number(p.a), Number(p.b)))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }));
    const el = mount(t, 'compare');
    await settle(10);
    const [selA, selB] = [...el.querySelectorAll<HTMLSelectElement>('.sds-compare select')];
    expect([...selA.options].map(o => o.value)).toEqual(['3', '2', '1', '0']);
    expect(text(selA.options[3])).toBe('base (base-ds)');
    expect([selA.value, selB.value]).toEqual(['3', '2']);
    // what changed going from B (v2) to A (v3): B is the request's `a`
    expect(t.callsOf('compare')).toEqual([{ a: 2, b: 3 }]);
    expect(text(el.querySelector('.sds-compare-intro'))).toContain('From B (v2 Version 2) to A (v3 Version 3)');

    // selecting another version in the history moves A there and B to its parent
    el.querySelector<HTMLElement>('.sds-history-row[data-depth="1"]')!.click();
    await settle(10);
    expect([selA.value, selB.value]).toEqual(['1', '0']);
    expect(last(t.callsOf('compare'))).toEqual({ a: 0, b: 1 });

    // B picked by hand
    selB.value = '3';
    selB.dispatchEvent(new Event('change'));
    await settle();
    expect(last(t.callsOf('compare'))).toEqual({ a: 3, b: 1 });
    // swap
    el.querySelector<HTMLButtonElement>('.sds-swap')!.click();
    await settle();
    expect([selA.value, selB.value]).toEqual(['3', '1']);
    expect(last(t.callsOf('compare'))).toEqual({ a: 1, b: 3 });

    // the same version on both sides: nothing asked
    const asked = t.callsOf('compare').length;
    selB.value = '3';
    selB.dispatchEvent(new Event('change'));
    await settle();
    expect(t.callsOf('compare').length).toBe(asked);
    expect(text(el.querySelector('.sds-compare-out'))).toBe('Pick two different versions.');
  });

  it('shows transitions as a table and a chart, numbers as a histogram, and the rest as sentences', async () => {
    const charts = fakeCharts();
    const t = new FakeTransport().on('history', () => history(3)).on('compare', p => comparison(Number(p.a), Number(p.b)));
    const el = mount(t, 'compare', charts);
    await settle(10);
    const regions = el.querySelector('.sds-obs-change[data-column="regions"]')!;
    expect(text(regions.querySelector('h4'))).toBe('regions categorical: 85 cells changed');
    expect(tableRows(regions.querySelector('.sds-transitions')!)).toEqual([
      'margin → stroma 60',
      'core → (missing) 20',
      '(missing) → core 5'
    ]);
    expect([...regions.querySelectorAll('.sds-transitions th')].map(th => text(th))).toEqual(['in v2 (B)', '', 'in v3 (A)', 'cells']);
    const area = el.querySelector('.sds-obs-change[data-column="area"]')!;
    expect(text(area.querySelector('h4'))).toBe('area numeric: 5 cells changed, largest change 3');
    // two charts: the transition heatmap and the histogram, with the data they were given
    expect(charts.specs.length).toBe(2);
    const heat = charts.specs[0] as { data: { values: unknown[] } };
    expect(heat.data.values).toEqual([
      { from: 'margin', to: 'stroma', cells: 60 },
      { from: 'core', to: '(missing)', cells: 20 },
      { from: '(missing)', to: 'core', cells: 5 }
    ]);
    // the charts declare the bundled Vega-Lite's major version (else it warns once per chart)
    for (const spec of charts.specs as { $schema: string }[]) {
      expect(spec.$schema).toBe(`https://vega.github.io/schema/vega-lite/v${vegaLiteVersion.split('.')[0]}.json`);
    }
    const hist = charts.specs[1] as { data: { values: unknown[] } };
    expect(hist.data.values).toEqual([
      { start: -2, end: 0.5, cells: 2 },
      { start: 0.5, end: 3, cells: 3 }
    ]);
    expect(tableRows(el.querySelector('.sds-delta-added')!)).toEqual(['leiden categorical 0 160 · 1 80 Show on tissue']);
    expect(tableRows(el.querySelector('.sds-delta-removed')!)).toEqual(['old_col numeric min 0 · median 2 · max 9']);
    expect(text(el.querySelector('.sds-delta-obsm'))).toContain('Changed spatial: 1 row of 240 changed, largest displacement 5');
    // a value is text, never markup
    expect(text(el.querySelector('.sds-delta-uns'))).toContain("Added notes: 'Pathology review: <b>split</b>'");
    expect(el.querySelector('.sds-delta-uns b')).toBeNull();
    expect(text(el.querySelector('.sds-delta-figures li'))).toBe("Added figure 'Clusters on the tissue'");
    expect(text(el.querySelector('.sds-delta-results'))).toContain("Changed result 'Markers of leiden' (markers): 1 row of 2 changed");
  });

  it('builds the headline and the tables from the same data: they cannot disagree', async () => {
    const full = comparison(2, 3);
    const nothing = { added: [], removed: [], changed: [] };
    // each payload with the headline and the sections a reader must see, written out here (not
    // asked of compareModel, which the view itself renders from)
    const cases: { payload: Comparison; headline: string[]; sections: string[] }[] = [
      {
        payload: full,
        headline: [
          'regions: 85 cells changed',
          'area: 5 cells changed',
          'obs column added: leiden',
          'obs column removed: old_col',
          'obsm changed: spatial',
          'uns added: notes',
          'figure added: Clusters on the tissue',
          'result changed: Markers of leiden'
        ],
        sections: ['obs', 'obsm', 'uns', 'figures', 'results']
      },
      {
        // a headline built from an empty list above a table that is not empty was the bug
        payload: { ...full, obs: { ...full.obs, added: [], added_columns: [], removed: [], removed_columns: [] } },
        headline: [
          'regions: 85 cells changed',
          'area: 5 cells changed',
          'obsm changed: spatial',
          'uns added: notes',
          'figure added: Clusters on the tissue',
          'result changed: Markers of leiden'
        ],
        sections: ['obs', 'obsm', 'uns', 'figures', 'results']
      },
      {
        payload: { ...full, obs: { ...full.obs, changed: [] }, obsm_changes: [], uns_changes: [], figure_changes: [], result_changes: [] },
        headline: ['obs column added: leiden', 'obs column removed: old_col'],
        sections: ['obs']
      },
      {
        payload: {
          ...full,
          obs: { ...full.obs, added: [], added_columns: [], removed: [], removed_columns: [], changed: [] },
          obsm: nothing,
          uns: nothing,
          figures: nothing,
          results: nothing,
          obsm_changes: [],
          uns_changes: [],
          figure_changes: [],
          result_changes: []
        },
        headline: [],
        sections: []
      }
    ];
    for (const { payload, headline: expected, sections: expectedSections } of cases) {
      const t = new FakeTransport().on('history', () => history(3)).on('compare', () => payload);
      const el = mount(t, 'compare');
      await settle(10);
      const headline = [...el.querySelectorAll('.sds-headline li')].map(li => text(li));
      expect(headline).toEqual(expected);
      // every changed column in the headline has its table, with the same cell count
      for (const change of payload.obs.changed) {
        const line = headline.find(l => l.startsWith(`${change.column}:`));
        const section = el.querySelector(`.sds-obs-change[data-column="${change.column}"]`);
        expect(line).toBeDefined();
        expect(section).not.toBeNull();
        const n = Number(line!.match(/([\d,]+) cells? changed/)![1].replace(/,/g, ''));
        expect(text(section!.querySelector('h4'))).toContain(`${n.toLocaleString('en')} cell`);
        if (change.transitions) {
          const sum = tableRows(section!.querySelector('.sds-transitions')!).reduce((s, r) => s + Number(last(r.split(' ')).replace(/,/g, '')), 0);
          expect(sum).toBe(n);
        }
      }
      // and exactly the sections the headline names are shown
      const sections = [...el.querySelectorAll<HTMLElement>('.sds-delta')].map(s => s.className.match(/sds-delta-(\w+)/)![1]);
      expect(sections).toEqual(expectedSections);
      if (!expected.length) {
        expect(text(el.querySelector('.sds-compare-out'))).toContain('No difference');
        expect(el.querySelector('.sds-compare-out .sds-error')).toBeNull();
      }
      app?.dispose();
      app = null;
      document.body.replaceChildren();
    }
  });

  it('shows a failed comparison in place and keeps the pickers', async () => {
    const t = new FakeTransport()
      .on('history', () => history(2))
      .on('compare', () => {
        throw new TransportError('bad-request', 'cannot read obs of v1');
      });
    const el = mount(t, 'compare');
    await settle(10);
    expect(text(el.querySelector('.sds-compare .sds-error'))).toContain('cannot read obs of v1');
    expect(el.querySelectorAll('.sds-compare select').length).toBe(2);
  });
});

describe('changes as sentences', () => {
  const CHANGES: Changes = {
    ops: [
      { op: 'set-obs', table: 'table', column: 'regions', kind: 'categorical' },
      { op: 'set-uns', table: 'table', key: 'notes' },
      { op: 'set-figure', table: 'table', figure: 'fig-1', title: 'Clusters on the tissue' },
      { op: 'set-uns', table: 'table', key: 'spatial_data_studio/results/markers', result: 'markers', kind: 'markers' },
      { op: 'delete-figure', table: 'table', figure: 'fig-0' },
      { op: 'delete-obs', table: 'table', column: 'old' },
      { op: 'set-obsm', table: 'table', key: 'spatial', shape: [240, 2] },
      { op: 'frobnicate', weight: 3 }
    ],
    details: [
      {
        column: {
          column: 'regions',
          kind: 'categorical',
          dtype: 'category',
          n: 240,
          n_missing: 0,
          n_values: 3,
          counts: [
            { value: 'core', count: 80 },
            { value: 'margin', count: 75 },
            { value: 'stroma', count: 85 }
          ]
        }
      },
      { value: 'Pathology review: split left and right' },
      { title: 'Clusters on the tissue', kind: 'canvas', existed: false },
      { title: 'Markers of leiden', kind: 'markers', method: 'wilcoxon', n_rows: 12, existed: true },
      { title: 'Top markers' },
      {},
      { shape: [240, 2] },
      {}
    ],
    added: [{ key: 'tables/table/obs/regions/codes/c/0', size: 2048 }],
    replaced: [{ key: 'zarr.json', size: 300 }],
    deleted: []
  };

  it('tells a renamed clustering as a renaming, and counts moved cells, in the words of the groups (issue 40, item 8)', async () => {
    const renamed = { ari: 1, nmi: 1, n_moved: 0, matched: [{ a: '3', b: 'T cells', count: 12500 }, { a: '0', b: '0', count: 40000 }] };
    const moved = { ari: 0.9977459611361704, nmi: 0.9972204167014493, n_moved: 99, matched: [{ a: '0', b: '0', count: 12401 }] };
    const changes: Changes = {
      ops: [
        { op: 'set-obs', table: 'table', column: 'leiden', kind: 'categorical' },
        { op: 'set-obs', table: 'table', column: 'coarse', kind: 'categorical' }
      ],
      details: [{ agreement: renamed }, { agreement: moved }],
      added: [],
      replaced: Array.from({ length: 6 }, (_, i) => ({ key: `tables/table/obs/leiden/c/${i}`, size: 100 })),
      deleted: [{ entry: 'tables/table/obs/leiden/categories', node: true }]
    } as unknown as Changes;
    const t = new FakeTransport().on('history', () => history(1)).on('changes', () => changes);
    const el = mount(t, 'changes');
    await settle();
    const sentences = [...el.querySelectorAll('.sds-changes > .sds-ops > li')].map(li => text(li));
    expect(sentences).toEqual([
      'Renamed the groups of obs leiden (every cell stays in its group): 3 → T cells',
      'Set obs coarse (categorical): 99 cells moved to another group'
    ]);
    // the storage counts files, never reads as cells or values changed
    const summary = text(el.querySelector('details.sds-files summary'));
    expect(summary).toBe('How it is stored 6 files rewritten, 1 entry removed · 600 B');
    expect(summary).not.toMatch(/added|replaced|deleted/);
  });

  it('says what each op set, with its values, and keeps files and raw ops closed', async () => {
    const t = new FakeTransport().on('history', () => history(1)).on('changes', () => CHANGES);
    const el = mount(t, 'changes');
    await settle();
    const sentences = [...el.querySelectorAll('.sds-changes > .sds-ops > li')].map(li => text(li));
    expect(sentences).toEqual([
      'Set obs regions (categorical: core 80 · margin 75 · stroma 85)',
      "Set uns notes: 'Pathology review: split left and right'",
      "Added figure 'Clusters on the tissue'",
      "Replaced result 'Markers of leiden' (markers, wilcoxon): 12 rows",
      "Removed figure 'Top markers'",
      'Removed obs old',
      'Set obsm spatial (240 × 2)',
      'frobnicate weight=3'
    ]);
    const files = el.querySelector<HTMLDetailsElement>('details.sds-files')!;
    expect(files.open).toBe(false);
    expect(text(files.querySelector('summary'))).toBe('How it is stored 1 file written, 1 file rewritten · 2.3 KiB');
    expect(files.querySelectorAll('.sds-raw-ops li').length).toBe(8);
    expect(text(files.querySelector('.sds-keys-added'))).toContain('tables/table/obs/regions/codes/c/0');
    expect(el.querySelector('.sds-changes .sds-error')).toBeNull();
  });
});

describe('ordinary empty states', () => {
  it('show as information, not as red errors', async () => {
    const t = new FakeTransport().on('history', () => history(1)).on('figures', () => ({
      figures: [],
      error: { kind: 'no-studio-data', message: 'This version keeps no saved figures or results.' }
    }));
    const el = mount(t, 'figures');
    await settle();
    expect(el.querySelector('.sds-figures .sds-error')).toBeNull();
    expect(text(el.querySelector('.sds-figures .sds-note'))).toBe('This version keeps no saved figures or results.');
  });
});

describe('contents view', () => {
  const CONTENTS: Contents = {
    depth: 2,
    elements: [
      { kind: 'images', name: 'he', levels: 3, axes: ['c', 'y', 'x'], shape: [3, 512, 512], dtype: 'uint8', channels: ['R', 'G', 'B'] },
      { kind: 'labels', name: 'cells_labels', levels: 1, axes: ['y', 'x'], shape: [512, 512], dtype: 'int32' },
      { kind: 'shapes', name: 'circles', n: 5, geometry: ['Point'] },
      { kind: 'points', name: 'transcripts', n: 200000 },
      { kind: 'tables', name: 'table', status: 'changed', n_obs: 240, n_vars: 3, annotates: ['cells_labels'] }
    ],
    tables: [
      {
        name: 'table',
        n_obs: 240,
        n_vars: 3,
        annotates: ['cells_labels'],
        status: 'changed',
        obs: [
          { column: 'instance_id', kind: 'numeric', dtype: 'int64', n: 240, n_missing: 0, summary: { min: 1, median: 120.5, mean: 120.5, max: 240 } },
          {
            column: 'regions',
            kind: 'categorical',
            dtype: 'category',
            n: 240,
            n_missing: 4,
            n_values: 2,
            counts: [
              { value: 'left', count: 130 },
              { value: 'right', count: 106 }
            ],
            status: 'added'
          }
        ],
        removed_obs: ['old_regions'],
        obsm: [{ key: 'spatial', shape: [240, 2], status: 'changed' }],
        uns: [{ key: 'notes' }]
      }
    ]
  };

  it('lists every element and each table column with its values, marking what the version wrote', async () => {
    const t = new FakeTransport()
      .on('history', () => history(2))
      .on('contents', () => CONTENTS)
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }));
    const el = mount(t, 'contents');
    await settle();
    expect(t.callsOf('contents')).toEqual([{ version: 2 }]);
    expect(tableRows(el.querySelector('.sds-elements-table')!)).toEqual([
      'Images he 3 × 512 × 512 (c, y, x), 3 levels, channels R, G, B, uint8',
      'Labels cells_labels 512 × 512 (y, x), 1 level, int32',
      'Shapes circles 5 shapes, Point',
      'Points transcripts 200,000 points',
      'Tables table 240 cells × 3 variables, annotates cells_labels changed'
    ]);
    const table = el.querySelector('.sds-table-contents[data-table="table"]')!;
    expect(text(table.querySelector('h3'))).toBe('Table table: 240 cells × 3 variables, annotates cells_labels changed');
    expect(tableRows(table.querySelector('.sds-obs-columns')!)).toEqual([
      'instance_id numeric min 1 · median 120.5 · max 240',
      'regions categorical left 130 · right 106 4 added'
    ]);
    expect(table.querySelector('tr[data-column="regions"]')!.classList.contains('sds-marked')).toBe(true);
    expect(text(table.querySelector('.sds-removed-obs'))).toBe('Removed in this version: old_regions');
    expect(text(table.querySelector('.sds-key-list h4'))).toBe('obsm keys (1)');
    expect(text(table.querySelector('.sds-key-list li'))).toBe('spatial 240 × 2 changed');
    // another version: asked again
    el.querySelector<HTMLElement>('.sds-history-row[data-depth="1"]')!.click();
    await settle();
    expect(t.callsOf('contents')).toEqual([{ version: 2 }, { version: 1 }]);
  });
});
