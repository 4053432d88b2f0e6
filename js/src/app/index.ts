/**
 * The version browser: history on one side, the selected version's changes,
 * figures and results (and a comparison of two versions) on the other.
 * It talks only to a `Transport`; the widget and the JupyterLab panel each bring one.
 */

import { ChangesView } from './changes/changes';
import { vegaRenderer, type ChartRenderer } from './shared/chart';
import { CompareView } from './compare/compare';
import { Clock, pageClock } from './shared/clock';
import { divider } from './shared/divider';
import { ContentsView } from './changes/contents';
import { empty, errorBox, fill, h, loading } from './shared/dom';
import { FiguresView } from './figures/figures';
import { HistoryView, ROW_HEIGHT as HISTORY_ROW_HEIGHT, unreadable } from './history/history';
import { datasetName, plural } from './shared/format';
import { ResultsView, resultCodeFor } from './results/results';
import { tabKeyTarget } from './shared/tabs';
import { TREE_ROW_HEIGHT, TreeSection } from './history/tree';
import { TransportError, pinned, type Transport } from './shared/transport';
import { CirroBox } from './history/cirro';
import type { History, Tree } from './shared/types';
import type { CellSelection } from './figures/spatialfigure';

export * from './shared/types';
export { unreadable } from './history/history';
export { TransportError, decodeFrame, encodeFrame } from './shared/transport';
export type { Transport, Reply, Buffer } from './shared/transport';
export type { ChartRenderer, ChartHandle } from './shared/chart';

export type TabName = 'changes' | 'figures' | 'results' | 'compare' | 'contents';
const TABS: [TabName, string][] = [
  ['changes', 'Changes'],
  ['figures', 'Figures'],
  ['results', 'Results'],
  ['compare', 'Compare'],
  ['contents', 'Contents']
];

/** A button in the app's toolbar that acts on the selected version. */
export type AppAction = {
  id: string;
  label: string;
  title?: string;
  /** Resolves with a message to show next to the button. */
  run(version: number): Promise<string | void>;
};

/** One step of the way back: a version left (its folder, as the tree names it) and its label. */
export type BackStep = { folder: string; label: string };

export type AppOptions = {
  actions?: AppAction[];
  /** Called when the selected version changes (its depth). */
  onSelect?: (depth: number) => void;
  /** Called with every history reply (e.g. to title a panel). */
  onHistory?: (history: History) => void;
  /** Draws Vega-Lite specs; vega-embed by default. */
  renderChart?: ChartRenderer;
  /** The clock for relative times (tests). */
  now?: () => number;
  initialTab?: TabName;
  /** The path Python opens this stack by, for the results' "Copy code" line (a getter when it can change). */
  path?: string | (() => string);
  /** Closes the host (a panel): offered when the stack cannot be read at all. */
  onClose?: () => void;
  /** Move the view to another version (a folder named by the `tree` request); the app then refreshes. */
  openVersion?: (folder: string) => Promise<void>;
  /** Told the cells inside the regions drawn on a spatial view whenever they change. */
  onCellSelection?: (selection: CellSelection) => void;
  /** The way back to restore (a reload): the versions left, oldest first. */
  trail?: BackStep[];
  /** Told the way back whenever it changes, so a host can keep it across a reload. */
  onTrail?: (trail: BackStep[]) => void;
  /** Offer Cirro's upload and fetch (a host whose server cannot reach Cirro says false); on by default. */
  cirro?: boolean;
};

/** A done message ("Refreshed") clears itself after this long; errors stay. */
export const ACTION_MESSAGE_MS = 4000;

let appIds = 0;

export type AppHandle = {
  dispose(): void;
  /** Reload the history (keeps the selection when it still exists). */
  refresh(): Promise<void>;
  /** Select a version by depth. */
  select(depth: number): void;
  /** Show a message next to the action buttons (what the host just did). */
  say(message: string): void;
  /** Mark the version the host has bound (its depth and the name it is bound to); null clears. */
  markBound(bound: { depth: number; label: string } | null): void;
  showTab(tab: TabName): void;
  readonly root: HTMLElement;
};

