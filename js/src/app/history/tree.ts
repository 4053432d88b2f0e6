/**
 * History as a tree: every version on the opened version's base drawn as a
 * graph (a lane per branch, as `git log --graph` draws it), a search over the
 * history, and a cheap poll that notices versions saved while the view is open.
 *
 * `TreeSection` owns the search box, the "new versions" button, the graph and
 * the "missing dataset" row; the app places them around its history list.
 */

import { pageClock, type Clock } from '../shared/clock';
import { h } from '../shared/dom';
import { datasetName, exactTime, relativeTime } from '../shared/format';
import { unreadable } from './history';
import { TransportError, type FailureKind, type Transport } from '../shared/transport';
import type { Change, History, Tree, TreeNode, VersionSummary } from '../shared/types';
import { VirtualList } from '../shared/vlist';

/** A row's least height (one line of title); a title that wraps makes its row taller. */
export const TREE_ROW_HEIGHT = 28;
/** How far down a row its graph's dot sits: level with the first line of the title (see tree.css). */
const GRAPH_DOT_Y = TREE_ROW_HEIGHT / 2;
/** Milliseconds between two polls of the datasets folder while the view is visible. */
export const POLL_INTERVAL = 4000;
const LANE_WIDTH = 14;
/** Lanes drawn before the graph is squeezed into this width. */
const MAX_LANES = 12;

// ---------------------------------------------------------------- layout

/** One row of the graph: its node, its lane, and the lanes open above and below it. */
export type GraphRow = {
  node: TreeNode;
  lane: number;
  /** What each lane awaits above the row (a dataset ID), or null for a free lane. */
  above: (string | null)[];
  /** What each lane awaits below the row. */
  below: (string | null)[];
};

/**
 * Nodes newest first with every child before its parent (the service's order
 * where the parent links allow it): a heap of the nodes whose children are all out.
 */
export function topoOrder(nodes: TreeNode[]): TreeNode[] {
  const index = new Map(nodes.map((n, i) => [n.dataset_id, i]));
  const waiting = new Array<number>(nodes.length).fill(0);
  for (const n of nodes) {
    const p = n.parent === null ? undefined : index.get(n.parent);
    if (p !== undefined) {
      waiting[p]++;
    }
  }
  const heap: number[] = [];
  const push = (i: number) => {
    heap.push(i);
    let c = heap.length - 1;
    while (c > 0) {
      const up = (c - 1) >> 1;
      if (heap[up] <= heap[c]) break;
      [heap[up], heap[c]] = [heap[c], heap[up]];
      c = up;
    }
  };
  const pop = (): number => {
    const top = heap[0];
    const last = heap.pop()!;
    if (heap.length) {
      heap[0] = last;
      let c = 0;
      for (;;) {
        const l = 2 * c + 1;
        const r = l + 1;
        let m = c;
        if (l < heap.length && heap[l] < heap[m]) m = l;
        if (r < heap.length && heap[r] < heap[m]) m = r;
        if (m === c) break;
        [heap[m], heap[c]] = [heap[c], heap[m]];
        c = m;
      }
    }
    return top;
  };
  nodes.forEach((_, i) => waiting[i] === 0 && push(i));
  const out: TreeNode[] = [];
  while (heap.length) {
    const i = pop();
    out.push(nodes[i]);
    const p = nodes[i].parent === null ? undefined : index.get(nodes[i].parent!);
    if (p !== undefined && --waiting[p] === 0) {
      push(p);
    }
  }
  return out.length === nodes.length ? out : nodes; // a loop: the service's order
}

/**
 * Lanes like `git log --graph`: a node takes the lane that awaits it, its parent
 * inherits it. The nodes of `main` (the opened chain) keep the first lane, so the
 * opened line runs straight down the left and branches stand beside it.
 */
