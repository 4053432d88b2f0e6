/**
 * Compare two versions in the terms of the cells: which obs columns changed in
 * how many cells (and from what to what), what obsm, uns, figures and results
 * differ. A follows the version selected in the history, B defaults to its
 * parent; both can be picked and swapped. The view reads "from B to A".
 *
 * The headline and the sections are rendered from one model (`compareModel`),
 * so a number in the headline is the number in its table.
 */

import { agreementNode, changeText, contingencySpec, drawable, headingText } from './agreement';
import { VEGA_LITE_SCHEMA, type ChartRenderer, type ChartHandle } from '../shared/chart';
import { empty, errorBox, fill, h } from '../shared/dom';
import { cell, changeLabel, plural, valuesText, valueText } from '../shared/format';
import { cancelLoad, loadInto } from '../shared/load';
import { SideBySide } from './sidebyside';
import { TissuePane } from '../figures/tissue';
import { TransportError, type Transport } from '../shared/transport';
import type {
  ColumnSummary,
  Comparison,
  FigureChange,
  ObsChange,
  ObsmChange,
  ResultChange,
  Transition,
  UnsChange,
  VersionSummary
} from '../shared/types';

export type Choice = { depth: number; label: string };
/** A version on another branch of the tree: compared by its dataset ID. */
export type Branch = { id: string; label: string };
/** What a picker holds: a depth of the opened chain, or a branch version's dataset ID. */
export type Pick = number | string;

/** A picker's value as the compare request takes it. */
function pickOf(value: string): Pick {
  return /^\d+$/.test(value) ? Number(value) : value;
}

/** Shown for a missing value in transitions and counts. */
export const MISSING = '(missing)';
/** Transition rows shown before "… n more". */
const MAX_ROWS = 50;

/** One line of the headline, and the section that holds its details. */
export type HeadlineItem = { section: string; text: string };

/** Everything the view shows, derived once from the payload. */
export type CompareModel = {
  changed: ObsChange[];
  added: ColumnSummary[];
  removed: ColumnSummary[];
  obsm: ObsmChange[];
  uns: UnsChange[];
  figures: FigureChange[];
  results: ResultChange[];
  headline: HeadlineItem[];
};

/** The model of one comparison: the lists the sections render and the headline built from them. */
export function compareModel(c: Comparison): CompareModel {
  const obs = c.obs ?? ({} as Comparison['obs']);
  const model: CompareModel = {
    changed: obs.changed ?? [],
    added: obs.added_columns ?? (obs.added ?? []).map(column => ({ column }) as ColumnSummary),
    removed: obs.removed_columns ?? (obs.removed ?? []).map(column => ({ column }) as ColumnSummary),
    obsm: c.obsm_changes ?? [],
    uns: c.uns_changes ?? [],
    figures: c.figure_changes ?? [],
    results: c.result_changes ?? [],
    headline: []
  };
  const items = model.headline;
  for (const ch of model.changed) {
    items.push({ section: 'obs', text: changeText(ch) });
  }
  if (model.added.length) {
    items.push({ section: 'obs', text: `obs ${model.added.length === 1 ? 'column' : 'columns'} added: ${model.added.map(a => a.column).join(', ')}` });
  }
  if (model.removed.length) {
    items.push({ section: 'obs', text: `obs ${model.removed.length === 1 ? 'column' : 'columns'} removed: ${model.removed.map(a => a.column).join(', ')}` });
  }
  for (const [section, list, noun] of [
    ['obsm', model.obsm.map(o => ({ change: o.change, name: o.key })), 'obsm'],
    ['uns', model.uns.map(o => ({ change: o.change, name: o.key })), 'uns'],
    ['figures', model.figures.map(f => ({ change: f.change, name: f.title ?? f.id })), 'figure'],
    ['results', model.results.map(r => ({ change: r.change, name: r.title ?? r.id })), 'result']
  ] as const) {
    for (const change of ['added', 'removed', 'changed'] as const) {
      const names = list.filter(x => x.change === change).map(x => x.name);
      if (names.length) {
        const label = noun === 'figure' || noun === 'result' ? (names.length === 1 ? noun : `${noun}s`) : noun;
        items.push({ section, text: `${label} ${change}: ${names.join(', ')}` });
      }
    }
  }
  return model;
}

