/**
 * How two clusterings agree, as the compare view shows it: a headline that
 * says whether cells moved or only the labels were renamed, and the whole
 * contingency table as a heatmap whose matched label pairs run down the
 * diagonal (the service orders the table so). Counts are formatted; axis
 * labels are never cut (the chart's width follows the labels, the panel scrolls).
 */

import { h } from '../shared/dom';
import type { Agreement, Contingency, ObsChange } from '../shared/types';

/** Shown for a missing value in the table's labels. */
const MISSING = '(missing)';

function count(n: number): string {
  return n.toLocaleString('en');
}

/** Decimals past which a score is not shown: a million cells with one moved still differ from 1 before this. */
const MAX_DIGITS = 8;

/**
 * A score (ARI, NMI: 1 for the same partition) with enough decimals to tell it from 1: two at
 * least, else one past the first that differs from 1, so 99 moved cells of 100,000 read 0.9983,
 * never "1.00" like no change at all (rounded to that many decimals, x cannot round up to 1).
 */
export function score(x: number): string {
  if (x === 1) {
    return '1';
  }
  const gap = 1 - x;
  const digits = gap > 0 ? Math.min(MAX_DIGITS, Math.max(2, Math.ceil(-Math.log10(gap)) + 1)) : 2;
  const shown = x.toFixed(digits);
  // past MAX_DIGITS a score still below 1 is said so rather than rounded up to it
  return gap > 0 && Number(shown) >= 1 ? `> ${(1 - 10 ** -MAX_DIGITS).toFixed(MAX_DIGITS)}` : shown;
}

/** The headline's words for one clustering: "same partition, renamed" or "13,076 cells moved". */
export function agreementText(a: Agreement): string {
  if (a.n_moved === 0) {
    return 'same partition, renamed';
  }
  return `${count(a.n_moved)} ${a.n_moved === 1 ? 'cell' : 'cells'} moved (ARI ${score(a.ari)}, NMI ${score(a.nmi)})`;
}

/** The headline line of a changed obs column: the agreement when it has one, else the cells whose value differs. */
export function changeText(ch: ObsChange): string {
  if (ch.agreement) {
    return `${ch.column}: ${agreementText(ch.agreement)}`;
  }
  return `${ch.column}: ${count(ch.n_changed)} ${ch.n_changed === 1 ? 'cell' : 'cells'} changed`;
}

/** Up to this many renamed groups are spelled out ("0 → T cells"); the rest are counted. */
const MAX_RENAMES = 6;

/** The renamed pairs as "B's name → A's name" (a pair's `a` is B's label, `b` is A's: B is the request's `a`). */
function renames(a: Agreement): string {
  const pairs = a.matched.filter(p => p.a !== p.b);
  const shown = pairs.slice(0, MAX_RENAMES).map(p => `${p.a ?? MISSING} → ${p.b ?? MISSING}`);
  const more = pairs.length > MAX_RENAMES ? `, and ${pairs.length - MAX_RENAMES} more` : '';
  return shown.join(', ') + more;
}

/**
 * A one-paragraph reading of the agreement under the column's heading, in the heading's terms:
 * a renaming is only that (the cells whose label text differs are not "changed"), and moved
 * cells are counted apart from the groups that were only renamed.
 */
export function agreementNode(ch: ObsChange): HTMLElement | null {
  const a = ch.agreement;
  if (!a) {
    return null;
  }
  const renamed = a.matched.filter(p => p.a !== p.b).length;
  const groups = `${a.matched.length} ${a.matched.length === 1 ? 'group pairs' : 'groups pair'} up one to one`;
  const scores = ` Adjusted Rand index ${score(a.ari)}, normalised mutual information ${score(a.nmi)}.`;
  if (a.n_moved === 0) {
    return h(
      'p',
      { class: 'sds-agreement', 'data-moved': '0' },
      h('strong', {}, 'Same partition, renamed.'),
      ` Every cell stays with the same cells; ${renamed === 1 ? 'one group has' : `${count(renamed)} groups have`} a new name: ${renames(a)}.`,
      scores
    );
  }
  return h(
    'p',
    { class: 'sds-agreement', 'data-moved': String(a.n_moved) },
    h('strong', {}, `${count(a.n_moved)} ${a.n_moved === 1 ? 'cell' : 'cells'} moved to another group.`),
    ` ${groups}`,
    renamed ? ` (${renamed} renamed: ${renames(a)}; their cells did not move)` : '',
    '.',
    scores
  );
}

