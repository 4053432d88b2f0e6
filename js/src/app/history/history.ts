/** History: one row per version, top first, then the base. */

import { Clock, pageClock } from '../shared/clock';
import { badge, h } from '../shared/dom';
import { changeFamily, changeLabel, datasetName, exactTime, relativeTime } from '../shared/format';
import type { BaseSummary, History, VersionSummary } from '../shared/types';
import { VirtualList } from '../shared/vlist';

export const ROW_HEIGHT = 72;
/** Milliseconds a key-driven selection rests before the details load. */
export const KEY_DELAY = 120;

/**
 * The one line shown when nothing in the folder can be read as a version (not a version,
 * or its layer.json is corrupt), or null when some version (or the base) was read.
 */
export function unreadable(history: History | null): string | null {
  const kind = history?.error?.kind;
  if (!history?.error || history.versions.length || history.base || (kind !== 'stack' && kind !== 'manifest')) {
    return null; // a broken chain and the like: the versions that were read are shown
  }
  return kind === 'manifest'
    ? `This version's layer.json cannot be read: ${history.error.message}`
    : `This folder is not a version: ${history.error.message}`;
}

type Entry = { kind: 'version'; v: VersionSummary } | { kind: 'base'; b: BaseSummary };

export class HistoryView {
  readonly node: HTMLElement;
  private readonly list: VirtualList;
  private entries: Entry[] = [];
  private all: Entry[] = [];
  private match: ((v: VersionSummary) => boolean) | null = null;
  private selected = -1;
  private bound: { depth: number; label: string } | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly untick: () => void;
  private readonly onSelect: (depth: number) => void;
  private readonly clock: Clock;

  constructor(onSelect: (depth: number) => void, clock: Clock = pageClock()) {
    this.onSelect = onSelect;
    this.clock = clock;
    this.node = h('div', {
      class: 'sds-history',
      role: 'listbox',
      tabindex: 0,
      'aria-label': 'Versions'
    });
    this.list = new VirtualList(this.node, {
      rowHeight: ROW_HEIGHT,
      renderRow: i => this.renderRow(i),
      idPrefix: 'sds-history'
    });
    this.node.addEventListener('click', this.onClick);
    this.node.addEventListener('keydown', this.onKey);
    // relative times ("3 minutes ago") age: redrawn, with every other view, when the clock moves
    this.untick = clock.onTick(() => this.list.refresh());
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.untick();
    this.list.dispose();
    this.node.removeEventListener('click', this.onClick);
    this.node.removeEventListener('keydown', this.onKey);
  }

  setHistory(history: History): void {
    const versions = [...(history.versions ?? [])].sort((a, b) => b.depth - a.depth);
    this.all = versions.map(v => ({ kind: 'version', v }) as Entry);
    if (history.base) {
      this.all.push({ kind: 'base', b: history.base });
    }
    this.selected = -1;
    this.clock.advance(); // new rows: every view reads the time again, together
    this.applyFilter();
  }

  /** Show only the versions `match` accepts (the base only when there is no filter). */
  setFilter(match: ((v: VersionSummary) => boolean) | null): void {
    const keep = this.selectedDepth();
    this.match = match;
    this.applyFilter();
    if (keep !== null && this.depths().includes(keep)) {
      this.selected = this.depths().indexOf(keep);
      this.list.refresh();
    }
  }

  private applyFilter(): void {
    const match = this.match;
    this.entries = match ? this.all.filter(e => e.kind === 'version' && match(e.v)) : this.all;
    this.selected = -1;
    this.node.classList.toggle('sds-history-filtered', !!match);
    this.list.setCount(this.entries.length);
  }

  /** Mark the version whose data the host holds (e.g. bound as `adata`); null clears it. */
  setBound(bound: { depth: number; label: string } | null): void {
    this.bound = bound;
    this.list.refresh();
  }

  /** Depths in display order (top first, base last). */
  depths(): number[] {
    return this.entries.map(e => (e.kind === 'version' ? e.v.depth : 0));
  }

  selectedDepth(): number | null {
    const e = this.entries[this.selected];
    return e ? (e.kind === 'version' ? e.v.depth : 0) : null;
  }

  /** Select by depth without moving focus; notifies when it changed. */
  selectDepth(depth: number): void {
    const index = this.depths().indexOf(depth);
    if (index >= 0) {
      this.selectIndex(index);
    }
  }