export class CompareView {
  readonly node: HTMLElement;
  readonly selectA: HTMLSelectElement;
  readonly selectB: HTMLSelectElement;
  readonly swapButton: HTMLButtonElement;
  private readonly out: HTMLElement;
  private ran = false;
  private choices: Choice[] = [];
  private branches: Branch[] = [];
  private charts: ChartHandle[] = [];
  private pane: TissuePane | null = null;
  private sides: SideBySide | null = null;
  /** Above a missing dataset: its ID and the versions read (their manifests), else null. */
  private broken: { missing: string; versions: VersionSummary[] } | null = null;

  constructor(
    private readonly transport: Transport,
    private readonly renderChart?: ChartRenderer
  ) {
    this.selectA = h('select', { class: 'sds-select', 'aria-label': 'Version A' });
    this.selectB = h('select', { class: 'sds-select', 'aria-label': 'Version B, compared with A' });
    this.selectA.addEventListener('change', () => void this.run());
    this.selectB.addEventListener('change', () => void this.run());
    this.swapButton = h(
      'button',
      { class: 'sds-button sds-swap', type: 'button', title: 'Swap A and B', 'aria-label': 'Swap A and B' },
      '⇄ Swap'
    );
    this.swapButton.addEventListener('click', () => void this.swap());
    this.out = h('div', { class: 'sds-compare-out', 'aria-live': 'polite' });
    this.node = h(
      'div',
      { class: 'sds-compare' },
      h(
        'div',
        { class: 'sds-compare-pick' },
        h('label', {}, h('span', { class: 'sds-pick-name' }, 'A'), this.selectA),
        this.swapButton,
        h('label', {}, h('span', { class: 'sds-pick-name' }, 'B'), this.selectB)
      ),
      this.out
    );
  }

  /** The versions to pick from (top first). Picks stay when still offered; else A = the top. */
  setChoices(choices: Choice[]): void {
    this.choices = choices;
    const keepA = this.selectA.value;
    const keepB = this.selectB.value;
    this.fillPickers();
    const offered = (v: string) => [...this.selectA.options].some(o => o.value === v);
    if (choices.length && offered(keepA) && offered(keepB)) {
      this.selectA.value = keepA;
      this.selectB.value = keepB;
    } else if (choices.length) {
      this.selectA.value = String(choices[0].depth);
      this.selectB.value = String(this.parentOf(choices[0].depth));
    }
    const n = choices.length + this.branches.length;
    fill(this.out, n < 2 ? empty('Only one version: nothing to compare.') : null);
    this.ran = n < 2;
  }

  /** Versions on other branches of the same base (from the tree): pickable too, by dataset ID. */
  setBranches(branches: Branch[]): void {
    // a dataset ID made of digits would read as a depth: such a version is not offered
    const next = branches.filter(b => !/^\d+$/.test(b.id));
    if (JSON.stringify(next) === JSON.stringify(this.branches)) {
      return;
    }
    this.branches = next;
    const keepA = this.selectA.value;
    const keepB = this.selectB.value;
    this.fillPickers();
    const offered = (v: string) => [...this.selectA.options].some(o => o.value === v);
    if (offered(keepA) && offered(keepB)) {
      this.selectA.value = keepA;
      this.selectB.value = keepB;
    }
  }

  private fillPickers(): void {
    for (const sel of [this.selectA, this.selectB]) {
      const chain = this.choices.map(c => h('option', { value: c.depth }, c.label));
      fill(
        sel,
        this.branches.length
          ? [
              h('optgroup', { label: 'This history' }, chain),
              h('optgroup', { label: 'Other branches' }, this.branches.map(b => h('option', { value: b.id }, b.label)))
            ]
          : chain
      );
    }
  }

  /** A follows the selected version, B becomes its parent (for the base: the version above it). */
  follow(depth: number): void {
    if (!this.choices.some(c => c.depth === depth) || this.selectA.value === String(depth)) {
      return;
    }
    this.selectA.value = String(depth);
    this.selectB.value = String(this.parentOf(depth));
    this.ran = false;
  }

