/** Compare two versions: obs columns and value counts, and obsm/uns/figures/results deltas. */

import { empty, errorBox, fill, h, loading } from './dom';
import { badge } from './history';
import { plural } from './format';
import { TransportError, type Transport } from './transport';
import type { Comparison, Delta, ObsChange } from './types';

export type Choice = { depth: number; label: string };

export class CompareView {
  readonly node: HTMLElement;
  readonly selectA: HTMLSelectElement;
  readonly selectB: HTMLSelectElement;
  private readonly out: HTMLElement;
  private token = 0;
  private ran = false;

  constructor(private readonly transport: Transport) {
    this.selectA = h('select', { class: 'sds-select', 'aria-label': 'Version A' });
    this.selectB = h('select', { class: 'sds-select', 'aria-label': 'Version B' });
    this.selectA.addEventListener('change', () => void this.run());
    this.selectB.addEventListener('change', () => void this.run());
    this.out = h('div', { class: 'sds-compare-out' });
    this.node = h(
      'div',
      { class: 'sds-compare' },
      h(
        'div',
        { class: 'sds-compare-pick' },
        h('label', {}, 'A ', this.selectA),
        h('span', { class: 'sds-arrow' }, '→'),
        h('label', {}, 'B ', this.selectB)
      ),
      this.out
    );
  }

  /** The versions to pick from (top first); defaults: A = the parent of the top, B = the top. */
  setChoices(choices: Choice[]): void {
    for (const sel of [this.selectA, this.selectB]) {
      fill(
        sel,
        choices.map(c => h('option', { value: c.depth }, c.label))
      );
    }
    if (choices.length) {
      this.selectB.value = String(choices[0].depth);
      this.selectA.value = String(choices[Math.min(1, choices.length - 1)].depth);
    }
    fill(this.out, choices.length < 2 ? empty('Only one version: nothing to compare.') : null);
    this.ran = choices.length < 2;
  }

  /** Compare the current picks unless done already (when the tab is first shown). */
  ensure(): void {
    if (!this.ran) {
      void this.run();
    }
  }

  /** Pick both sides and compare. */
  pick(a: number, b: number): Promise<void> {
    this.selectA.value = String(a);
    this.selectB.value = String(b);
    return this.run();
  }

  async run(): Promise<void> {
    const a = Number(this.selectA.value);
    const b = Number(this.selectB.value);
    if (this.selectA.value === '' || this.selectB.value === '') {
      return;
    }
    const token = ++this.token;
    this.ran = true;
    if (a === b) {
      fill(this.out, empty('Pick two different versions.'));
      return;
    }
    fill(this.out, loading());
    try {
      const { data } = await this.transport.request('compare', { a, b });
      if (token === this.token) {
        this.render(data);
      }
    } catch (err) {
      if (token === this.token) {
        const e = TransportError.from(err);
        fill(this.out, errorBox(e.message, e.kind));
      }
    }
  }

  private render(c: Comparison): void {
    const obs = c.obs ?? { added: [], removed: [], changed: [] };
    fill(
      this.out,
      h(
        'section',
        { class: 'sds-delta sds-delta-obs' },
        h('h3', {}, 'obs columns'),
        deltaLists({ added: obs.added ?? [], removed: obs.removed ?? [], changed: [] }),
        (obs.changed ?? []).length
          ? h('div', { class: 'sds-obs-changed' }, obs.changed.map(ch => counts(ch, c.a, c.b)))
          : null
      ),
      delta('obsm', c.obsm),
      delta('uns', c.uns),
      delta('figures', c.figures),
      delta('results', c.results)
    );
  }
}

function delta(title: string, d: Delta | undefined): HTMLElement {
  return h(
    'section',
    { class: `sds-delta sds-delta-${title}` },
    h('h3', {}, title),
    deltaLists(d ?? { added: [], removed: [], changed: [] })
  );
}

function deltaLists(d: Delta): HTMLElement {
  const groups: [keyof Delta, string][] = [
    ['added', 'add'],
    ['removed', 'delete'],
    ['changed', 'set']
  ];
  const parts = groups
    .filter(([k]) => (d[k] ?? []).length)
    .map(([k, family]) =>
      h(
        'div',
        { class: `sds-delta-${k}` },
        h('span', { class: 'sds-delta-label' }, `${k}: `),
        d[k].map(name => badge(name, family))
      )
    );
  return parts.length ? h('div', { class: 'sds-delta-lists' }, parts) : empty('no difference');
}

/** Value counts of a changed obs column, A against B. */
function counts(ch: ObsChange, a: number, b: number): HTMLElement {
  const ca = ch.counts_a ?? {};
  const cb = ch.counts_b ?? {};
  const values = [...new Set([...Object.keys(ca), ...Object.keys(cb)])].sort(
    (x, y) => (cb[y] ?? 0) + (ca[y] ?? 0) - ((cb[x] ?? 0) + (ca[x] ?? 0))
  );
  const shown = values.slice(0, 50);
  return h(
    'details',
    { class: 'sds-obs-change', open: values.length <= 12 },
    h('summary', {}, badge(ch.column, 'set'), values.length ? ` ${plural(values.length, 'value')}` : ' values changed'),
    values.length
      ? h(
          'table',
          { class: 'sds-table' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              h('th', {}, 'value'),
              h('th', { class: 'sds-num' }, label(a)),
              h('th', { class: 'sds-num' }, label(b)),
              h('th', { class: 'sds-num' }, 'Δ')
            )
          ),
          h(
            'tbody',
            {},
            shown.map(v => {
              const d = (cb[v] ?? 0) - (ca[v] ?? 0);
              return h(
                'tr',
                {},
                h('td', {}, v),
                h('td', { class: 'sds-num' }, v in ca ? String(ca[v]) : '–'),
                h('td', { class: 'sds-num' }, v in cb ? String(cb[v]) : '–'),
                h('td', { class: `sds-num ${d > 0 ? 'sds-up' : d < 0 ? 'sds-down' : ''}` }, d > 0 ? `+${d}` : String(d))
              );
            }),
            values.length > shown.length
              ? h('tr', {}, h('td', { colspan: 4, class: 'sds-muted' }, `… ${values.length - shown.length} more`))
              : null
          )
        )
      : null
  );
}

function label(depth: number): string {
  return depth === 0 ? 'base' : `v${depth}`;
}