  private selectIndex(index: number, debounce = false): void {
    if (!this.entries.length) {
      return;
    }
    index = Math.max(0, Math.min(this.entries.length - 1, index));
    const changed = index !== this.selected;
    this.selected = index;
    this.list.scrollToIndex(index);
    // restyle the rendered rows in place: no re-render on a selection change
    for (const row of this.node.querySelectorAll<HTMLElement>('.sds-history-row')) {
      const on = Number(row.dataset.index) === index;
      row.classList.toggle('sds-selected', on);
      row.setAttribute('aria-selected', String(on));
      if (on) {
        this.node.setAttribute('aria-activedescendant', row.id);
      }
    }
    if (!changed) {
      return;
    }
    // holding an arrow key moves the selection at once, but asks for the
    // details only once the key rests
    clearTimeout(this.timer);
    if (debounce) {
      this.timer = setTimeout(() => this.onSelect(this.selectedDepth()!), KEY_DELAY);
    } else {
      this.onSelect(this.selectedDepth()!);
    }
  }

  private onClick = (event: MouseEvent): void => {
    const row = (event.target as Element).closest<HTMLElement>('.sds-history-row');
    if (row && this.node.contains(row)) {
      this.node.focus({ preventScroll: true });
      this.selectIndex(Number(row.dataset.index));
    }
  };

  private onKey = (event: KeyboardEvent): void => {
    const step: Record<string, number> = {
      ArrowDown: 1,
      ArrowUp: -1,
      PageDown: this.list.pageSize(),
      PageUp: -this.list.pageSize()
    };
    let target: number | null = null;
    if (event.key in step) {
      target = (this.selected < 0 ? 0 : this.selected + step[event.key]);
    } else if (event.key === 'Home') {
      target = 0;
    } else if (event.key === 'End') {
      target = this.entries.length - 1;
    }
    if (target !== null) {
      event.preventDefault();
      event.stopPropagation();
      this.selectIndex(target, true);
    }
  };

  private renderRow(i: number): HTMLElement {
    const entry = this.entries[i];
    const selected = i === this.selected;
    const row =
      entry.kind === 'version' ? this.versionRow(entry.v) : this.baseRow(entry.b);
    row.setAttribute('role', 'option');
    row.setAttribute('aria-selected', String(selected));
    row.classList.toggle('sds-selected', selected);
    return row;
  }

  private versionRow(v: VersionSummary): HTMLElement {
    const app = v.app ? [v.app.id, v.app.version].filter(Boolean).join(' ') : '';
    return h(
      'div',
      { class: 'sds-history-row', 'data-depth': v.depth },
      h(
        'div',
        { class: 'sds-row-line sds-row-head' },
        h('span', { class: 'sds-depth', title: `depth ${v.depth}` }, `v${v.depth}`),
        h('span', { class: 'sds-row-title', title: v.title ?? v.dataset_id }, v.title || v.dataset_id),
        this.boundMark(v.depth),
        v.created_at
          ? h(
              'time',
              { class: 'sds-row-when', datetime: v.created_at, title: exactTime(v.created_at) },
              relativeTime(v.created_at, this.clock.now())
            )
          : null
      ),
      h(
        'div',
        { class: 'sds-row-line sds-row-message', title: v.message ?? '' },
        v.message || h('span', { class: 'sds-muted' }, 'no message')
      ),
      h(
        'div',
        { class: 'sds-row-line sds-row-meta', title: (v.changes ?? []).map(changeLabel).join('\n') },
        v.created_by ? h('span', { class: 'sds-row-who' }, v.created_by) : null,
        app ? h('span', { class: 'sds-row-app', title: 'app' }, app) : null,
        ...(v.changes ?? []).map(c => badge(changeLabel(c), changeFamily(c)))
      )
    );
  }

  private boundMark(depth: number): HTMLElement | null {
    if (!this.bound || this.bound.depth !== depth) {
      return null;
    }
    // Issue 24, item 5: the mark says where a save of the bound AnnData goes, whatever is selected.
    const title = `bound as ${this.bound.label} in the notebook; saving it puts a new version on this one, whatever is selected`;
    return h('span', { class: 'sds-bound', title }, `bound: ${this.bound.label}`);
  }

  private baseRow(b: BaseSummary): HTMLElement {
    return h(
      'div',
      { class: 'sds-history-row sds-base-row', 'data-depth': 0 },
      h(
        'div',
        { class: 'sds-row-line sds-row-head' },
        h('span', { class: 'sds-depth', title: 'the base store' }, 'base'),
        h('span', { class: 'sds-row-title', title: b.name ? `${b.name}\n${b.dataset_id ?? ''}` : (b.dataset_id ?? '') }, datasetName(b, 'base store')),
        this.boundMark(0)
      ),
      h('div', { class: 'sds-row-line sds-row-message', title: b.path }, b.path),
      h(
        'div',
        { class: 'sds-row-line sds-row-meta' },
        badge(b.kind === 'zip' ? 'zip store' : 'folder store', 'base'),
        badge(`Zarr v${b.zarr_format}`, 'base')
      )
    );
  }
}