  private parentOf(depth: number): number {
    const depths = this.choices.map(c => c.depth).sort((x, y) => y - x);
    const below = depths.find(d => d < depth);
    if (below !== undefined) {
      return below;
    }
    const above = [...depths].reverse().find(d => d > depth);
    return above ?? depth;
  }

  /** Compare the current picks unless done already (when the tab is shown). */
  ensure(): void {
    if (!this.ran) {
      void this.run();
    }
  }

  /** Pick both sides and compare. */
  pick(a: Pick, b: Pick): Promise<void> {
    this.selectA.value = String(a);
    this.selectB.value = String(b);
    return this.run();
  }

  /**
   * Above a missing dataset no cell can be read, so two versions are compared by what their
   * manifests say: the ops of the versions between them. Null: the data is there.
   */
  setBroken(broken: { missing: string; versions: VersionSummary[] } | null): void {
    this.broken = broken;
    this.ran = false;
  }

  /** The ops written going from depth `from` to depth `to` (both readable, above the break). */
  private renderBroken(from: number, to: number, missing: string, versions: VersionSummary[]): void {
    const [low, high] = from < to ? [from, to] : [to, from];
    const between = versions.filter(v => v.depth > low && v.depth <= high).sort((x, y) => x.depth - y.depth);
    fill(
      this.out,
      h(
        'p',
        { class: 'sds-note' },
        `Dataset ${missing} below these versions is missing, so their cells cannot be compared; ` +
          `here is what the versions ${from < to ? 'from' : 'back from'} ${short(from)} to ${short(to)} changed, as saved.`
      ),
      between.length
        ? h(
            'ol',
            { class: 'sds-ops sds-compare-ops' },
            between.flatMap(v =>
              (v.changes ?? []).map(c => h('li', {}, h('span', { class: 'sds-depth' }, `v${v.depth}`), ' ', changeLabel(c)))
            )
          )
        : empty('No version lies between them.')
    );
  }

  swap(): Promise<void> {
    return this.pick(pickOf(this.selectB.value), pickOf(this.selectA.value));
  }

  dispose(): void {
    this.disposeCharts();
    this.disposePanes();
  }

  private disposePanes(): void {
    this.pane?.dispose();
    this.pane = null;
    this.sides?.dispose();
    this.sides = null;
  }

  private disposeCharts(): void {
    for (const c of this.charts.splice(0)) {
      try {
        c.dispose();
      } catch {
        // already gone
      }
    }
  }

  async run(): Promise<void> {
    if (this.selectA.value === '' || this.selectB.value === '') {
      return;
    }
    const a = pickOf(this.selectA.value);
    const b = pickOf(this.selectB.value);
    this.ran = true;
    this.disposeCharts();
    this.disposePanes();
    if (a === b) {
      cancelLoad(this.out);
      fill(this.out, empty('Pick two different versions.'));
      return;
    }
    if (this.broken && typeof a === 'number' && typeof b === 'number') {
      cancelLoad(this.out);
      this.renderBroken(b, a, this.broken.missing, this.broken.versions);
      return;
    }
    // what changed going from B to A: B is the request's `a`
    await loadInto(this.out, () => this.transport.request('compare', { a: b, b: a }), data => this.render(data, b, a));
  }

  private label(pick: Pick): string {
    return typeof pick === 'number'
      ? (this.choices.find(c => c.depth === pick)?.label ?? short(pick))
      : (this.branches.find(b => b.id === pick)?.label ?? pick);
  }

  /** How a side is named in the tables: v3, base, or a branch version's title or ID. */
  private short(pick: Pick): string {
    if (typeof pick === 'number') {
      return short(pick);
    }
    const label = this.branches.find(b => b.id === pick)?.label ?? pick;
    const name = label.replace(/ \(branch, v\d+\)$/, '');
    return name.length > 24 ? `${name.slice(0, 23)}…` : name;
  }