export function layoutGraph(ordered: TreeNode[], main: Set<string> = new Set()): GraphRow[] {
  const ids = new Set(ordered.map(n => n.dataset_id));
  let lanes: (string | null)[] = main.size ? [null] : [];
  let mainLeft = ordered.filter(n => main.has(n.dataset_id)).length;
  return ordered.map(node => {
    const above = lanes.slice();
    const onMain = main.has(node.dataset_id);
    let lane = onMain ? 0 : lanes.indexOf(node.dataset_id);
    if (lane < 0) {
      const from = mainLeft > 0 ? 1 : 0;
      lane = lanes.indexOf(null, from);
      if (lane < 0) {
        lane = Math.max(lanes.length, from);
        while (lanes.length <= lane) lanes.push(null);
      }
    }
    if (onMain) {
      mainLeft--;
    }
    // other lanes awaiting this node (siblings' branches) end here
    lanes = lanes.map((id, i) => (id === node.dataset_id && i !== lane ? null : id));
    lanes[lane] = node.parent !== null && ids.has(node.parent) ? node.parent : null;
    while (lanes.length > (mainLeft > 0 ? 1 : 0) && lanes[lanes.length - 1] === null) {
      lanes.pop();
    }
    return { node, lane, above, below: lanes.slice() };
  });
}

// ---------------------------------------------------------------- search

function changeWords(c: Change): string[] {
  return Object.values(c).filter((v): v is string => typeof v === 'string');
}

/**
 * Whether a version matches a search: every word must appear (case-insensitive)
 * in its title, message, author, dataset ID, ops or the columns and keys its ops
 * name. `title:`, `message:`, `author:`, `op:` and `column:` narrow a word to a field.
 */
export function matchesQuery(v: VersionSummary, query: string): boolean {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) {
    return true;
  }
  const changes = v.changes ?? [];
  const fields: Record<string, string[]> = {
    title: [v.title ?? ''],
    message: [v.message ?? ''],
    author: [v.created_by ?? ''],
    op: changes.map(c => String(c.op ?? '')),
    column: changes.flatMap(c => changeWords(c).filter((_, i, all) => all[i] !== c.op))
  };
  const any = [...Object.values(fields).flat(), v.dataset_id];
  return words.every(word => {
    const colon = word.indexOf(':');
    const field = colon > 0 ? word.slice(0, colon) : '';
    const text = field in fields ? word.slice(colon + 1) : word;
    const haystack = field in fields ? fields[field] : any;
    return haystack.some(s => s.toLowerCase().includes(text));
  });
}

function nodeMatches(n: TreeNode, query: string, summary: VersionSummary | undefined): boolean {
  if (summary) {
    return matchesQuery(summary, query);
  }
  return matchesQuery(
    // a version on another branch: its ops come with the tree, so its columns and ops match too
    { ...n, message: null, app: null, changes: n.changes ?? [], n_files: 0, n_deleted: 0 } as VersionSummary,
    query
  );
}

// ---------------------------------------------------------------- the graph

export type TreeViewOptions = {
  /** A node of the opened chain was chosen: select it in the history. */
  selectDepth(depth: number): void;
  /** A node off the opened chain was chosen: open its version. */
  open(node: TreeNode): void;
  /** Whose instant relative times are drawn from (the page's by default). */
  clock?: Clock;
  /**
   * Open on a double-click (or Enter) only, a click just moves to the row: a list to browse
   * (the Versions sidebar), where a click that opened a tab would be too eager.
   */
  openOnDoubleClick?: boolean;
  /** Mark the top of each line (a version nothing was saved on yet): the sidebar has no opened version. */
  markTops?: boolean;
  /** The listbox's name. */
  label?: string;
  /** Told the rows' whole height when a long title wrapped a row taller (the sidebar sizes each group to its rows). */
  onHeight?: (height: number) => void;
};

/** The graph: a virtual listbox of nodes, the opened chain highlighted. */
export class TreeView {
  readonly node: HTMLElement;
  private readonly list: VirtualList;
  private rows: GraphRow[] = [];
  private all: GraphRow[] = [];
  private lanes = 1;
  private chain = new Map<string, number>();
  private newer = new Set<string>();
  private fresh = new Set<string>();
  private current: string | null = null;
  private active = -1;
  private query = '';
  private summaries = new Map<string, VersionSummary>();
  private selected: string | null = null;
  private tops = new Set<string>();
  private readonly clock: Clock;
  private readonly untick: () => void;

