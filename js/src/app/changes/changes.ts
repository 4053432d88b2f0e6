/**
 * Changes of the selected version, as sentences with their values
 * ("Set obs regions (categorical: core 80 · margin 75)"). The raw ops and the
 * storage keys it added, replaced and deleted sit under a closed "Files" disclosure.
 */

import { badge, empty, fill, h, report } from '../shared/dom';
import { changeLabel, formatBytes, plural, short, valuesText, valueText } from '../shared/format';
import { cancelLoad, loadInto } from '../shared/load';
import type { Transport } from '../shared/transport';
import type { Agreement, BaseSummary, Change, Changes, KeySize, OpDetail, Whiteout } from '../shared/types';

const STUDIO_RESULTS = 'spatial_data_studio/results/';

/** One op as a sentence: plain text and code-styled names, never markup from the data. */
export function opSentence(op: Change, d: OpDetail = {}): (Node | string)[] {
  const name = (field: string) => h('code', {}, String(op[field] ?? '?'));
  const again = d.existed ? 'Replaced' : 'Added';
  switch (op.op) {
    case 'set-obs': {
      const c = d.column;
      const declared = [op.kind, op.dtype].find(v => typeof v === 'string');
      const values = c ? ` (${c.kind}: ${valuesText(c, 6)})` : declared ? ` (${String(declared)})` : '';
      return (d.agreement ? regroupSentence(name('column'), d.agreement, values) : null) ?? ['Set obs ', name('column'), values];
    }
    case 'delete-obs':
      return ['Removed obs ', name('column')];
    case 'set-obsm': {
      const dims = d.shape ?? (Array.isArray(op.shape) ? (op.shape as number[]) : null);
      return ['Set obsm ', name('key'), dims ? ` (${dims.map(n => Number(n).toLocaleString('en')).join(' × ')})` : ''];
    }
    case 'delete-obsm':
      return ['Removed obsm ', name('key')];
    case 'set-figure': {
      const title = d.title ?? (typeof op.title === 'string' ? op.title : null);
      return [`${again} figure `, title ? `'${title}'` : name('figure')];
    }
    case 'delete-figure':
      return ['Removed figure ', d.title ? `'${d.title}'` : name('figure')];
    case 'set-uns': {
      if (typeof op.result === 'string' || String(op.key ?? '').startsWith(STUDIO_RESULTS)) {
        const title = d.title ?? null;
        const what = [d.kind ?? (typeof op.kind === 'string' ? op.kind : null), d.method].filter(Boolean).join(', ');
        return [
          `${again} result `,
          title ? `'${title}'` : name('result'),
          what ? ` (${what})` : '',
          d.n_rows !== undefined ? `: ${d.n_rows.toLocaleString('en')} row${d.n_rows === 1 ? '' : 's'}` : ''
        ];
      }
      return ['Set uns ', name('key'), 'value' in d ? `: ${valueText(d.value, 200)}` : ''];
    }
    case 'delete-uns':
      return ['Removed uns ', name('key')];
    default:
      return [changeLabel(op)];
  }
}

/** Renamed groups spelled out before "and n more". */
const MAX_RENAMES = 6;

/**
 * A clustering set over one below, as a biologist reads it: a renaming is only that (no cell
 * changed group, the new names listed); otherwise the sentence with its values says how many
 * cells moved to another group. A pair's `a` is the label below, `b` the label now.
 */
function regroupSentence(column: Node, a: Agreement, values: string): (Node | string)[] | null {
  const renamed = a.matched.filter(p => p.a !== p.b);
  if (a.n_moved > 0) {
    return ['Set obs ', column, `${values}: ${plural(a.n_moved, 'cell')} moved to another group`];
  }
  if (!renamed.length) {
    return null;
  }
  const names = renamed.slice(0, MAX_RENAMES).map(p => `${p.a ?? '(missing)'} → ${p.b ?? '(missing)'}`);
  const more = renamed.length > MAX_RENAMES ? `, and ${renamed.length - MAX_RENAMES} more` : '';
  return ['Renamed the groups of obs ', column, ` (every cell stays in its group): ${names.join(', ')}${more}`];
}

export class ChangesView {
  readonly node: HTMLElement;