  /** `from`: the request's `a` (the picker B); `to`: its `b` (the picker A). */
  private render(c: Comparison, fromPick: Pick, toPick: Pick): void {
    const model = compareModel(c);
    const from = this.short(fromPick);
    const to = this.short(toPick);
    // the tissue of A (a version of the opened chain) colored by what changed since B
    const pane = typeof toPick === 'number' ? new TissuePane(this.transport, toPick, 'Back to the comparison') : null;
    this.pane = pane;
    // "Show on tissue" appears once A is known to have cells on the tissue (a canvas figure)
    void pane?.available().then(ok => {
      if (ok && this.pane === pane) {
        for (const b of this.out.querySelectorAll<HTMLElement>('.sds-show-tissue')) {
          b.hidden = false;
        }
      }
    });
    // A and B next to each other, one camera, once both are known to have a spatial view
    const sides = new SideBySide(this.transport, { pick: toPick, label: this.label(toPick) }, { pick: fromPick, label: this.label(fromPick) });
    this.sides = sides;
    void sides.available().then(ok => {
      if (ok && this.sides === sides) {
        for (const b of this.out.querySelectorAll<HTMLElement>('.sds-show-sides')) {
          b.hidden = false;
        }
      }
    });
    const cells = c.obs?.n_common;
    const intro = h(
      'p',
      { class: 'sds-compare-intro' },
      `From B (${this.label(fromPick)}) to A (${this.label(toPick)})`,
      cells !== undefined ? `, ${plural(cells, 'cell')} in both` : '',
      c.obs && c.obs.n_cells_a !== c.obs.n_cells_b
        ? ` (${from} has ${plural(c.obs.n_cells_a, 'cell')}, ${to} has ${plural(c.obs.n_cells_b, 'cell')})`
        : '',
      '.'
    );
    if (!model.headline.length) {
      fill(this.out, intro, empty('No difference: both versions hold the same table, figures and results.'));
      return;
    }
    const headline = h(
      'ul',
      { class: 'sds-headline', 'aria-label': 'What changed' },
      model.headline.map(item => h('li', { 'data-section': item.section }, item.text))
    );
    fill(
      this.out,
      intro,
      headline,
      model.changed.length || model.added.length || model.removed.length
        ? h(
            'section',
            { class: 'sds-delta sds-delta-obs', 'aria-label': 'obs columns' },
            h('h3', {}, 'Cells (obs columns)'),
            model.changed.map(ch =>
              this.obsChange(ch, from, to, pane ? (node, button) => this.showOnTissue(pane, ch, fromPick, to, node, button) : null, (node, button) => {
                node.append(sides.node);
                void sides.show(ch.column, button, ch.agreement?.matched);
              })
            ),
            model.added.length
              ? columnList('Added columns', 'added', model.added, to, pane ? (c, node, button) => this.showColumn(pane, c, to, node, button) : null)
              : null,
            model.removed.length ? columnList('Removed columns', 'removed', model.removed, from) : null
          )
        : null,
      model.obsm.length
        ? section('obsm', 'Embeddings and coordinates (obsm)', model.obsm.map(o => h('li', {}, obsmSentence(o))))
        : null,
      model.uns.length ? section('uns', 'Unstructured values (uns)', model.uns.map(u => h('li', {}, unsSentence(u)))) : null,
      model.figures.length
        ? section('figures', 'Figures', model.figures.map(f => h('li', {}, partSentence('figure', f.change, f.title, f.id))))
        : null,
      model.results.length ? section('results', 'Results', model.results.map(r => h('li', {}, resultSentence(r)))) : null
    );
  }

  /** Color A's tissue by how `ch` went from B (`against`), unchanged cells grey; the view opens below the column. */
  private showOnTissue(pane: TissuePane, ch: ObsChange, against: Pick, to: string, node: HTMLElement, button: HTMLElement): void {
    node.append(pane.node);
    // a clustering: the cells that left their group, those only renamed in grey (as n_moved counts them)
    const what = ch.agreement ? 'the cells that moved' : 'what changed';
    void pane.show({ column: ch.column, against, againstLabel: this.label(against) }, `${ch.column}, ${what} (A: ${to})`, button);
  }

  /** Color A's tissue by a column B does not have; the view opens below the list. */
  private showColumn(pane: TissuePane, c: ColumnSummary, to: string, node: HTMLElement, button: HTMLElement): void {
    node.append(pane.node);
    void pane.show({ column: c.column }, `${c.column} (A: ${to})`, button);
  }

