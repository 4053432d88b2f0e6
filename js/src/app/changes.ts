/** Changes of the selected version: its ops, and the keys it adds, replaces, deletes. */

import { empty, errorBox, fill, h, loading, report } from './dom';
import { changeFamily, changeLabel, formatBytes, plural, short } from './format';
import { badge } from './history';
import { TransportError, type Transport } from './transport';
import type { BaseSummary, Changes, KeySize, Whiteout } from './types';

export class ChangesView {
  readonly node: HTMLElement;
  private token = 0;

  constructor(private readonly transport: Transport) {
    this.node = h('div', { class: 'sds-changes' });
  }

  showBase(base: BaseSummary): void {
    this.token++;
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

  async show(version: number): Promise<void> {
    const token = ++this.token;
    fill(this.node, loading());
    try {
      const { data } = await this.transport.request('changes', { version });
      if (token === this.token) {
        this.render(data);
      }
    } catch (err) {
      if (token === this.token) {
        const e = TransportError.from(err);
        fill(this.node, errorBox(e.message, e.kind));
      }
    }
  }

  private render(c: Changes): void {
    const ops = c.ops ?? [];
    fill(
      this.node,
      h('h3', {}, 'Operations'),
      ops.length
        ? h(
            'ol',
            { class: 'sds-ops' },
            ops.map(op =>
              h(
                'li',
                {},
                badge(changeLabel(op), changeFamily(op)),
                h('code', { class: 'sds-op-json' }, short(op, 200))
              )
            )
          )
        : empty('No operations recorded.'),
      keyTable('Added', c.added ?? []),
      keyTable('Replaced', c.replaced ?? []),
      deletedTable(c.deleted ?? [])
    );
  }
}

function keyTable(title: string, keys: KeySize[]): HTMLElement {
  const total = keys.reduce((s, k) => s + (k.size || 0), 0);
  return h(
    'section',
    { class: `sds-keys sds-keys-${title.toLowerCase()}` },
    h('h3', {}, `${title} `, h('span', { class: 'sds-count' }, `${plural(keys.length, 'key')}, ${formatBytes(total)}`)),
    keys.length
      ? h(
          'table',
          { class: 'sds-table' },
          h('thead', {}, h('tr', {}, h('th', {}, 'key'), h('th', { class: 'sds-num' }, 'size'))),
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
    h('h3', {}, 'Deleted ', h('span', { class: 'sds-count' }, `${entries.length}`)),
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