  constructor(private readonly opts: TreeViewOptions) {
    this.clock = opts.clock ?? pageClock();
    this.node = h('div', {
      class: 'sds-tree',
      role: 'listbox',
      tabindex: 0,
      'aria-label': opts.label ?? 'Versions on this base, as a tree'
    });
    this.list = new VirtualList(this.node, {
      rowHeight: TREE_ROW_HEIGHT,
      renderRow: i => this.renderRow(i),
      fallbackHeight: 200,
      onHeight: height => this.opts.onHeight?.(height),
      idPrefix: 'sds-tree'
    });
    this.node.addEventListener('click', this.onClick);
    this.node.addEventListener('dblclick', this.onDoubleClick);
    this.node.addEventListener('keydown', this.onKey);
    // relative times age: redrawn with the history when the shared clock moves, so both agree
    this.untick = this.clock.onTick(() => this.list.refresh());
  }

  dispose(): void {
    this.untick();
    this.list.dispose();
    this.node.removeEventListener('click', this.onClick);
    this.node.removeEventListener('dblclick', this.onDoubleClick);
    this.node.removeEventListener('keydown', this.onKey);
  }

  /** Draw `tree`; `history` says which nodes are the opened chain (and their depths). */
  setTree(tree: Tree, history: History, fresh: Set<string> = new Set()): void {
    this.current = tree.current;
    this.fresh = fresh;
    this.summaries = new Map((history.versions ?? []).map(v => [v.dataset_id, v]));
    this.chain = new Map((history.versions ?? []).map(v => [v.dataset_id, v.depth]));
    this.newer = descendants(tree.nodes, tree.current);
    this.tops = this.opts.markTops ? tops(tree.nodes) : new Set();
    this.all = layoutGraph(topoOrder(tree.nodes), new Set(this.chain.keys()));
    this.lanes = Math.max(1, ...this.all.map(r => Math.max(r.lane + 1, r.above.length, r.below.length)));
    this.clock.advance(); // new rows: every view reads the time again, together
    this.apply();
  }

  /**
   * Mark the version a panel shows as opened, and make it the highlighted row (null: none here).
   * The sidebar's trees follow the panel this way: the highlight moves with it to a branch or a new version.
   */
  setOpened(id: string | null): void {
    this.current = id;
    this.active = id === null ? -1 : this.rows.findIndex(r => r.node.dataset_id === id);
    this.list.refresh();
  }

  /** Mark the version selected in the history (its dataset ID; null: none). */
  setSelected(id: string | null): void {
    if (id !== this.selected) {
      this.selected = id;
      this.list.refresh();
    }
  }

  setFilter(query: string): void {
    this.query = query.trim();
    this.apply();
  }

  /** How many nodes are shown (after the filter). */
  count(): number {
    return this.rows.length;
  }

  /** The shown rows' whole height (a wrapped title makes its row taller than TREE_ROW_HEIGHT). */
  height(): number {
    return this.list.totalHeight();
  }

  private apply(): void {
    const q = this.query;
    this.rows = q ? this.all.filter(r => nodeMatches(r.node, q, this.summaries.get(r.node.dataset_id))) : this.all;
    this.active = Math.min(this.active, this.rows.length - 1);
    this.node.classList.toggle('sds-tree-filtered', !!q);
    this.list.setCount(this.rows.length);
  }