  private obsChange(
    ch: ObsChange,
    from: string,
    to: string,
    onTissue: ((node: HTMLElement, button: HTMLElement) => void) | null,
    onSides: ((node: HTMLElement, button: HTMLElement) => void) | null = null
  ): HTMLElement {
    const kind = ch.kind ?? 'string';
    const tissue = onTissue
      ? (h(
          'button',
          {
            type: 'button',
            class: 'sds-button sds-show-tissue',
            title: ch.agreement
              ? `Color the cells of A that moved to another group of ${ch.column} (renamed and unchanged cells grey)`
              : `Color A's cells by how ${ch.column} changed (unchanged cells grey)`,
            hidden: ''
          },
          'Show on tissue'
        ) as HTMLButtonElement)
      : null;
    const sidesButton = onSides
      ? (h(
          'button',
          {
            type: 'button',
            class: 'sds-button sds-show-sides',
            title: ch.agreement
              ? `A and B side by side, B's groups of ${ch.column} in the colours of the A groups they match; they pan and zoom together`
              : `A and B side by side, each colored by its own ${ch.column}; they pan and zoom together`,
            hidden: ''
          },
          'A | B side by side'
        ) as HTMLButtonElement)
      : null;
    const node = h(
      'section',
      { class: `sds-obs-change sds-obs-${kind}`, 'data-column': ch.column },
      h(
        'h4',
        { class: 'sds-obs-change-head' },
        h('code', {}, ch.column),
        ` ${kind}: ${headingText(ch)}`,
        kind === 'numeric' && ch.max_abs_delta !== undefined && ch.max_abs_delta !== null
          ? `, largest change ${cell(ch.max_abs_delta)}`
          : ''
      ),
      tissue,
      sidesButton
    );
    tissue?.addEventListener('click', () => onTissue!(node, tissue));
    sidesButton?.addEventListener('click', () => onSides!(node, sidesButton));
    node.append(agreementNode(ch) ?? '');
    if (kind === 'numeric') {
      const hist = ch.delta_histogram;
      if (hist && hist.counts.length) {
        node.append(this.chart(histogramSpec(hist, ch.column), `Histogram of the changes of ${ch.column} from ${from} to ${to}`));
        node.append(histogramTable(hist));
      }
      return node;
    }
    const transitions = ch.transitions ?? [];
    node.append(transitionTable(transitions, ch.n_transitions ?? transitions.length, from, to, ch.column));
    if (ch.contingency && ch.agreement && drawable(ch.contingency)) {
      node.append(
        this.chart(
          contingencySpec(ch.contingency, ch.agreement.matched.length, from, to, VEGA_LITE_SCHEMA),
          `Cells of ${ch.column} by their value in ${from} and in ${to}, matched pairs on the diagonal`
        )
      );
    } else if (kind !== 'string' && transitions.length > 1) {
      node.append(
        this.chart(
          transitionSpec(transitions.slice(0, MAX_ROWS), from, to),
          `Cells of ${ch.column} by their value in ${from} and in ${to}`
        )
      );
    }
    return node;
  }

  /** A Vega-Lite chart drawn when a renderer is given; the table next to it carries the numbers. */
  private chart(spec: object, label: string): HTMLElement {
    const target = h('div', { class: 'sds-chart sds-compare-chart', role: 'img', 'aria-label': label });
    if (this.renderChart) {
      this.renderChart(target, spec).then(
        handle => this.charts.push(handle),
        err => target.replaceWith(errorBox(`chart failed: ${TransportError.from(err).message}`, 'chart'))
      );
    }
    return target;
  }
}

function short(depth: number): string {
  return depth === 0 ? 'base' : `v${depth}`;
}

function section(name: string, title: string, items: HTMLElement[]): HTMLElement {
  return h(
    'section',
    { class: `sds-delta sds-delta-${name}`, 'aria-label': title },
    h('h3', {}, title),
    h('ul', { class: 'sds-sentences' }, items)
  );
}

function shown(value: string | null): HTMLElement {
  return value === null ? h('span', { class: 'sds-missing' }, MISSING) : h('span', {}, value);
}