export function mountApp(el: HTMLElement, transport: Transport, options: AppOptions = {}): AppHandle {
  // relative times in every view come from one clock (the page's; tests pass a fixed source)
  const clock = options.now ? new Clock(options.now) : pageClock();
  const renderChart = options.renderChart ?? vegaRenderer;
  let history: History | null = null;
  let selected: number | null = null;
  /** The dataset ID of the version the panel has open (its top); undefined before the first history. */
  let openedTop: string | null | undefined;
  /** No history shown yet: the next one picks the tab a version opens on. */
  let first = true;
  let tab: TabName = options.initialTab ?? 'changes';
  const loaded: Partial<Record<TabName, number>> = {};

  // The views ask the stack whose history they show, through `asked` (the transport held to that
  // stack). A move points `transport` at another folder before that folder's history is read;
  // until it is, the views still show the stack left, with its depths, and keep asking it: a tile
  // or a poll of version 4 is never put to a new stack that has depths 0 to 3. Their requests
  // follow the panel when its new history is shown (refresh, below).
  let asked: Transport = pinned(transport);
  const stackTransport: Transport = {
    request: (name, params) => asked.request(name, params),
    pin: () => asked
  };
  /** Counts the history requests: a reply to one a newer one followed (the panel moved again) is dropped. */
  let refreshes = 0;

  const changes = new ChangesView(stackTransport);
  const figures = new FiguresView(stackTransport, renderChart);
  // a saved annotation is a new version: open it (kernel-less, the panel moves there) or show it in the tree
  figures.onSelection = selection => options.onCellSelection?.(selection);
  figures.onAnnotated = async saved => {
    if (options.openVersion) {
      await options.openVersion(saved.folder);
    }
    await refresh();
  };
  const results = new ResultsView(stackTransport, renderChart, clock.now, resultCodeFor(options.path));
  const compare = new CompareView(stackTransport, renderChart);
  const contents = new ContentsView(stackTransport);
  const views: Record<TabName, { node: HTMLElement }> = { changes, figures, results, compare, contents };
  const historyView = new HistoryView(depth => onSelect(depth), clock);
  const treeSection = new TreeSection(stackTransport, {
    selectDepth: depth => historyView.selectDepth(depth),
    openVersion: options.openVersion ? folder => moveTo(folder, true) : undefined,
    fetchMissing:
      options.cirro === false
        ? undefined
        : async id => cirroBox.open({ kind: 'fetch', datasetId: id, label: datasetName(history?.error, id) }),
    onFilter: match => historyView.setFilter(match),
    onTree: tree => {
      lastTree = tree;
      showUpload();
      const opened = tree.nodes.find(n => n.dataset_id === tree.current);
      if (opened) {
        here = { folder: opened.folder, label: opened.title || opened.dataset_id };
      }
      const chain = new Set((history?.versions ?? []).map(v => v.dataset_id));
      compare.setBranches(
        tree.nodes
          .filter(n => !chain.has(n.dataset_id))
          .map(n => ({ id: n.dataset_id, label: `${n.title || n.dataset_id} (branch, v${n.depth})` }))
      );
    },
    clock
  });

  // Cirro: an upload offered for a selected version saved here only, a fetch on the missing row
  const cirroBox = new CirroBox(stackTransport, { done: () => refresh() });
  let lastTree: Tree | null = null;
  const uploadButton = h('button', {
    class: 'sds-button sds-upload-cirro',
    type: 'button',
    hidden: true,
    title: 'Make a Cirro dataset of the selected version (saved in this workspace only)',
    onclick: () => {
      const v = history?.versions.find(x => x.depth === selected);
      if (v) {
        void cirroBox.open({ kind: 'upload', depth: v.depth, label: v.title || v.dataset_id });
      }
    }
  }, 'Upload to Cirro…') as HTMLButtonElement;
  /** The upload button shows while the selected version is one the tree tags "not yet in Cirro". */
  function showUpload(): void {
    const id = history?.versions.find(x => x.depth === selected)?.dataset_id;
    uploadButton.hidden = options.cirro === false || !lastTree?.nodes.some(n => n.dataset_id === id && n.not_in_cirro);
  }

  const title = h('div', { class: 'sds-title' });
  // opening another version keeps the way back: one step per version left, newest last
  const trail: BackStep[] = (options.trail ?? []).filter(s => typeof s?.folder === 'string' && typeof s?.label === 'string');
  let here: { folder: string; label: string } | null = null;
  const backButton = h('button', {
    class: 'sds-button sds-back',
    type: 'button',
    hidden: true,
    onclick: () => {
      const previous = trail.pop();
      if (previous) {
        moveTo(previous.folder, false).catch(err => {
          trail.push(previous);
          actionMsg.classList.add('sds-action-error');
          actionMsg.textContent = TransportError.from(err).message;
        });
      }
    }
  }) as HTMLButtonElement;
  const banner = h('div', { class: 'sds-banner' });
  const actionMsg = h('span', { class: 'sds-action-msg', role: 'status' });
  const actionBar = h(
    'div',
    { class: 'sds-actions' },
    (options.actions ?? []).map(a =>
      h(
        'button',
        {
          class: 'sds-button sds-action',
          type: 'button',
          title: a.title ?? a.label,
          'data-action': a.id,
          onclick: () => void runAction(a)
        },
        a.label
      )
    ),
    uploadButton,
    actionMsg
  );
  // WAI-ARIA tabs: one Tab stop (the selected tab), arrows/Home/End move and select
  const uid = `sds-app-${++appIds}`;
  const tabButtons = TABS.map(([name, label]) =>
    h(
      'button',
      {
        class: 'sds-tab',
        type: 'button',
        role: 'tab',
        id: `${uid}-tab-${name}`,
        'aria-controls': `${uid}-panel`,
        tabindex: '-1',
        'data-tab': name,
        onclick: () => showTab(name)
      },
      label
    )
  );
  const tablist = h('div', { class: 'sds-tabs', role: 'tablist', 'aria-label': 'Views of the selected version' }, tabButtons);
  tablist.addEventListener('keydown', e => {
    const next = tabKeyTarget(e.key, tabButtons.indexOf(e.target as HTMLButtonElement), tabButtons.length);
    if (next !== null) {
      e.preventDefault();
      showTab(tabButtons[next].dataset.tab as TabName);
      tabButtons[next].focus();
    }
  });
  // the panel scrolls: it takes focus so the keyboard can scroll it
  const panels = h('div', { class: 'sds-panels', role: 'tabpanel', id: `${uid}-panel`, tabindex: '0' });
  const sideStatus = h('div', { class: 'sds-side-status' });
  const side = h(
    'div',
    { class: 'sds-side', id: `${uid}-side` },
    treeSection.node,
    sideStatus,
    historyView.node,
    treeSection.missing
  );
  // a narrow panel stacks the tree and history above the views: they fold away to give the figure the room
  const sideToggle = h(
    'button',
    {
      class: 'sds-button sds-side-toggle',
      type: 'button',
      'aria-expanded': 'true',
      'aria-controls': `${uid}-side`,
      onclick: () => foldSide(sideToggle.getAttribute('aria-expanded') === 'true')
    },
    'Hide versions'
  ) as HTMLButtonElement;
  function foldSide(fold: boolean): void {
    main.classList.toggle('sds-side-folded', fold);
    sideToggle.setAttribute('aria-expanded', String(!fold));
    sideToggle.textContent = fold ? 'Show versions' : 'Hide versions';
  }
  const detail = h(
    'div',
    { class: 'sds-detail' },
    tablist,
    panels
  );
  const main = h('div', { class: 'sds-main' }, side);
  const root = h(
    'div',
    { class: 'sds-app' },
    h('div', { class: 'sds-header' }, backButton, title, sideToggle, actionBar),
    cirroBox.node,
    banner,
    main
  );
  const split = divider(root, main, side);
  const sideHeight = followHeight(side, '--sds-side-height');
  side.style.setProperty('--sds-history-kept', `${KEPT_ROWS * HISTORY_ROW_HEIGHT}px`);
  side.style.setProperty('--sds-tree-least', `${KEPT_ROWS * TREE_ROW_HEIGHT + 2}px`);
  main.append(split.node, detail);
  el.append(root);
  showBack(); // a restored way back shows at once

  let actionTimer: ReturnType<typeof setTimeout> | undefined;

  async function runAction(a: AppAction): Promise<void> {
    if (selected === null) {
      // a folder that is no readable version has nothing to select: say why, not "select"
      const why = unreadable(history);
      actionMsg.classList.toggle('sds-action-error', why !== null);
      actionMsg.textContent = why ?? 'Select a version first.';
      return;
    }
    clearTimeout(actionTimer);
    actionMsg.classList.remove('sds-action-error');
    actionMsg.textContent = `${a.label}…`;
    try {
      const msg = (await a.run(selected)) || `${a.label}: done`;
      actionMsg.textContent = msg;
      actionTimer = setTimeout(() => {
        if (actionMsg.textContent === msg) {
          actionMsg.textContent = '';
        }
      }, ACTION_MESSAGE_MS);
    } catch (err) {
      actionMsg.classList.add('sds-action-error');
      actionMsg.textContent = TransportError.from(err).message;
    }
  }

  /** Open the version at `folder` (a tree folder) in this view; `keep`: remember the one left for Back. */
  async function moveTo(folder: string, keep: boolean): Promise<void> {
    const from = here;
    await options.openVersion!(folder);
    if (keep && from && from.folder !== folder) {
      trail.push(from);
    }
    here = null; // named again by the next tree reply
    showBack();
    options.onTrail?.([...trail]);
    await refresh();
  }

  function showBack(): void {
    const back = trail[trail.length - 1];
    backButton.hidden = !back;
    backButton.textContent = back ? `← Back to ${back.label}` : '';
    backButton.title = back ? `Open ${back.label} again (${back.folder})` : '';
  }

  function showTab(name: TabName): void {
    tab = name;
    for (const b of tabButtons) {
      const on = b.dataset.tab === name;
      b.classList.toggle('sds-active', on);
      b.setAttribute('aria-selected', String(on));
      b.tabIndex = on ? 0 : -1;
      if (on) {
        panels.setAttribute('aria-labelledby', b.id);
      }
    }
    fill(panels, views[name].node);
    loadTab();
  }

  function loadTab(): void {
    if (tab === 'compare') {
      if (history) {
        compare.ensure();
      }
      return;
    }
    if (selected === null || !history) {
      return;
    }
    if (loaded[tab] === selected) {
      return;
    }
    loaded[tab] = selected;
    if (tab === 'changes') {
      if (selected === 0 && history.base) {
        changes.showBase(history.base);
      } else {
        void changes.show(selected);
      }
    } else if (tab === 'figures') {
      void figures.show(selected, labelOf(history, selected), ownFigure(history, selected), versionKey(history, selected));
    } else if (tab === 'results') {
      void results.show(selected);
    } else if (tab === 'contents') {
      void contents.show(selected);
    }
  }

  function onSelect(depth: number): void {
    selected = depth;
    root.dataset.selected = String(depth);
    compare.follow(depth);
    treeSection.setSelected(depth);
    showUpload();
    loadTab();
    options.onSelect?.(depth);
  }

  async function refresh(): Promise<void> {
    const token = ++refreshes;
    // the folder the panel is on now, held: the views ask it once its history is shown
    const stack = pinned(transport);
    fill(sideStatus, loading('Loading history…'));
    try {
      const { data } = await stack.request('history', {});
      if (token !== refreshes) {
        return; // the panel moved again (or was refreshed) since: the newer reply is the one shown
      }
      asked = stack;
      history = data;
      // a folder that is no readable version: the banner says why in one line, nothing else does
      fill(
        sideStatus,
        !(data.versions ?? []).length && !data.base && !unreadable(data) ? empty('No versions to show.') : null
      );
      const top = [...(data.versions ?? [])].sort((a, b) => b.depth - a.depth)[0];
      fill(
        title,
        h(
          'span',
          { class: 'sds-title-text' },
          top?.title || top?.dataset_id || datasetName(data.base) || (unreadable(data) ? 'Not a readable version' : 'Version')
        ),
        h(
          'span',
          { class: 'sds-title-sub' },
          unreadable(data)
            ? ''
            : `${plural((data.versions ?? []).length, 'version')} over ${data.base ? datasetName(data.base, 'the base') : data.error?.dataset_id ? `the missing dataset ${datasetName(data.error)}` : 'the base'}`
        )
      );
      // a folder that is no readable version: that line (no code word before it) and Close; no empty
      // history, tree or tabs below it, and no action but Refresh (nothing to open in a notebook)
      const why = unreadable(data);
      main.hidden = why !== null;
      for (const b of actionBar.querySelectorAll<HTMLButtonElement>('.sds-action')) {
        b.hidden = why !== null && b.dataset.action !== 'refresh';
      }
      fill(
        banner,
        // a missing dataset below versions that were read: the missing row under the history says so
        // in plain words (with what to do); the library's message, for the command line, is not repeated
        data.error && !(data.error.kind === 'missing-dataset' && data.error.dataset_id && (data.versions ?? []).length)
          ? why !== null
            ? errorBox(why)
            : errorBox(data.error.message, data.error.kind)
          : null,
        why !== null && options.onClose
          ? h('button', { class: 'sds-button sds-close', type: 'button', onclick: () => options.onClose?.() }, 'Close')
          : null
      );
      const keep = selected;
      for (const k of Object.keys(loaded) as TabName[]) {
        delete loaded[k];
      }
      historyView.setHistory(data);
      treeSection.setHistory(data);
      const missing = data.error?.dataset_id;
      compare.setBroken(missing && !data.base ? { missing, versions: data.versions ?? [] } : null);
      compare.setChoices(
        historyView.depths().map(d => ({
          depth: d,
          label: d === 0 ? `base (${datasetName(data.base)})` : labelOf(data, d)
        }))
      );
      const depths = historyView.depths();
      selected = null;
      // one rule for what is selected: the opened version when the panel moved to another one
      // (header, history, Changes and Compare then name the same version), else the one kept
      const moved = openedTop !== undefined && (top?.dataset_id ?? null) !== openedTop;
      openedTop = top?.dataset_id ?? null;
      const target = !moved && keep !== null && depths.includes(keep) ? keep : depths[0];
      // a version opens on the figure it saved (its newest) when it has one, else on Changes
      if ((first || moved) && options.initialTab === undefined && target !== undefined) {
        const opening: TabName = ownFigure(data, target) !== null ? 'figures' : 'changes';
        if (opening !== tab) {
          showTab(opening);
        }
      }
      first = false;
      if (target !== undefined) {
        historyView.selectDepth(target);
      }
      if (tab === 'compare') {
        compare.ensure();
      }
      options.onHistory?.(data);
    } catch (err) {
      if (token !== refreshes) {
        return;
      }
      // one message, in the banner; the history side stays empty
      const e = TransportError.from(err);
      fill(sideStatus, null);
      fill(
        banner,
        errorBox(`Could not read the history: ${e.message}`, e.kind),
        options.onClose
          ? h('button', { class: 'sds-button sds-close', type: 'button', onclick: () => options.onClose?.() }, 'Close')
          : null
      );
    }
  }

  showTab(tab);
  void refresh();

  return {
    root,
    refresh,
    showTab,
    select: depth => historyView.selectDepth(depth),
    markBound: bound => historyView.setBound(bound),
    say: message => {
      actionMsg.classList.remove('sds-action-error');
      actionMsg.textContent = message;
    },
    dispose() {
      clearTimeout(actionTimer);
      split.dispose();
      sideHeight.disconnect();
      historyView.dispose();
      treeSection.dispose();
      figures.dispose();
      results.dispose();
      compare.dispose();
      if (clock !== pageClock()) {
        clock.dispose();
      }
      root.remove();
    }
  };
}