  private renderRow(i: number): HTMLElement {
    const { node } = this.rows[i];
    const onChain = this.chain.has(node.dataset_id);
    const isCurrent = node.dataset_id === this.current;
    const isNewer = this.newer.has(node.dataset_id);
    const label = node.title || node.dataset_id;
    const isSelected = node.dataset_id === this.selected;
    const isTop = this.tops.has(node.dataset_id);
    const states = [
      isSelected ? 'selected' : '',
      isTop ? 'top of its line' : '',
      isCurrent ? 'opened' : onChain ? 'in the opened history' : '',
      isNewer ? 'newer than the opened version' : '',
      this.fresh.has(node.dataset_id) ? 'new' : '',
      node.not_in_cirro ? 'not yet in Cirro' : ''
    ].filter(Boolean);
    const row = h(
      'div',
      {
        class: 'sds-tree-row',
        role: 'option',
        'aria-selected': String(i === this.active),
        'aria-label': [label, ...states, node.created_by ?? ''].filter(Boolean).join(', '),
        'data-id': node.dataset_id,
        // the whole title and every tag, for a row too narrow to show them all
        title: `${label}${states.length ? `\n${states.join(', ')}` : ''}\n${node.dataset_id}${node.created_at ? `\n${exactTime(node.created_at)}` : ''}`
      },
      this.graphCell(this.rows[i]),
      // the title wraps to as many lines as it needs and the tags keep their words: a narrow
      // side shows the whole row, taller, instead of cutting the title or a tag
      h(
        'div',
        { class: 'sds-tree-text' },
        h('span', { class: 'sds-tree-title' }, label),
        isSelected ? h('span', { class: 'sds-tree-tag sds-tree-tag-selected' }, 'selected') : null,
        isCurrent ? h('span', { class: 'sds-tree-tag sds-tree-tag-current' }, 'opened') : null,
        isTop
          ? h('span', { class: 'sds-tree-tag sds-tree-tag-top', title: 'the newest version of its line: nothing saved on it yet' }, 'top')
          : null,
        isNewer ? h('span', { class: 'sds-tree-tag sds-tree-tag-newer' }, 'newer') : null,
        this.fresh.has(node.dataset_id) ? h('span', { class: 'sds-tree-tag sds-tree-tag-new' }, 'new') : null,
        node.not_in_cirro
          ? h('span', { class: 'sds-tree-tag sds-tree-tag-local', title: 'saved in this workspace only' }, 'not yet in Cirro')
          : null,
        node.created_at
          ? h('time', { class: 'sds-tree-when', datetime: node.created_at }, relativeTime(node.created_at, this.clock.now()))
          : null
      )
    );
    row.classList.toggle('sds-tree-chain', onChain);
    row.classList.toggle('sds-tree-current', isCurrent);
    row.classList.toggle('sds-tree-selected', isSelected);
    row.classList.toggle('sds-tree-newer', isNewer);
    row.classList.toggle('sds-tree-top', isTop);
    row.classList.toggle('sds-active', i === this.active);
    return row;
  }

  /**
   * The lanes of one row as SVG (lines are data-free: only coordinates). The SVG fills its row
   * whatever its height: the dot sits level with the title's first line (GRAPH_DOT_Y) and the
   * lanes run to the row's bottom ("100%"), as jupyterlab-git and GitKraken draw a commit whose
   * message takes more lines; so rows of any height join up.
   */
  private graphCell(row: GraphRow): Element {
    const filtered = !!this.query;
    const lanes = Math.min(this.lanes, MAX_LANES);
    const step = this.lanes > MAX_LANES ? (MAX_LANES * LANE_WIDTH) / this.lanes : LANE_WIDTH;
    const x = (lane: number) => step / 2 + lane * step;
    const bottom = '100%';
    const mid = GRAPH_DOT_Y;
    const ns = 'http://www.w3.org/2000/svg';
    const svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('class', 'sds-tree-graph');
    svg.setAttribute('width', String(lanes * LANE_WIDTH));
    svg.setAttribute('height', '100%');
    svg.setAttribute('aria-hidden', 'true');
    const line = (x1: number, y1: number, x2: number, y2: number | string, onChain: boolean, lane: number) => {
      const el = document.createElementNS(ns, 'line');
      el.setAttribute('x1', String(x1));
      el.setAttribute('y1', String(y1));
      el.setAttribute('x2', String(x2));
      el.setAttribute('y2', String(y2));
      el.setAttribute('class', `sds-tree-edge sds-lane-${lane % 6}${onChain ? ' sds-tree-edge-chain' : ''}`);
      svg.append(el);
    };
    const me = row.node.dataset_id;
    if (!filtered) {
      row.above.forEach((id, j) => {
        if (id === null) return;
        const chainEdge = id === me ? this.chain.has(me) && this.chainChild(j, row) : false;
        line(x(j), 0, id === me ? x(row.lane) : x(j), id === me ? mid : bottom, chainEdge, j);
      });
      row.below.forEach((id, j) => {
        if (id === null) return;
        if (j === row.lane) {
          line(x(j), mid, x(j), bottom, this.chain.has(me) && this.chain.has(id), j);
        } else if (row.above[j] !== id) {
          line(x(j), mid, x(j), bottom, false, j); // a lane opened beside this row (not drawn above)
        }
      });
    }
    const dot = document.createElementNS(ns, 'circle');
    dot.setAttribute('cx', String(x(filtered ? 0 : row.lane)));
    dot.setAttribute('cy', String(mid));
    dot.setAttribute('r', me === this.current ? '5' : '4');
    dot.setAttribute(
      'class',
      `sds-tree-dot sds-lane-${(filtered ? 0 : row.lane) % 6}${this.chain.has(me) ? ' sds-tree-dot-chain' : ''}`
    );
    svg.append(dot);
    return h('span', { class: 'sds-tree-graph-cell', style: `width: ${lanes * LANE_WIDTH}px` }, svg);
  }

