/**
 * The Versions sidebar: the versions of the file browser's folder by title, grouped by the
 * base their chains end on, each group drawn as the panel's tree (one `TreeView`), newest
 * first, the top of each line marked; a search over titles, columns and ops; a double-click
 * or Enter opens a version as the file browser's double-click does.
 *
 * No rule is restated here: which folders are versions is `api/versions`'s answer, which
 * versions belong together is the `tree` request's (one per group, asked of a version the
 * groups so far do not hold).
 */

import { Widget } from '@lumino/widgets';
import { Clock, pageClock } from '../app/shared/clock';
import { h } from '../app/shared/dom';
import { datasetName } from '../app/shared/format';
import { TreeView } from '../app/history/tree';
import { TransportError } from '../app/shared/transport';
import type { History, Tree, TreeNode } from '../app/shared/types';
import type { VersionEntry } from './versions';

/** Where the sidebar reads: the folder's versions, and the tree of one version (paths from the server root). */
export type SidebarSource = {
  list(dir: string): Promise<VersionEntry[]>;
  tree(version: string): Promise<Tree>;
};

/** The versions of one base (or above one missing dataset), as the tree request names them. */
export type VersionGroup = { tree: Tree; newest: string };

/** At most this many tree requests for one folder (each answers a whole group). */
export const MAX_GROUPS = 50;

/** `name` in `dir`, as the server names paths (relative to its root, no leading slash). */
export function join(dir: string, name: string): string {
  const clean = dir.replace(/^\/+|\/+$/g, '');
  return clean ? `${clean}/${name}` : name;
}

/**
 * The versions of `dir` grouped by base, the group with the newest version first. A version
 * no group holds yet asks for its tree; the nodes of that answer join the group (branches
 * included). A version whose tree cannot be read is named in `notes`, in one line each.
 */
export async function groupVersions(
  dir: string,
  source: SidebarSource
): Promise<{ groups: VersionGroup[]; notes: string[]; count: number }> {
  const entries = (await source.list(dir)).filter(e => e.unreadable === undefined);
  const held = new Set<string>();
  const shown = new Set<string>();
  const groups: VersionGroup[] = [];
  const notes: string[] = [];
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (held.has(path)) {
      continue;
    }
    if (groups.length >= MAX_GROUPS) {
      notes.push(`more than ${MAX_GROUPS} bases: the rest are not shown`);
      break;
    }
    let tree: Tree;
    try {
      tree = await source.tree(path);
    } catch (err) {
      notes.push(`${entry.title || entry.name}: ${TransportError.from(err).message}`);
      continue;
    }
    held.add(path);
    const fresh = tree.nodes.filter(n => !shown.has(n.dataset_id));
    for (const n of tree.nodes) {
      held.add(n.folder);
      shown.add(n.dataset_id);
    }
    if (fresh.length) {
      groups.push({ tree: { ...tree, current: null, nodes: fresh }, newest: newestOf(fresh) });
    }
  }
  groups.sort((a, b) => b.newest.localeCompare(a.newest));
  return { groups, notes, count: shown.size };
}

function newestOf(nodes: TreeNode[]): string {
  return nodes.reduce((m, n) => ((n.created_at ?? '') > m ? (n.created_at ?? '') : m), '');
}

/** The heading of a group: its base named as the panel names it, or the dataset missing below it. */
export function groupHeading(tree: Tree): string {
  if (tree.base) {
    return `On base ${datasetName(tree.base, tree.base.path)}`;
  }
  const bottom = [...tree.nodes].sort((a, b) => a.depth - b.depth)[0];
  return bottom?.parent ? `Above missing dataset ${tree.missing_name ?? bottom.parent}` : 'Versions';
}

const NO_HISTORY: History = { top_depth: 0, versions: [], base: null };

export type VersionsViewOptions = {
  /** Open a version (its folder from the server root). */
  open(folder: string): void;
  /** A fixed time source (tests); the page's clock otherwise. */
  now?: () => number;
};

/** The sidebar's content: a heading, the search, the groups. Plain DOM, so vitest runs it. */
export class VersionsView {
  readonly node: HTMLElement;
  private readonly where: HTMLElement;
  private readonly search: HTMLInputElement;
  private readonly status: HTMLElement;
  private readonly list: HTMLElement;
  private views: { view: TreeView; section: HTMLElement; tree: Tree }[] = [];
  /** The folder of the version the current panel shows: its row is highlighted as opened. */
  private opened: string | null = null;
  private dir: string | null = null;
  private token = 0;
  private notes: string[] = [];
  /** How many versions the groups hold. */
  private count = 0;
  /** The page's clock, or one of its own over `opts.now` (then it stops it on dispose). */
  private readonly clock: Clock;

  constructor(
    private readonly source: SidebarSource,
    private readonly opts: VersionsViewOptions
  ) {
    this.clock = opts.now ? new Clock(opts.now) : pageClock();
    this.where = h('p', { class: 'sds-sidebar-where' });
    this.search = h('input', {
      class: 'sds-sidebar-search',
      type: 'search',
      placeholder: 'Search title, column, op',
      'aria-label': 'Search the versions of this folder by title, column, op or author',
      oninput: () => this.applyFilter()
    }) as HTMLInputElement;
    this.status = h('p', { class: 'sds-sidebar-status', role: 'status' });
    this.list = h('div', { class: 'sds-sidebar-groups' });
    this.node = h(
      'div',
      { class: 'sds-sidebar' },
      h('h2', { class: 'sds-sidebar-heading' }, 'Versions'),
      this.where,
      this.search,
      this.status,
      this.list
    );
  }