/** What a changed column's heading says after its name: a clustering's agreement, else the cells whose value differs. */
export function headingText(ch: ObsChange): string {
  return ch.agreement ? agreementText(ch.agreement) : `${count(ch.n_changed)} ${ch.n_changed === 1 ? 'cell' : 'cells'} changed`;
}

/** Pairs of labels past which the heatmap is not drawn (the transitions table and its chart stay). */
export const MAX_HEATMAP_PAIRS = 10_000;

/** Whether the whole table is small enough to draw as a heatmap (100 x 100 labels; an ID column is not). */
export function drawable(table: Contingency): boolean {
  return table.a.length * table.b.length <= MAX_HEATMAP_PAIRS;
}

/** Pixels one label takes at the chart's label font, roughly (Vega measures text itself; this sizes the steps). */
function labelWidth(labels: string[]): number {
  return Math.max(0, ...labels.map(l => l.length)) * 7 + 8;
}

/**
 * The contingency heatmap: B's labels down, A's across, every pair of labels (zeros too),
 * matched pairs outlined on the diagonal. Axis labels have no length limit.
 */
export function contingencySpec(table: Contingency, matched: number, from: string, to: string, schema: string): object {
  const rows = table.a.map(l => l ?? MISSING);
  const cols = table.b.map(l => l ?? MISSING);
  const values = rows.flatMap((r, i) =>
    cols.map((c, j) => ({ from: r, to: c, cells: table.counts[i][j], matched: i === j && i < matched }))
  );
  const max = Math.max(0, ...values.map(v => v.cells));
  // a step wide enough for the largest formatted count, so numbers never overlap; the colour
  // legend's ticks as whole counts (',d'): a bare ',' lets Vega pick one significant digit ("6e+2")
  const step = Math.max(26, count(max).length * 7 + 6);
  return {
    $schema: schema,
    data: { values },
    width: { step },
    height: { step: 22 },
    padding: { left: 4, right: 4, top: 4, bottom: 4 },
    config: { axis: { labelLimit: 0, titleLimit: 0 } },
    encoding: {
      x: {
        field: 'to',
        type: 'nominal',
        sort: cols,
        title: `in ${to} (A)`,
        axis: { labelAngle: -40, labelLimit: 0, labelPadding: 4, minExtent: labelWidth(cols) * 0.7 }
      },
      y: { field: 'from', type: 'nominal', sort: rows, title: `in ${from} (B)`, axis: { labelLimit: 0, minExtent: labelWidth(rows) } }
    },
    layer: [
      {
        mark: 'rect',
        encoding: {
          color: { field: 'cells', type: 'quantitative', title: 'cells', scale: { scheme: 'blues' }, legend: { format: ',d' } },
          stroke: { condition: { test: 'datum.matched', value: '#e6550d' }, value: null },
          strokeWidth: { condition: { test: 'datum.matched', value: 2 }, value: 0 },
          tooltip: [
            { field: 'from', title: `in ${from}` },
            { field: 'to', title: `in ${to}` },
            { field: 'cells', type: 'quantitative', format: ',' },
            { field: 'matched', title: 'matched pair' }
          ]
        }
      },
      {
        mark: { type: 'text', fontSize: 10 },
        transform: [{ filter: 'datum.cells > 0' }],
        encoding: {
          text: { field: 'cells', type: 'quantitative', format: ',' },
          color: { condition: { test: `datum.cells > ${max / 2}`, value: '#fff' }, value: '#111' }
        }
      }
    ]
  };
}