  /** Whether the edge arriving in lane `j` comes from a node of the opened chain. */
  private chainChild(j: number, row: GraphRow): boolean {
    const index = this.all.indexOf(row);
    for (let i = index - 1; i >= 0; i--) {
      const r = this.all[i];
      if (r.below[j] === row.node.dataset_id && r.lane === j) {
        return this.chain.has(r.node.dataset_id);
      }
      if (r.above[j] !== row.node.dataset_id) {
        return false;
      }
    }
    return false;
  }

  private activate(i: number): void {
    const row = this.rows[i];
    if (!row) return;
    const depth = this.chain.get(row.node.dataset_id);
    if (depth !== undefined) {
      this.opts.selectDepth(depth);
    } else {
      this.opts.open(row.node);
    }
  }

  private setActive(i: number): void {
    if (!this.rows.length) return;
    this.active = Math.max(0, Math.min(this.rows.length - 1, i));
    this.list.scrollToIndex(this.active);
    for (const el of this.node.querySelectorAll<HTMLElement>('.sds-tree-row')) {
      const on = Number(el.dataset.index) === this.active;
      el.classList.toggle('sds-active', on);
      el.setAttribute('aria-selected', String(on));
      if (on) {
        this.node.setAttribute('aria-activedescendant', el.id);
      }
    }
  }

  private onClick = (event: MouseEvent): void => {
    const el = (event.target as Element).closest<HTMLElement>('.sds-tree-row');
    if (el && this.node.contains(el)) {
      this.setActive(Number(el.dataset.index));
      if (!this.opts.openOnDoubleClick) {
        this.activate(this.active);
      }
    }
  };

  private onDoubleClick = (event: MouseEvent): void => {
    const el = (event.target as Element).closest<HTMLElement>('.sds-tree-row');
    if (this.opts.openOnDoubleClick && el && this.node.contains(el)) {
      this.setActive(Number(el.dataset.index));
      this.activate(this.active);
    }
  };

  private onKey = (event: KeyboardEvent): void => {
    const moves: Record<string, number> = { ArrowDown: 1, ArrowUp: -1, PageDown: 10, PageUp: -10 };
    if (event.key in moves) {
      this.setActive((this.active < 0 ? 0 : this.active + moves[event.key]));
    } else if (event.key === 'Home') {
      this.setActive(0);
    } else if (event.key === 'End') {
      this.setActive(this.rows.length - 1);
    } else if (event.key === 'Enter' || event.key === ' ') {
      this.activate(this.active < 0 ? 0 : this.active);
    } else {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
  };
}

/** Dataset IDs of the tops: the versions no other version of `nodes` was saved on. */
export function tops(nodes: TreeNode[]): Set<string> {
  const parents = new Set(nodes.map(n => n.parent));
  return new Set(nodes.filter(n => !parents.has(n.dataset_id)).map(n => n.dataset_id));
}

/** Dataset IDs of the versions built, directly or not, on `id`. */
export function descendants(nodes: TreeNode[], id: string | null): Set<string> {
  const children = new Map<string, string[]>();
  for (const n of nodes) {
    if (n.parent !== null) {
      children.set(n.parent, [...(children.get(n.parent) ?? []), n.dataset_id]);
    }
  }
  const out = new Set<string>();
  const todo = id === null ? [] : [...(children.get(id) ?? [])];
  while (todo.length) {
    const next = todo.pop()!;
    if (!out.has(next)) {
      out.add(next);
      todo.push(...(children.get(next) ?? []));
    }
  }
  return out;
}

// ---------------------------------------------------------------- live

/** Failures of the way to the service, not answers from it: the live poll asks again at the next tick. */
const TRANSIENT: ReadonlySet<FailureKind> = new Set<FailureKind>(['network', 'timeout']);

/** Whether `err` is worth asking again (the way to the service failed), not the service's answer. */
function isTransient(err: unknown): boolean {
  return TRANSIENT.has(TransportError.from(err).kind);
}

/**
 * Asks for the datasets folder's fingerprint every few seconds while `visible()`,
 * and at once when the window gets the focus back or the view is shown again (a
 * panel's tab chosen after saving from a notebook); calls `changed` when it moves.
 */
export class LivePoller {
  private timer: ReturnType<typeof setInterval> | undefined;
  private last: string | null = null;
  private busy = false;
  private shown: ResizeObserver | undefined;
  private wasVisible = false;