function transitionTable(rows: Transition[], total: number, from: string, to: string, column: string): HTMLElement {
  const visible = rows.slice(0, MAX_ROWS);
  return h(
    'table',
    { class: 'sds-table sds-transitions' },
    h('caption', { class: 'sds-visually-hidden' }, `Cells of ${column} whose value changed`),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col' }, `in ${from} (B)`),
        h('th', { scope: 'col', 'aria-hidden': 'true' }, ''),
        h('th', { scope: 'col' }, `in ${to} (A)`),
        h('th', { scope: 'col', class: 'sds-num' }, 'cells')
      )
    ),
    h(
      'tbody',
      {},
      visible.map(t =>
        h(
          'tr',
          {},
          h('td', {}, shown(t.a)),
          h('td', { class: 'sds-arrow', 'aria-hidden': 'true' }, '→'),
          h('td', {}, shown(t.b)),
          h('td', { class: 'sds-num' }, t.count.toLocaleString('en'))
        )
      ),
      total > visible.length
        ? h('tr', {}, h('td', { colspan: 4, class: 'sds-muted' }, `… ${plural(total - visible.length, 'more pair')}`))
        : null
    )
  );
}


/** A heatmap of the transitions: B's values down, A's across, cells per pair. */
export function transitionSpec(rows: Transition[], from: string, to: string): object {
  return {
    $schema: VEGA_LITE_SCHEMA,
    data: { values: rows.map(t => ({ from: t.a ?? MISSING, to: t.b ?? MISSING, cells: t.count })) },
    width: { step: Math.max(28, Math.max(0, ...rows.map(t => t.count)).toLocaleString('en').length * 7 + 6) },
    height: { step: 22 },
    // labels whole (the chart grows and its panel scrolls), counts with thousands separators
    config: { axis: { labelLimit: 0, titleLimit: 0 } },
    encoding: {
      x: { field: 'to', type: 'nominal', title: `in ${to} (A)`, axis: { labelAngle: -40, labelLimit: 0 } },
      y: { field: 'from', type: 'nominal', title: `in ${from} (B)`, axis: { labelLimit: 0 } }
    },
    layer: [
      {
        mark: 'rect',
        encoding: {
          // the legend above the grid, not beside it: a narrow panel clipped it at the right ("ce")
          color: {
            field: 'cells',
            type: 'quantitative',
            title: 'cells',
            scale: { scheme: 'blues' },
            legend: { format: ',d', orient: 'top', direction: 'horizontal' }
          },
          tooltip: [
            { field: 'from', title: `in ${from}` },
            { field: 'to', title: `in ${to}` },
            { field: 'cells', type: 'quantitative', format: ',' }
          ]
        }
      },
      {
        mark: { type: 'text', fontSize: 10 },
        encoding: {
          text: { field: 'cells', type: 'quantitative', format: ',' },
          // dark text on the light cells, white on the dark ones
          color: { condition: { test: `datum.cells > ${Math.max(...rows.map(t => t.count), 0) / 2}`, value: '#fff' }, value: '#111' }
        }
      }
    ]
  };
}

/** Bars over the bins of the differences (A minus B). */
export function histogramSpec(hist: { edges: number[]; counts: number[] }, column: string): object {
  return {
    $schema: VEGA_LITE_SCHEMA,
    data: { values: hist.counts.map((n, i) => ({ start: hist.edges[i], end: hist.edges[i + 1], cells: n })) },
    width: 260,
    height: 120,
    mark: { type: 'bar', tooltip: true },
    encoding: {
      x: { field: 'start', type: 'quantitative', bin: { binned: true }, title: `change of ${column} (A − B)` },
      x2: { field: 'end' },
      y: { field: 'cells', type: 'quantitative', title: 'cells' }
    }
  };
}

function histogramTable(hist: { edges: number[]; counts: number[] }): HTMLElement {
  return h(
    'details',
    { class: 'sds-hist-table' },
    h('summary', {}, 'Differences as a table'),
    h(
      'table',
      { class: 'sds-table' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'change from'), h('th', { scope: 'col' }, 'to'), h('th', { scope: 'col', class: 'sds-num' }, 'cells'))),
      h(
        'tbody',
        {},
        hist.counts.map((n, i) =>
          h('tr', {}, h('td', {}, cell(hist.edges[i])), h('td', {}, cell(hist.edges[i + 1])), h('td', { class: 'sds-num' }, n.toLocaleString('en')))
        )
      )
    )
  );
}