  /** The folder shown (from the server root), or null before the first load. */
  get folder(): string | null {
    return this.dir;
  }

  /** Read `dir` again and draw its versions; a later call wins over one still reading. */
  async load(dir: string): Promise<void> {
    const token = ++this.token;
    this.dir = dir;
    this.where.textContent = `in ${dir || 'the server root'}`;
    this.where.title = dir || '/';
    this.status.textContent = 'Reading the versions…';
    let answer: Awaited<ReturnType<typeof groupVersions>>;
    try {
      answer = await groupVersions(dir, this.source);
    } catch (err) {
      if (token === this.token) {
        this.clear();
        this.status.textContent = `Versions unavailable: ${TransportError.from(err).message}`;
      }
      return;
    }
    if (token !== this.token) {
      return;
    }
    this.clear();
    answer.groups.forEach((group, i) => this.addGroup(group, i));
    this.notes = answer.notes;
    this.count = answer.count;
    this.applyFilter();
  }

  dispose(): void {
    this.token++;
    this.clear();
    if (this.clock !== pageClock()) {
      this.clock.dispose();
    }
  }

  private clear(): void {
    for (const { view } of this.views) {
      view.dispose();
    }
    this.views = [];
    this.list.replaceChildren();
  }

  private addGroup(group: VersionGroup, i: number): void {
    const id = `sds-sidebar-group-${++groupIds}`;
    const heading = h('h3', { class: 'sds-sidebar-group-heading', id }, groupHeading(group.tree));
    if (group.tree.base) {
      heading.title = group.tree.base.path;
    }
    const view = new TreeView({
      selectDepth: () => undefined,
      open: node => this.opts.open(node.folder),
      clock: this.clock,
      openOnDoubleClick: true,
      markTops: true,
      label: `${groupHeading(group.tree)}: versions, newest first`,
      // a title wrapped to more lines makes its row taller: the group grows with it
      onHeight: height => {
        view.node.style.height = `${height}px`;
      }
    });
    view.setTree(group.tree, NO_HISTORY);
    const section = h('section', { class: 'sds-sidebar-group', 'data-group': String(i), 'aria-labelledby': id }, heading, view.node);
    this.views.push({ view, section, tree: group.tree });
    view.setOpened(group.tree.nodes.find(n => n.folder === this.opened)?.dataset_id ?? null);
    this.list.append(section);
  }

  /** Highlight the version at `folder` (from the server root) as the one opened; the others lose it. */
  showOpened(folder: string | null): void {
    this.opened = folder;
    for (const { view, tree } of this.views) {
      view.setOpened(tree.nodes.find(n => n.folder === folder)?.dataset_id ?? null);
    }
  }

  /** Filter every group; a group with no match hides, and a search that matches nothing says so. */
  private applyFilter(): void {
    const q = this.search.value.trim();
    let shown = 0;
    for (const { view, section } of this.views) {
      view.setFilter(q);
      section.hidden = view.count() === 0;
      // each group as tall as its rows: the sidebar scrolls, not a box per group
      view.node.style.height = `${view.height()}px`;
      shown += view.count();
    }
    const lines: string[] = [];
    if (!this.count) {
      lines.push('No versions in this folder.');
    } else if (q && !shown) {
      lines.push(`No matches for “${q}”`);
    } else if (q) {
      lines.push(`${shown} of ${this.count} versions match`);
    }
    lines.push(...this.notes);
    this.status.textContent = lines.join('\n');
  }
}

let groupIds = 0;

/** Lumino's message type, named through the widget (no direct dependency on @lumino/messaging). */
type Message = Parameters<Widget['processMessage']>[0];

/**
 * The sidebar as a JupyterLab left-area widget. It reads only while shown: a hidden sidebar
 * asks nothing, and reads the folder the file browser shows when it is opened.
 */
export class VersionsSidebar extends Widget {
  readonly view: VersionsView;
  private wanted: string | null = null;

  /**
   * `here`: the folder the file browser shows now (from the server root). Shown, the sidebar reads
   * it there and then rather than trusting the last `follow`: under load a path change can reach
   * the browser's breadcrumbs before, or without, the signal that carries it here.
   */
  constructor(
    source: SidebarSource,
    opts: VersionsViewOptions,
    private readonly here: () => string | null = () => null
  ) {
    super();
    this.id = 'sds-versions-sidebar';
    this.addClass('sds-sidebar-panel');
    this.title.caption = 'Versions of this folder';
    this.view = new VersionsView(source, opts);
    this.node.append(this.view.node);
  }

  /** The file browser moved to `dir` (or refreshed it): read it now if shown, else when shown. */
  follow(dir: string, force = false): void {
    const moved = dir !== this.wanted;
    this.wanted = dir;
    if (this.isVisible && (moved || force || this.view.folder !== dir)) {
      void this.view.load(dir);
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.wanted = this.here() ?? this.wanted;
    if (this.wanted !== null && this.view.folder !== this.wanted) {
      void this.view.load(this.wanted);
    }
  }

  dispose(): void {
    if (!this.isDisposed) {
      this.view.dispose();
    }
    super.dispose();
  }
}
