/**
 * Issue 29, first contact and navigation: a folder that is no version says so in one
 * line and nothing keeps asking it; the selected version is the one every view shows.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { mountApp, unreadable, type AppHandle } from '../app';
import { rowValue } from '../app/shared/format';
import { LivePoller } from '../app/history/tree';
import { markVersions } from '../lab/decorate';
import { VersionDetector } from '../lab/versions';
import { TransportError } from '../app/shared/transport';
import type { History } from '../app/shared/types';
import { FakeTransport, NOW, fakeCharts, history, settle, version } from './fixtures';

let app: AppHandle | null = null;
afterEach(() => {
  app?.dispose();
  app = null;
  document.body.replaceChildren();
});

function mount(t: FakeTransport, extra: Parameters<typeof mountApp>[2] = {}): HTMLElement {
  const el = document.createElement('div');
  document.body.append(el);
  app = mountApp(el, t, { now: () => NOW, renderChart: fakeCharts().render, ...extra });
  return el;
}

const NOT_A_VERSION: History = {
  top_depth: 0,
  versions: [],
  base: null,
  error: { kind: 'stack', message: 'plain holds no layer.json and is not a Zarr store; give a version folder' }
};
const CORRUPT: History = {
  top_depth: 0,
  versions: [],
  base: null,
  error: { kind: 'manifest', message: 'corrupt/layer.json is not valid JSON; re-download the version' }
};

function failing(t: FakeTransport, history: History): FakeTransport {
  const fail = () => {
    throw new TransportError(history.error!.kind, history.error!.message);
  };
  return t.on('history', () => history).on('tree', fail).on('fingerprint', fail);
}

describe('a folder that is not a readable version (item 4)', () => {
  it('says so in one line, offers Close, and neither lists nor polls it', async () => {
    const t = failing(new FakeTransport(), NOT_A_VERSION);
    const closed = vi.fn();
    const el = mount(t, {
      onClose: closed,
      actions: [
        { id: 'open-in-notebook', label: 'Open in notebook', run: async () => 'ran' },
        { id: 'refresh', label: 'Refresh', run: async () => 'refreshed' }
      ]
    });
    await settle();
    const banner = el.querySelector('.sds-banner')!;
    // the one line, in plain words: no code word ("stack") before it
    expect(banner.querySelector('.sds-error-kind')).toBeNull();
    expect(banner.textContent).toMatch(/^This folder is not a version: plain holds no layer\.json/);
    // nothing empty below it (no search, tree or tabs), and no action but Refresh
    expect(el.querySelector<HTMLElement>('.sds-main')!.hidden).toBe(true);
    expect(el.querySelector<HTMLButtonElement>('[data-action="open-in-notebook"]')!.hidden).toBe(true);
    expect(el.querySelector<HTMLButtonElement>('[data-action="refresh"]')!.hidden).toBe(false);
    expect(el.querySelector('.sds-title-text')!.textContent).toBe('Not a readable version');
    // said once: no second "No versions to show" beside the banner
    expect(el.querySelector('.sds-side-status')!.textContent).toBe('');
    expect(t.callsOf('tree')).toHaveLength(0);
    expect(t.callsOf('fingerprint')).toHaveLength(0);
    // the action says why, not "Select a version first"
    el.querySelector<HTMLButtonElement>('[data-action="open-in-notebook"]')!.click();
    await settle();
    expect(el.querySelector('.sds-action-msg')!.textContent).toContain('This folder is not a version');
    el.querySelector<HTMLButtonElement>('.sds-banner .sds-close')!.click();
    expect(closed).toHaveBeenCalledTimes(1);
  });

  it('names a corrupt layer.json as such', async () => {
    const t = failing(new FakeTransport(), CORRUPT);
    const el = mount(t);
    await settle();
    expect(el.querySelector('.sds-banner')!.textContent).toMatch(
      /^This version's layer\.json cannot be read: corrupt\/layer\.json is not valid JSON/
    );
    expect(el.querySelector<HTMLElement>('.sds-main')!.hidden).toBe(true);
    expect(unreadable(CORRUPT)).not.toBeNull();
    expect(unreadable({ ...CORRUPT, versions: [], base: { depth: 0, dataset_id: 'b', path: 'b', kind: 'folder', zarr_format: 3 } })).toBeNull();
  });
});

describe('the live poll stops on an error (item 4)', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('asks once, fails, and asks no more at the next ticks', async () => {
    const t = new FakeTransport().on('fingerprint', () => {
      throw new TransportError('stack', 'not a version');
    });
    const poller = new LivePoller(t, () => true, () => undefined, 4000);
    poller.start();
    await vi.advanceTimersByTimeAsync(4000 * 5);
    expect(t.callsOf('fingerprint')).toHaveLength(1);
    expect(poller.running).toBe(false);
    // a later start (a refresh that read the folder) polls again
    poller.start();
    await vi.advanceTimersByTimeAsync(4000);
    expect(t.callsOf('fingerprint')).toHaveLength(2);
    poller.stop();
  });

  it('keeps asking when the server is briefly out of reach', async () => {
    const t = new FakeTransport().on('fingerprint', () => {
      throw new TransportError('network', 'could not reach the server');
    });
    const poller = new LivePoller(t, () => true, () => undefined, 4000);
    poller.start();
    await vi.advanceTimersByTimeAsync(4000 * 3);
    expect(t.callsOf('fingerprint')).toHaveLength(3);
    expect(poller.running).toBe(true);
    poller.stop();
  });
});

describe('the file browser marks a corrupt layer.json (item 4)', () => {
  function listingItem(name: string, isdir = true): HTMLElement {
    const item = document.createElement('li');
    item.className = 'jp-DirListing-item';
    item.dataset.isdir = String(isdir);
    const label = document.createElement('span');
    label.className = 'jp-DirListing-itemText';
    label.textContent = name;
    item.append(label);
    return item;
  }

  it('marks it apart from versions and plain folders, with the reason, and does not open it as a version', async () => {
    const reason = 'layer.json is not valid JSON (line 1); re-download the version';
    const detector = new VersionDetector(async () => [
      { name: 'v1', title: 'First' },
      { name: 'corrupt', title: null, unreadable: reason }
    ]);
    expect(await detector.check('stacks/corrupt')).toBe(false);
    expect(await detector.check('stacks/v1')).toBe(true);
    const root = document.createElement('ul');
    const [v1, corrupt, plain] = ['v1', 'corrupt', 'plain'].map(n => listingItem(n));
    root.append(v1, corrupt, plain);
    markVersions(root, await detector.listing('stacks'), detector.unreadable('stacks'));
    expect(corrupt.classList.contains('sds-version-broken')).toBe(true);
    expect(corrupt.classList.contains('sds-version-item')).toBe(false);
    expect(corrupt.title).toBe(`Not readable as a version: ${reason}\ncorrupt`);
    expect(v1.classList.contains('sds-version-item')).toBe(true);
    expect(plain.classList.contains('sds-version-broken')).toBe(false);
    expect(plain.title).toBe('');
    // titles beside the names (item 1), as an attribute CSS draws: the name read stays the folder's
    const textOf = (item: HTMLElement) => item.querySelector<HTMLElement>('.jp-DirListing-itemText')!;
    expect(textOf(v1).dataset.sdsTitle).toBe('First');
    expect(textOf(v1).textContent).toBe('v1');
    expect(textOf(corrupt).dataset.sdsTitle).toBe('unreadable version');
    expect(textOf(plain).dataset.sdsTitle).toBeUndefined();
    // marked again (the listing re-renders): nothing doubles; a folder no longer a version loses it
    markVersions(root, new Map(), new Map());
    expect(textOf(v1).dataset.sdsTitle).toBeUndefined();
  });
});

describe('a broken chain (item 5)', () => {
  it('Figures lists the figures that need the missing dataset, never "no figures"', async () => {
    const missing = { kind: 'missing-dataset' as const, message: 'dataset studio-1111, below the versions shown, is missing', dataset_id: 'studio-1111' };
    const t = new FakeTransport()
      .on('history', () => ({ top_depth: 6, versions: [version(6)], base: null, error: missing }))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('figures', () => ({
        figures: [
          { id: 'fig_new', title: 'New', caption: null, print_width: null, kind: 'unsupported', reason: 'needs dataset studio-1111, which is missing, to draw', spec: null }
        ],
        error: missing
      }));
    const el = mount(t, { initialTab: 'figures' });
    await settle();
    // the version keeps its own number
    expect(el.querySelector('.sds-history-row .sds-depth')?.textContent).toBe('v6');
    const figures = el.querySelector('.sds-figures')!;
    expect(figures.textContent).not.toContain('This version has no figures');
    expect(figures.querySelector('[data-figure="fig_new"] .sds-reason')!.textContent).toContain('needs dataset studio-1111');
    expect(figures.querySelector('[data-figure="fig_new"] .sds-json')).toBeNull();
    // said once per figure, not again in a box above them; the banner leaves it to the missing row
    expect(figures.querySelector(':scope > .sds-error')).toBeNull();
    expect(el.querySelector('.sds-banner')!.textContent).toBe('');
    expect(el.querySelector('.sds-missing-row')!.textContent).toContain('Dataset studio-1111 below these versions is missing');

    // and no figure could be named at all: the error alone, not "no figures" beside it
    t.on('figures', () => ({ figures: [], error: missing }));
    app!.select(6);
    await app!.refresh();
    await settle();
    expect(el.querySelector('.sds-figures')!.textContent).not.toContain('This version has no figures');
  });
});

describe('one selected version (item 2)', () => {
  it('after opening a new version, header, selection, Changes and Compare all name it', async () => {
    let top = 3;
    const NODE = { parent: 'ds-3', depth: 4, title: 'Version 4', created_at: new Date(NOW).toISOString(), created_by: 'ana' };
    const t = new FakeTransport()
      .on('history', () => history(top))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => ({
        current: `ds-${top}`,
        nodes: [
          { dataset_id: 'ds-3', parent: 'ds-2', depth: 3, title: 'Version 3', folder: 'datasets/ds-3', created_at: null, created_by: null },
          { dataset_id: 'ds-4', folder: 'datasets/ds-4', ...NODE }
        ],
        base: null,
        notes: []
      }))
      .on('fingerprint', () => ({ fingerprint: `f${top}` }))
      .on('compare', ({ a, b }) => ({ a: Number(a), b: Number(b), ...EMPTY_COMPARISON }));
    const el = mount(t, {
      openVersion: async folder => {
        expect(folder).toBe('datasets/ds-4');
        top = 4; // the panel now reads the new version's folder
      }
    });
    await settle();
    // the user looks at v2 (an older version of the opened stack), then opens the new one
    app!.select(2);
    await settle();
    expect(el.querySelector('.sds-selected')!.getAttribute('data-depth')).toBe('2');
    el.querySelector<HTMLElement>('.sds-tree-row[data-id="ds-4"]')!.click();
    await settle();
    expect(el.querySelector('.sds-title-text')!.textContent).toBe('Version 4');
    expect(el.querySelector('.sds-selected')!.getAttribute('data-depth')).toBe('4');
    expect(t.callsOf('changes').slice(-1)[0]).toEqual({ version: 4 });
    app!.showTab('compare');
    await settle();
    // the request reads "b relative to a": the selected version against its parent
    expect(t.callsOf('compare').slice(-1)[0]).toMatchObject({ a: 3, b: 4 });
    // a plain refresh of the same version keeps what the user selected
    app!.select(2);
    await app!.refresh();
    await settle();
    expect(el.querySelector('.sds-selected')!.getAttribute('data-depth')).toBe('2');
  });
});

const EMPTY_DELTA = { added: [], removed: [], changed: [] };
const EMPTY_COMPARISON = {
  obs: { ...EMPTY_DELTA, added_columns: [], removed_columns: [], n_cells_a: 1, n_cells_b: 1, n_common: 1 },
  obsm: EMPTY_DELTA,
  uns: EMPTY_DELTA,
  figures: EMPTY_DELTA,
  results: EMPTY_DELTA,
  obsm_changes: [],
  uns_changes: [],
  figure_changes: [],
  result_changes: []
};

describe('defaults (item 7)', () => {
  it("the clicked cell's row shows meaningful digits", () => {
    expect(rowValue(Math.fround(1.154))).toBe('1.154'); // float32 read back: 1.1540000438690186
    expect(rowValue(0.1 + 0.2)).toBe('0.3');
    expect(rowValue(12345678.5)).toBe('1.235e+7');
    expect(rowValue(3)).toBe('3');
    expect(rowValue(null)).toBe('NA');
    expect(rowValue('T cells')).toBe('T cells');
    expect(rowValue(true)).toBe('true');
  });
});

describe('a version opens on its own figure (item 7)', () => {
  const saved = (depth: number, figure: string) =>
    version(depth, { changes: [{ op: 'set-obs', table: 'table', column: 'x' }, { op: 'set-figure', table: 'table', figure, title: figure }] });
  const FIG = (id: string) => ({ id, title: id, caption: null, print_width: null, kind: 'unsupported' as const, reason: 'test', spec: null });

  it('opens on Figures with the figure it saved first; a version without one opens on Changes', async () => {
    let top = 2;
    const t = new FakeTransport()
      .on('history', () => (top === 2 ? history(2, { versions: [saved(2, 'fig-own'), version(1)] }) : history(3)))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('figures', () => ({ figures: [FIG('fig-a'), FIG('fig-b'), FIG('fig-own')] }))
      .on('tree', () => ({ current: `ds-${top}`, nodes: [], base: null, notes: [] }))
      .on('fingerprint', () => ({ fingerprint: 'a' }));
    const el = mount(t, { openVersion: async () => void (top = 3) });
    await settle();
    expect(el.querySelector('.sds-tab.sds-active')!.getAttribute('data-tab')).toBe('figures');
    expect([...el.querySelectorAll('.sds-figure')].map(f => f.getAttribute('data-figure'))).toEqual(['fig-own', 'fig-a', 'fig-b']);
    expect(t.callsOf('changes')).toHaveLength(0);
    // another version, which saved no figure, opens on Changes
    await app!.refresh(); // same version: the tab the user is on stays
    expect(el.querySelector('.sds-tab.sds-active')!.getAttribute('data-tab')).toBe('figures');
    top = 3;
    await app!.refresh();
    await settle();
    expect(el.querySelector('.sds-tab.sds-active')!.getAttribute('data-tab')).toBe('changes');
  });
});

describe('the tree (item 6)', () => {
  const TREE_NODES = [
    { dataset_id: 'b1', parent: 'ds-2', depth: 3, title: 'Coarser clusters', folder: 'datasets/b1', created_at: new Date(NOW - 7200_000).toISOString(), created_by: 'bo',
      changes: [{ op: 'set-obs', table: 'table', column: 'leiden_coarse' }] },
    ...[3, 2, 1].map(d => ({ dataset_id: `ds-${d}`, parent: d > 1 ? `ds-${d - 1}` : null, depth: d, title: `Version ${d}`, folder: `datasets/ds-${d}`,
      created_at: version(d).created_at, created_by: 'ana' }))
  ];
  const transport = () =>
    new FakeTransport()
      .on('history', () => history(3))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => ({ current: 'ds-3', nodes: TREE_NODES, base: null, notes: [] }))
      .on('fingerprint', () => ({ fingerprint: 'a' }));
  const search = (el: HTMLElement, q: string) => {
    const box = el.querySelector<HTMLInputElement>('.sds-search')!;
    box.value = q;
    box.dispatchEvent(new Event('input'));
  };
  const shown = (el: HTMLElement) => [...el.querySelectorAll<HTMLElement>('.sds-tree-row')].map(r => r.dataset.id);

  it('marks the selected version, searches other branches by column and op, and says "No matches"', async () => {
    const el = mount(transport());
    await settle();
    app!.select(2);
    await settle();
    expect(el.querySelectorAll('.sds-tree-selected')).toHaveLength(1);
    expect(el.querySelector<HTMLElement>('.sds-tree-selected')!.dataset.id).toBe('ds-2');
    expect(el.querySelector('.sds-tree-selected')!.getAttribute('aria-label')).toContain('selected');
    search(el, 'column:leiden_coarse');
    expect(shown(el)).toEqual(['b1']);
    search(el, 'op:set-obs leiden_coarse');
    expect(shown(el)).toEqual(['b1']);
    expect(el.querySelector<HTMLElement>('.sds-no-matches')!.hidden).toBe(true);
    search(el, 'nothing-like-this');
    expect(shown(el)).toEqual([]);
    expect(el.querySelector<HTMLElement>('.sds-no-matches')!.hidden).toBe(false);
    expect(el.querySelector('.sds-no-matches')!.textContent).toBe('No matches for “nothing-like-this”');
    search(el, '');
    expect(el.querySelector<HTMLElement>('.sds-no-matches')!.hidden).toBe(true);
  });

  it('names each version alike in the tree and the history when their replies straddle the hour', async () => {
    let now = NOW + 29 * 60_000; // ds-1 (an hour old) reads "1 hour ago" here, "2 hours ago" two minutes on
    let release: () => void = () => undefined;
    const late = new Promise<void>(resolve => (release = resolve));
    const t = transport().on('tree', async () => {
      await late;
      return { current: 'ds-3', nodes: TREE_NODES, base: null, notes: [] };
    });
    const el = document.createElement('div');
    document.body.append(el);
    app = mountApp(el, t, { now: () => now, renderChart: fakeCharts().render });
    await settle();
    const history = () => el.querySelector('.sds-history-row[data-depth="1"] .sds-row-when')!.textContent;
    expect(history()).toBe('1 hour ago');
    now = NOW + 31 * 60_000; // the tree's reply comes after the boundary
    release();
    await settle();
    const tree = el.querySelector('.sds-tree-row[data-id="ds-1"] .sds-tree-when')!.textContent;
    expect(tree).toBe('2 hours ago');
    expect(history()).toBe(tree); // one instant for both views
  });

  it('ages its relative times with the history, from the same clock', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      let now = NOW;
      const el = document.createElement('div');
      document.body.append(el);
      app = mountApp(el, transport(), { now: () => now, renderChart: fakeCharts().render });
      await settle();
      const when = () => ({
        tree: el.querySelector('.sds-tree-row[data-id="ds-1"] .sds-tree-when')!.textContent,
        history: el.querySelector('.sds-history-row[data-depth="1"] .sds-row-when')!.textContent
      });
      const before = when();
      expect(before.tree).toBe(before.history);
      now = NOW + 3 * 86400_000; // the panel stays open for days
      vi.advanceTimersByTime(60_000);
      const later = when();
      expect(later.history).not.toBe(before.history); // the tick redrew the history
      expect(later.tree).toBe(later.history);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('opening another version keeps a Back (item 3)', () => {
  it('Back returns to the version left, step by step', async () => {
    let opened = 'ds-3';
    const folders: string[] = [];
    const node = (id: string, parent: string | null, depth: number) =>
      ({ dataset_id: id, parent, depth, title: `Title ${id}`, folder: `datasets/${id}`, created_at: null, created_by: null });
    const t = new FakeTransport()
      .on('history', () => history(3, { versions: [version(3, { dataset_id: opened, title: `Title ${opened}` }), version(2), version(1)] }))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => ({ current: opened, nodes: [node('b1', 'ds-2', 3), node('b2', 'ds-2', 3), node('ds-3', 'ds-2', 3), node('ds-2', 'ds-1', 2), node('ds-1', null, 1)], base: null, notes: [] }))
      .on('fingerprint', () => ({ fingerprint: 'a' }));
    const el = mount(t, {
      openVersion: async folder => {
        folders.push(folder);
        opened = folder.split('/').pop()!;
      }
    });
    await settle();
    const back = el.querySelector<HTMLButtonElement>('.sds-back')!;
    expect(back.hidden).toBe(true);
    el.querySelector<HTMLElement>('.sds-tree-row[data-id="b1"]')!.click();
    await settle();
    expect(el.querySelector('.sds-title-text')!.textContent).toBe('Title b1');
    expect(back.hidden).toBe(false);
    expect(back.textContent).toBe('← Back to Title ds-3');
    el.querySelector<HTMLElement>('.sds-tree-row[data-id="b2"]')!.click();
    await settle();
    expect(back.textContent).toBe('← Back to Title b1');
    back.click();
    await settle();
    expect(el.querySelector('.sds-title-text')!.textContent).toBe('Title b1');
    expect(back.textContent).toBe('← Back to Title ds-3');
    back.click();
    await settle();
    expect(el.querySelector('.sds-title-text')!.textContent).toBe('Title ds-3');
    expect(back.hidden).toBe(true);
    expect(folders).toEqual(['datasets/b1', 'datasets/b2', 'datasets/b1', 'datasets/ds-3']);
  });

  it('tells the host the way back, and a restored way back shows at once (issue 41, item 4: Back survives a reload)', async () => {
    let opened = 'ds-3';
    const told: string[][] = [];
    const node = (id: string, parent: string | null, depth: number) =>
      ({ dataset_id: id, parent, depth, title: `Title ${id}`, folder: `datasets/${id}`, created_at: null, created_by: null });
    const t = new FakeTransport()
      .on('history', () => history(3, { versions: [version(3, { dataset_id: opened, title: `Title ${opened}` }), version(2), version(1)] }))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => ({ current: opened, nodes: [node('b1', 'ds-2', 3), node('ds-3', 'ds-2', 3), node('ds-2', 'ds-1', 2), node('ds-1', null, 1)], base: null, notes: [] }))
      .on('fingerprint', () => ({ fingerprint: 'a' }));
    const openVersion = async (folder: string) => {
      opened = folder.split('/').pop()!;
    };
    const el = mount(t, { openVersion, onTrail: steps => told.push(steps.map(s => s.label)) });
    await settle();
    el.querySelector<HTMLElement>('.sds-tree-row[data-id="b1"]')!.click();
    await settle();
    expect(told).toEqual([['Title ds-3']]);
    // the host restores the panel on b1 with that way back: Back is there before anything is clicked
    opened = 'b1';
    app?.dispose();
    el.remove();
    const again = mount(t, { openVersion, trail: [{ folder: 'datasets/ds-3', label: 'Title ds-3' }] });
    await settle();
    const back = again.querySelector<HTMLButtonElement>('.sds-back')!;
    expect(back.hidden).toBe(false);
    expect(back.textContent).toBe('← Back to Title ds-3');
    back.click();
    await settle();
    expect(again.querySelector('.sds-title-text')!.textContent).toBe('Title ds-3');
    expect(back.hidden).toBe(true);
  });
});

describe('a narrow panel folds the tree and history away (issue 41, item 5)', () => {
  it('the fold button hides and shows the side, and says which it does', async () => {
    const t = new FakeTransport()
      .on('history', () => history(2))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => ({ current: 'ds-2', nodes: [], base: null, notes: [] }))
      .on('fingerprint', () => ({ fingerprint: 'a' }));
    const el = mount(t);
    await settle();
    const fold = el.querySelector<HTMLButtonElement>('.sds-side-toggle')!;
    const main = el.querySelector<HTMLElement>('.sds-main')!;
    expect(fold.getAttribute('aria-controls')).toBe(el.querySelector('.sds-side')!.id);
    expect([fold.textContent, fold.getAttribute('aria-expanded')]).toEqual(['Hide versions', 'true']);
    fold.click();
    expect(main.classList.contains('sds-side-folded')).toBe(true);
    expect([fold.textContent, fold.getAttribute('aria-expanded')]).toEqual(['Show versions', 'false']);
    fold.click();
    expect(main.classList.contains('sds-side-folded')).toBe(false);
  });
});

describe('Compare above a missing dataset (item 5)', () => {
  it('compares two readable versions by what they saved, without asking for cells it cannot read', async () => {
    const missing = { kind: 'missing-dataset' as const, message: 'dataset gone-1 is missing', dataset_id: 'gone-1' };
    const versions = [6, 5, 4].map(d => version(d, { changes: [{ op: 'set-obs', table: 'table', column: `col${d}` }] }));
    const t = new FakeTransport()
      .on('history', () => ({ top_depth: 6, versions, base: null, error: missing }))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => ({ current: 'ds-6', nodes: [], base: null, notes: [] }))
      .on('fingerprint', () => ({ fingerprint: 'a' }));
    const el = mount(t, { initialTab: 'compare' });
    await settle();
    const out = () => el.querySelector('.sds-compare-out')!;
    expect(out().querySelector('.sds-note')!.textContent).toContain('Dataset gone-1 below these versions is missing');
    const ops = () => [...out().querySelectorAll('.sds-compare-ops li')].map(li => li.textContent);
    expect(ops()).toHaveLength(1);
    expect(ops()[0]).toContain('v6');
    expect(ops()[0]).toContain('col6');
    const b = el.querySelector<HTMLSelectElement>('select[aria-label^="Version B"]')!;
    b.value = '4';
    b.dispatchEvent(new Event('change'));
    await settle();
    expect(ops().map(o => o!.slice(0, 2))).toEqual(['v5', 'v6']);
    expect(t.callsOf('compare')).toHaveLength(0);
  });
});