  constructor(
    private readonly transport: Transport,
    private readonly visible: () => boolean,
    private readonly changed: () => void,
    private readonly interval = POLL_INTERVAL
  ) {}

  /** Whether the poll is on (it stops itself on a failed poll). */
  get running(): boolean {
    return this.timer !== undefined;
  }

  start(): void {
    this.stop();
    this.timer = setInterval(() => void this.poll(), this.interval);
    window.addEventListener('focus', this.onFocus);
    document.addEventListener('visibilitychange', this.onFocus);
  }

  /** Poll as soon as `node` goes from hidden (a tab behind another) to shown. */
  observe(node: HTMLElement): void {
    if (typeof ResizeObserver === 'undefined') {
      return;
    }
    this.shown?.disconnect();
    this.wasVisible = this.visible();
    this.shown = new ResizeObserver(() => {
      const visible = this.visible();
      if (visible && !this.wasVisible) {
        void this.poll();
      }
      this.wasVisible = visible;
    });
    this.shown.observe(node);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.shown?.disconnect();
    this.shown = undefined;
    window.removeEventListener('focus', this.onFocus);
    document.removeEventListener('visibilitychange', this.onFocus);
  }

  /** Start from this fingerprint (the one the view shows). */
  reset(fingerprint: string | null): void {
    this.last = fingerprint;
  }

  async poll(force = false): Promise<void> {
    if (this.busy || (!force && (document.visibilityState === 'hidden' || !this.visible()))) {
      return;
    }
    this.busy = true;
    try {
      const { data } = await this.transport.request('fingerprint', {});
      const moved = this.last !== null && data.fingerprint !== this.last;
      this.last = data.fingerprint;
      if (moved) {
        this.changed();
      }
    } catch (err) {
      // a folder that cannot be read answers the same error every tick: stop asking (a refresh
      // that reads it again starts the poll anew); a server or kernel briefly away is asked again
      if (!isTransient(err)) {
        this.stop();
      }
    } finally {
      this.busy = false;
    }
  }

  private onFocus = (): void => {
    void this.poll();
  };
}

// ---------------------------------------------------------------- the section

export type TreeSectionOptions = {
  selectDepth(depth: number): void;
  /** Open another version of the datasets folder (its folder as the tree names it). */
  openVersion?: (folder: string) => Promise<void>;
  /** Fetch the missing dataset from Cirro (the host knows how); offered on the "missing" row. */
  fetchMissing?: (datasetId: string) => Promise<void>;
  /** The history search changed. */
  onFilter(match: ((v: VersionSummary) => boolean) | null): void;
  /** Every tree reply (the versions on this base, across branches). */
  onTree?: (tree: Tree) => void;
  clock?: Clock;
};

/** Search, "N new versions", the graph and the missing-dataset row, around the history. */
export class TreeSection {
  /** Goes above the history list. */
  readonly node: HTMLElement;
  /** Goes below the history list: the break of a broken chain. */
  readonly missing: HTMLElement;
  private readonly search: HTMLInputElement;
  private readonly newButton: HTMLButtonElement;
  private readonly status: HTMLElement;
  private readonly noMatches: HTMLElement;
  private readonly summary: HTMLElement;
  private readonly view: TreeView;
  private readonly poller: LivePoller;
  private history: History | null = null;
  private known: Set<string> | null = null;
  private fresh: TreeNode[] = [];
  private token = 0;
  /** The last tree's notes: what the status line says whenever nothing more pressing is shown. */
  private notes: string[] = [];