  constructor(private readonly transport: Transport) {
    this.node = h('div', { class: 'sds-changes' });
  }

  showBase(base: BaseSummary): void {
    cancelLoad(this.node);
    fill(
      this.node,
      h('p', {}, 'The base store: every version above it records its changes against it.'),
      report([
        ['Dataset', base.dataset_id ?? '–'],
        ['Path', base.path],
        ['Kind', base.kind],
        ['Zarr format', String(base.zarr_format)]
      ])
    );
  }

  show(version: number): Promise<void> {
    return loadInto(this.node, () => this.transport.request('changes', { version }), data => this.render(data));
  }

  private render(c: Changes): void {
    const ops = c.ops ?? [];
    const details = c.details ?? [];
    const added = c.added ?? [];
    const replaced = c.replaced ?? [];
    const deleted = c.deleted ?? [];
    const bytes = [...added, ...replaced].reduce((s, k) => s + (k.size || 0), 0);
    fill(
      this.node,
      c.note ? h('p', { class: 'sds-note', role: 'note' }, c.note) : null,
      h('h3', {}, 'What this version changed'),
      ops.length
        ? h(
            'ol',
            { class: 'sds-ops sds-sentences' },
            ops.map((op, i) => h('li', { 'data-op': String(op.op ?? '') }, opSentence(op, details[i] ?? {})))
          )
        : empty('This version records no operations.'),
      h(
        'details',
        { class: 'sds-files' },
        h(
          'summary',
          {},
          'How it is stored ',
          h('span', { class: 'sds-count' }, storedText(added.length, replaced.length, deleted.length, bytes))
        ),
        ops.length
          ? h(
              'section',
              { class: 'sds-raw-ops' },
              h('h4', {}, 'Operations as recorded'),
              h(
                'ol',
                { class: 'sds-ops' },
                ops.map(op => h('li', {}, h('code', { class: 'sds-op-json' }, short(op, 400))))
              )
            )
          : null,
        keyTable('Added', added),
        keyTable('Replaced', replaced),
        deletedTable(deleted)
      )
    );
  }
}

/**
 * The storage summary in files, not cells: a rename rewrites a column's files, and a count of
 * "replaced" files next to the sentences must not read as a count of changed values.
 */
export function storedText(added: number, replaced: number, deleted: number, bytes: number): string {
  const parts = [
    added ? `${plural(added, 'file')} written` : '',
    replaced ? `${plural(replaced, 'file')} rewritten` : '',
    deleted ? `${plural(deleted, 'entry', 'entries')} removed` : ''
  ].filter(Boolean);
  return `${parts.length ? parts.join(', ') : 'no files'} · ${formatBytes(bytes)}`;
}

function keyTable(title: string, keys: KeySize[]): HTMLElement {
  const total = keys.reduce((s, k) => s + (k.size || 0), 0);
  return h(
    'section',
    { class: `sds-keys sds-keys-${title.toLowerCase()}` },
    h('h4', {}, `${title} `, h('span', { class: 'sds-count' }, `${plural(keys.length, 'key')}, ${formatBytes(total)}`)),
    keys.length
      ? h(
          'table',
          { class: 'sds-table' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'key'), h('th', { scope: 'col', class: 'sds-num' }, 'size'))),
          h(
            'tbody',
            {},
            keys.map(k =>
              h(
                'tr',
                {},
                h('td', { class: 'sds-key' }, k.key),
                h('td', { class: 'sds-num', title: `${k.size} bytes` }, formatBytes(k.size))
              )
            )
          )
        )
      : empty('none')
  );
}

function deletedTable(entries: Whiteout[]): HTMLElement {
  return h(
    'section',
    { class: 'sds-keys sds-keys-deleted' },
    h('h4', {}, 'Deleted ', h('span', { class: 'sds-count' }, `${entries.length}`)),
    entries.length
      ? h(
          'ul',
          { class: 'sds-deleted' },
          entries.map(w =>
            h(
              'li',
              {},
              h('span', { class: 'sds-key' }, w.entry),
              w.node ? badge('node', 'delete') : badge('key', 'delete')
            )
          )
        )
      : empty('none')
  );
}