function columnList(
  title: string,
  status: string,
  columns: ColumnSummary[],
  where: string,
  onTissue: ((c: ColumnSummary, node: HTMLElement, button: HTMLElement) => void) | null = null
): HTMLElement {
  const node: HTMLElement = h(
    'div',
    { class: `sds-delta-${status}` },
    h('h4', {}, `${title} (values in ${where})`),
    h(
      'table',
      { class: 'sds-table sds-columns' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, 'column'),
          h('th', { scope: 'col' }, 'kind'),
          h('th', { scope: 'col' }, 'values'),
          onTissue ? h('th', { scope: 'col' }, h('span', { class: 'sds-visually-hidden' }, 'on the tissue')) : null
        )
      ),
      h(
        'tbody',
        {},
        columns.map(c =>
          h(
            'tr',
            {},
            h('td', {}, h('code', {}, c.column)),
            h('td', {}, c.kind ?? ''),
            h('td', { class: 'sds-values' }, c.kind ? valuesText(c) : ''),
            onTissue ? h('td', {}, tissueButton(`Color A's cells by ${c.column}`, button => onTissue(c, node, button))) : null
          )
        )
      )
    )
  );
  return node;
}

/** A "Show on tissue" button, hidden until A is known to have a spatial view. */
function tissueButton(title: string, onClick: (button: HTMLElement) => void): HTMLElement {
  const button = h('button', { type: 'button', class: 'sds-button sds-show-tissue', title, hidden: '' }, 'Show on tissue');
  button.addEventListener('click', () => onClick(button));
  return button;
}

function shape(s: number[] | null | undefined): string {
  return s ? s.map(n => n.toLocaleString('en')).join(' × ') : '';
}

function obsmSentence(o: ObsmChange): (Node | string)[] {
  const name = h('code', {}, o.key);
  if (o.change === 'added') {
    return ['Added ', name, ` (${shape(o.shape_b)})`];
  }
  if (o.change === 'removed') {
    return ['Removed ', name, ` (${shape(o.shape_a)})`];
  }
  const parts: (Node | string)[] = ['Changed ', name];
  if (shape(o.shape_a) !== shape(o.shape_b)) {
    parts.push(`: ${shape(o.shape_a)} → ${shape(o.shape_b)}`);
  } else if (o.n_rows_changed !== undefined) {
    parts.push(`: ${plural(o.n_rows_changed, 'row')} of ${(o.shape_b?.[0] ?? 0).toLocaleString('en')} changed`);
    if (o.max_displacement !== undefined) {
      parts.push(`, largest displacement ${cell(o.max_displacement)}`);
    }
  }
  return parts;
}


function unsSentence(u: UnsChange): (Node | string)[] {
  const name = h('code', {}, u.key);
  const value = (side: 'a' | 'b') => (side in u ? valueText(u[side]) : 'a value too large to show');
  if (u.change === 'added') {
    return ['Added ', name, `: ${value('b')}`];
  }
  if (u.change === 'removed') {
    return ['Removed ', name, ` (was ${value('a')})`];
  }
  return ['Changed ', name, `: ${value('a')} → ${value('b')}`];
}

function partSentence(noun: string, change: string, title: string | null, id: string): (Node | string)[] {
  const verb = change === 'added' ? 'Added' : change === 'removed' ? 'Removed' : 'Changed';
  return [`${verb} ${noun} `, title ? `'${title}'` : h('code', {}, id)];
}

function resultSentence(r: ResultChange): (Node | string)[] {
  const parts = partSentence('result', r.change, r.title, r.id);
  if (r.kind) {
    parts.push(` (${r.kind})`);
  }
  if (r.change === 'added' && r.n_rows_b !== undefined) {
    parts.push(`: ${plural(r.n_rows_b, 'row')}`);
  } else if (r.change === 'changed') {
    if (r.table_changed === false) {
      parts.push(': its table is the same, its description changed');
    } else if (r.n_rows_changed !== undefined) {
      parts.push(`: ${plural(r.n_rows_changed, 'row')} of ${(r.n_rows_b ?? 0).toLocaleString('en')} changed`);
    } else if (r.n_rows_a !== undefined && r.n_rows_b !== undefined) {
      parts.push(`: its table changed (${r.n_rows_a.toLocaleString('en')} → ${plural(r.n_rows_b, 'row')})`);
    }
  }
  return parts;
}