  constructor(
    private readonly transport: Transport,
    private readonly opts: TreeSectionOptions
  ) {
    this.view = new TreeView({
      selectDepth: d => opts.selectDepth(d),
      open: n => void this.open(n),
      clock: opts.clock
    });
    this.search = h('input', {
      class: 'sds-search',
      type: 'search',
      placeholder: 'Search title, message, author, op, column',
      'aria-label': 'Search the versions by title, message, author, op or column',
      oninput: () => this.onSearch()
    }) as HTMLInputElement;
    this.newButton = h('button', {
      class: 'sds-button sds-new-versions',
      type: 'button',
      hidden: true,
      onclick: () => void this.openNewest()
    }) as HTMLButtonElement;
    this.status = h('span', { class: 'sds-tree-status', role: 'status' });
    this.noMatches = h('div', { class: 'sds-empty sds-no-matches', role: 'status', hidden: true });
    this.summary = h('summary', { class: 'sds-tree-summary' }, 'Tree');
    this.node = h(
      'div',
      { class: 'sds-tree-section' },
      h('div', { class: 'sds-tree-bar' }, this.search, this.newButton),
      this.status,
      this.noMatches,
      h('details', { class: 'sds-tree-details', open: true }, this.summary, this.view.node)
    );
    this.missing = h('div', { class: 'sds-missing-row', role: 'note', hidden: true });
    this.poller = new LivePoller(
      transport,
      () => this.node.isConnected && this.node.getClientRects().length > 0,
      () => void this.load(true)
    );
    this.poller.start();
    this.poller.observe(this.node);
  }

  dispose(): void {
    this.poller.stop();
    this.view.dispose();
  }

  /** A new history arrived (opened, refreshed or moved): redraw the tree and the break. */
  setHistory(history: History): void {
    this.history = history;
    const id = history.error?.dataset_id;
    this.missing.hidden = !id;
    this.missing.replaceChildren(
      id ? `Dataset ${datasetName(history.error)} below these versions is missing: add it to the workspace to read their data` : ''
    );
    if (id && this.opts.fetchMissing) {
      this.missing.append(
        ' or ',
        h(
          'button',
          {
            class: 'sds-button sds-fetch-missing',
            type: 'button',
            title: 'Download it from Cirro into the fetch folder (never into the mounted datasets)',
            onclick: (e: Event) => void this.fetch(id, e.currentTarget as HTMLButtonElement)
          },
          'Fetch from Cirro'
        )
      );
    }
    if (unreadable(history)) {
      // nothing here is a readable version: the banner says why; nothing to poll or list
      this.poller.stop();
      this.notes = [];
      this.status.textContent = '';
      return;
    }
    if (!this.poller.running) {
      this.poller.start();
      this.poller.observe(this.node);
    }
    void this.load(false);
  }

  /** Ask the host to fetch the missing dataset (it asks which project, shows progress and any failure). */
  private async fetch(id: string, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    try {
      await this.opts.fetchMissing!(id);
    } catch (err) {
      const message = TransportError.from(err).message;
      this.missing.append(h('span', { class: 'sds-fetch-error', role: 'alert' }, ` ${message}`));
    } finally {
      button.disabled = false;
    }
  }