/** The newest figure version `depth` saved itself (its last set-figure op), or null. */
export function ownFigure(history: History, depth: number): string | null {
  const ops = history.versions.find(v => v.depth === depth)?.changes ?? [];
  const saved = ops.filter(c => c.op === 'set-figure' && typeof c.figure === 'string');
  return saved.length ? (saved[saved.length - 1].figure as string) : null;
}

/**
 * What names a version whatever panel or top shows it (its dataset ID; the base's path), so its
 * figure views may be kept across visits (figures/keptviews.ts); null when the history does not say.
 */
export function versionKey(history: History, depth: number): string | null {
  if (depth === 0) {
    return history.base ? `base:${history.base.dataset_id ?? ''}:${history.base.path}` : null;
  }
  const id = history.versions.find(v => v.depth === depth)?.dataset_id;
  return id ? `version:${id}` : null;
}

function labelOf(history: History, depth: number): string {
  const v = history.versions.find(x => x.depth === depth);
  return `v${depth}${v?.title ? ` ${v.title}` : ''}`;
}

/** Rows of the history a tree dragged however tall leaves below it, and of the tree it always shows (tree.css). */
const KEPT_ROWS = 2;

/**
 * Keep ``el``'s own height in its CSS variable ``name`` as it changes.
 *
 * Why: the versions side's tree is capped by it (tree.css), so a tree dragged however tall still
 * leaves the history below it its least height. Its box is a <details>, which not every browser
 * lets shrink as a flex item, so the cap is a length, not a flex rule.
 */
function followHeight(el: HTMLElement, name: string): { disconnect(): void } {
  if (typeof ResizeObserver === 'undefined') {
    return { disconnect: () => undefined };
  }
  const observer = new ResizeObserver(() => {
    const height = el.clientHeight;
    if (height > 0) {
      el.style.setProperty(name, `${height}px`);
    }
  });
  observer.observe(el);
  return observer;
}
