/**
 * What the selected version holds: its SpatialData elements (images, labels,
 * shapes, points, tables) and, per table, its obs columns with their values,
 * obsm and uns keys. What this version added or changed is marked.
 */

import { valuesText } from '../shared/format';
import { breakable, empty, fill, h } from '../shared/dom';
import { loadInto } from '../shared/load';
import type { Transport } from '../shared/transport';
import type { Contents, ElementKind, ElementSummary, KeyEntry, TableContents } from '../shared/types';

const KIND_TITLES: [ElementKind, string][] = [
  ['images', 'Images'],
  ['labels', 'Labels'],
  ['shapes', 'Shapes'],
  ['points', 'Points'],
  ['tables', 'Tables']
];

function count(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en')} ${n === 1 ? one : many}`;
}

function dims(shape: number[] | undefined, axes: string[] | undefined): string {
  if (!shape) {
    return '';
  }
  const size = shape.map(n => n.toLocaleString('en')).join(' × ');
  return axes && axes.length === shape.length ? `${size} (${axes.join(', ')})` : size;
}

/** One line that says what an element is: size, levels, channels, counts. */
export function describeElement(e: ElementSummary): string {
  if (e.error) {
    return e.error;
  }
  switch (e.kind) {
    case 'images':
    case 'labels': {
      const parts = [dims(e.shape, e.axes)];
      if (e.levels !== undefined) {
        parts.push(count(e.levels, 'level'));
      }
      if (e.channels?.length) {
        parts.push(`channels ${e.channels.join(', ')}`);
      }
      if (e.dtype) {
        parts.push(e.dtype);
      }
      return parts.filter(Boolean).join(', ');
    }
    case 'shapes':
      return [count(e.n ?? 0, 'shape'), e.geometry?.length ? e.geometry.join(', ') : ''].filter(Boolean).join(', ');
    case 'points':
      return count(e.n ?? 0, 'point');
    case 'tables':
      return [
        `${count(e.n_obs ?? 0, 'cell')} × ${count(e.n_vars ?? 0, 'variable')}`,
        e.annotates?.length ? `annotates ${e.annotates.join(', ')}` : ''
      ]
        .filter(Boolean)
        .join(', ');
    default:
      return '';
  }
}

function mark(status: string | null | undefined): HTMLElement | null {
  return status
    ? h('span', { class: `sds-mark sds-mark-${status}`, title: `${status} in this version` }, status)
    : null;
}

export class ContentsView {
  readonly node: HTMLElement;

  constructor(private readonly transport: Transport) {
    this.node = h('div', { class: 'sds-contents' });
  }

  show(version: number): Promise<void> {
    return loadInto(this.node, () => this.transport.request('contents', { version }), data => this.render(data));
  }

  private render(c: Contents): void {
    const elements = c.elements ?? [];
    const marked = elements.some(e => e.status) || (c.tables ?? []).some(t => t.obs.some(col => col.status));
    fill(
      this.node,
      c.depth > 0
        ? h(
            'p',
            { class: 'sds-muted sds-contents-legend' },
            marked ? 'Marked: what this version added or changed.' : 'This version changed none of the elements below.'
          )
        : null,
      elements.length
        ? h(
            'section',
            { class: 'sds-elements', 'aria-label': 'Elements' },
            h('h3', {}, 'Elements'),
            h('div', { class: 'sds-scroll-x', tabindex: 0, role: 'region', 'aria-label': 'Elements table' }, elementsTable(elements))
          )
        : empty('This version holds no SpatialData elements.'),
      (c.tables ?? []).map(t => tableSection(t))
    );
  }
}

function elementsTable(elements: ElementSummary[]): HTMLElement {
  return h(
    'table',
    { class: 'sds-table sds-elements-table' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col' }, 'kind'),
        h('th', { scope: 'col' }, 'name'),
        h('th', { scope: 'col' }, 'what it holds'),
        h('th', { scope: 'col' }, h('span', { class: 'sds-visually-hidden' }, 'marked'))
      )
    ),
    h(
      'tbody',
      {},
      KIND_TITLES.flatMap(([kind, title]) =>
        elements
          .filter(e => e.kind === kind)
          .map(e =>
            h(
              'tr',
              { 'data-kind': kind, 'data-name': e.name, class: e.status ? 'sds-marked' : null },
              h('td', { class: 'sds-muted' }, title),
              h('td', { class: 'sds-name' }, h('code', {}, breakable(e.name))),
              h('td', { class: e.error ? 'sds-warn-text' : 'sds-wrap' }, describeElement(e)),
              h('td', {}, mark(e.status))
            )
          )
      )
    )
  );
}

function tableSection(t: TableContents): HTMLElement {
  return h(
    'section',
    { class: 'sds-table-contents', 'data-table': t.name, 'aria-label': `Table ${t.name}` },
    h(
      'h3',
      {},
      'Table ',
      h('code', {}, t.name),
      `: ${count(t.n_obs, 'cell')} × ${count(t.n_vars, 'variable')}`,
      t.annotates.length ? `, annotates ${t.annotates.join(', ')}` : '',
      ' ',
      mark(t.status)
    ),
    h('h4', {}, `obs columns (${t.obs.length})`),
    t.obs.length
      ? h(
          'div',
          { class: 'sds-scroll-x', tabindex: 0, role: 'region', 'aria-label': `obs columns of ${t.name}` },
          h(
            'table',
            { class: 'sds-table sds-obs-columns' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                h('th', { scope: 'col' }, 'column'),
                h('th', { scope: 'col' }, 'kind'),
                h('th', { scope: 'col' }, 'values'),
                h('th', { scope: 'col', class: 'sds-num' }, 'missing'),
                h('th', { scope: 'col' }, h('span', { class: 'sds-visually-hidden' }, 'marked'))
              )
            ),
            h(
              'tbody',
              {},
              t.obs.map(col =>
                h(
                  'tr',
                  { 'data-column': col.column, class: col.status ? 'sds-marked' : null },
                  h('td', { class: 'sds-name' }, h('code', {}, breakable(col.column))),
                  h('td', { title: col.dtype }, col.kind),
                  h('td', { class: 'sds-values sds-wrap' }, valuesText(col)),
                  h('td', { class: 'sds-num' }, col.n_missing ? col.n_missing.toLocaleString('en') : ''),
                  h('td', {}, mark(col.status))
                )
              )
            )
          )
        )
      : empty('No obs columns.'),
    t.removed_obs.length
      ? h('p', { class: 'sds-removed-obs' }, 'Removed in this version: ', t.removed_obs.map((name, i) => [i ? ', ' : '', h('code', {}, name)]).flat())
      : null,
    keyList('obsm keys', t.obsm),
    keyList('uns keys', t.uns)
  );
}

function keyList(title: string, keys: KeyEntry[]): HTMLElement {
  return h(
    'div',
    { class: 'sds-key-list' },
    h('h4', {}, `${title} (${keys.length})`),
    keys.length
      ? h(
          'ul',
          { class: 'sds-chips' },
          keys.map(k =>
            h(
              'li',
              { class: k.status ? 'sds-marked' : null },
              h('code', {}, k.key),
              k.shape ? ` ${k.shape.map(n => n.toLocaleString('en')).join(' × ')}` : '',
              k.status ? ' ' : '',
              mark(k.status)
            )
          )
        )
      : empty('none')
  );
}