  /** Read the tree; on a poll, the nodes not seen before are the new versions. */
  async load(fromPoll: boolean): Promise<void> {
    const token = ++this.token;
    try {
      const [{ data: tree }, { data: print }] = await Promise.all([
        this.transport.request('tree', {}),
        this.transport.request('fingerprint', {})
      ]);
      if (token !== this.token || !this.history) {
        return;
      }
      this.poller.reset(print.fingerprint);
      const ids = tree.nodes.map(n => n.dataset_id);
      if (!fromPoll || this.known === null) {
        this.known = new Set(ids);
        this.fresh = [];
      } else {
        const seen = new Set(this.fresh.map(n => n.dataset_id));
        for (const n of tree.nodes) {
          if (!this.known.has(n.dataset_id) && !seen.has(n.dataset_id)) {
            this.fresh.push(n);
          }
        }
        this.fresh = this.fresh.filter(n => ids.includes(n.dataset_id));
      }
      this.view.setTree(tree, this.history, new Set(this.fresh.map(n => n.dataset_id)));
      this.opts.onTree?.(tree);
      this.view.setFilter(this.search.value);
      this.sayMatches();
      const n = this.fresh.length;
      this.newButton.hidden = n === 0 || !this.opts.openVersion;
      this.newButton.textContent = `${n} new version${n === 1 ? '' : 's'}`;
      this.newButton.title = n ? `Open ${this.fresh[0].title || this.fresh[0].dataset_id}` : '';
      const where = this.history.error?.dataset_id ? `above the missing dataset` : 'on this base';
      this.summary.textContent = `Tree: ${tree.nodes.length} version${tree.nodes.length === 1 ? '' : 's'} ${where}`;
      this.notes = tree.notes;
      this.sayLeftOut();
    } catch (err) {
      if (token === this.token) {
        if (!isTransient(err)) {
          this.poller.stop(); // the same request would fail again every tick
        }
        const e = TransportError.from(err);
        // the history's banner already says why the stack cannot be read: say it once
        this.status.textContent = e.message === this.history?.error?.message ? '' : `Tree unavailable: ${e.message}`;
      }
    }
  }

  /** The status line names the folders the last tree left out (the reasons in its tooltip). */
  private sayLeftOut(): void {
    this.status.textContent = leftOut(this.notes);
    this.status.title = this.notes.join('\n');
  }

  /** The version selected in the history (its depth in the opened chain). */
  setSelected(depth: number | null): void {
    const v = this.history?.versions.find(x => x.depth === depth);
    this.view.setSelected(v?.dataset_id ?? null);
  }

  private onSearch(): void {
    const q = this.search.value.trim();
    this.view.setFilter(q);
    this.opts.onFilter(q ? v => matchesQuery(v, q) : null);
    this.sayMatches();
  }

  /** A search that matches nothing says so (else the tree and history just go blank). */
  private sayMatches(): void {
    const q = this.search.value.trim();
    const none = !!q && this.view.count() === 0;
    this.noMatches.hidden = !none;
    this.noMatches.textContent = none ? `No matches for “${q}”` : '';
  }

  private async openNewest(): Promise<void> {
    const target = [...this.fresh].sort((a, b) => (b.created_at ?? '').localeCompare(a.created_at ?? '') || b.depth - a.depth)[0];
    if (target) {
      await this.open(target);
    }
  }

  private async open(node: TreeNode): Promise<void> {
    if (!this.opts.openVersion) {
      this.status.textContent = `Open ${node.folder} to browse ${node.title || node.dataset_id}.`;
      return;
    }
    this.status.textContent = `Opening ${node.title || node.dataset_id}…`;
    try {
      this.known = null; // the opened version moves: everything shown is known again
      this.fresh = [];
      await this.opts.openVersion(node.folder);
      // the new version's tree may have loaded while it opened: its line stands, not a blank
      this.sayLeftOut();
    } catch (err) {
      this.status.textContent = TransportError.from(err).message;
    }
  }
}

/**
 * The folders the tree left out, by name, in one line ("Left out of the tree: a, b"); the
 * reasons are the line's tooltip. A note that names no folder is counted instead.
 */
export function leftOut(notes: string[]): string {
  if (!notes.length) {
    return '';
  }
  const names = notes.map(n => /^skipped '([^'\\]*)'/.exec(n)?.[1]);
  if (names.every(n => n !== undefined)) {
    return `Left out of the tree: ${names.join(', ')}`;
  }
  return `${notes.length} folder${notes.length === 1 ? '' : 's'} left out of the tree`;
}
