/**
 * The Versions sidebar (issue 29): a folder's versions by title, grouped by base, newest first,
 * the top of each line marked, searched by title, column and op, opened by double-click or Enter.
 */
import { afterEach, describe, expect, it } from 'vitest';

import { TransportError } from '../app/shared/transport';
import type { Tree, TreeNode } from '../app/shared/types';
import { datasetName } from '../app/shared/format';
import { Widget } from '@lumino/widgets';

import { VersionsSidebar, VersionsView, groupHeading, groupVersions, join, type SidebarSource } from '../lab/sidebar';
import type { VersionEntry } from '../lab/versions';
import { NOW, settle } from './fixtures';

afterEach(() => document.body.replaceChildren());

const at = (hoursAgo: number) => new Date(NOW - hoursAgo * 3600_000).toISOString();
const node = (id: string, parent: string | null, depth: number, title: string | null, hoursAgo: number, extra: Partial<TreeNode> = {}): TreeNode => ({
  dataset_id: id,
  parent,
  depth,
  title,
  folder: `datasets/${id}`,
  created_at: at(hoursAgo),
  created_by: 'ana',
  changes: [],
  ...extra
});

// base A: v1 <- v2 <- v3, and a branch b1 saved on v2 (newest of all); base B: w1 alone, older
const A: TreeNode[] = [
  node('b1', 'v2', 3, 'Coarser clusters', 1, { changes: [{ op: 'set-obs', table: 'table', column: 'leiden_coarse' }] }),
  node('v3', 'v2', 3, 'Neighborhood enrichment', 2),
  node('v2', 'v1', 2, 'Leiden clusters', 3),
  node('v1', null, 1, 'Tumor margin regions', 4, { changes: [{ op: 'set-obs', table: 'table', column: 'regions' }] })
];
const B: TreeNode[] = [node('w1', null, 1, null, 30)];
const baseOf = (name: string) => ({ depth: 0 as const, dataset_id: name, path: `datasets/${name}`, kind: 'zarr', zarr_format: 3 });

function source(extra: VersionEntry[] = [], fail: Set<string> = new Set()): SidebarSource & { asked: string[] } {
  const asked: string[] = [];
  const trees: Record<string, Tree> = {};
  for (const n of A) trees[n.folder] = { current: n.dataset_id, nodes: A, base: baseOf('base-a'), notes: [] };
  trees['datasets/w1'] = { current: 'w1', nodes: B, base: baseOf('base-b'), notes: [] };
  return {
    asked,
    list: async () => [...['w1', 'v1', 'v2', 'v3', 'b1', 'x9'].filter(n => n !== 'x9' || fail.size).map(name => ({ name, title: name })), ...extra],
    tree: async path => {
      asked.push(path);
      if (fail.has(path)) throw new TransportError('manifest', 'its parent cannot be read');
      return trees[path];
    }
  };
}

describe('groupVersions', () => {
  it('asks one tree per base, the newest group first; unreadable folders are not asked', async () => {
    const s = source([{ name: 'broken', title: null, unreadable: 'not JSON' }]);
    const { groups, count, notes } = await groupVersions('datasets', s);
    expect(s.asked).toEqual(['datasets/w1', 'datasets/v1']); // v2, v3 and b1 came with v1's tree
    expect(groups.map(g => g.tree.base?.dataset_id)).toEqual(['base-a', 'base-b']);
    expect(groups[0].tree.current).toBeNull(); // nothing is "opened" in the sidebar
    expect(count).toBe(5);
    expect(notes).toEqual([]);
  });

  it('names a version whose tree cannot be read, in one line, and shows the rest', async () => {
    const s = source([], new Set(['datasets/x9']));
    const { groups, notes } = await groupVersions('datasets', s);
    expect(groups).toHaveLength(2);
    expect(notes).toEqual(['x9: its parent cannot be read']);
  });

  it('joins paths from the server root', () => {
    expect(join('', 'v1')).toBe('v1');
    expect(join('/datasets/', 'v1')).toBe('datasets/v1');
  });
});

describe('the Versions sidebar', () => {
  async function mounted(s: SidebarSource = source()) {
    const opened: string[] = [];
    const view = new VersionsView(s, { open: f => opened.push(f), now: () => NOW });
    document.body.append(view.node);
    await view.load('datasets');
    await settle();
    return { view, opened, el: view.node };
  }
  const rows = (el: Element) => [...el.querySelectorAll<HTMLElement>('.sds-tree-row')];
  const search = (el: Element, q: string) => {
    const box = el.querySelector<HTMLInputElement>('.sds-sidebar-search')!;
    box.value = q;
    box.dispatchEvent(new Event('input'));
  };

  it('highlights the version the current panel shows, and follows it to a branch (issue 41, item 4)', async () => {
    const { view, el } = await mounted();
    const opened = () => rows(el).filter(r => r.classList.contains('sds-tree-current')).map(r => r.dataset.id);
    const active = () => rows(el).filter(r => r.classList.contains('sds-active')).map(r => r.dataset.id);
    expect(opened()).toEqual([]);
    view.showOpened('datasets/v3');
    expect(opened()).toEqual(['v3']);
    expect(active()).toEqual(['v3']);
    view.showOpened('datasets/b1'); // the panel moved onto the branch: the old highlight goes
    expect(opened()).toEqual(['b1']);
    expect(active()).toEqual(['b1']);
    expect(rows(el).find(r => r.dataset.id === 'b1')!.querySelector('.sds-tree-tag-current')!.textContent).toBe('opened');
    await view.load('datasets'); // a reload keeps it
    await settle();
    expect(opened()).toEqual(['b1']);
    view.showOpened('elsewhere/x'); // a version not listed here: nothing highlighted
    expect(opened()).toEqual([]);
  });

  it('lists titles by base, newest first, the tops marked, never a bare ID where a title exists', async () => {
    const { el, view } = await mounted();
    const headings = [...el.querySelectorAll('.sds-sidebar-group-heading')].map(x => x.textContent);
    expect(headings).toEqual(['On base base-a', 'On base base-b']);
    const first = el.querySelectorAll('.sds-sidebar-group')[0];
    expect(rows(first).map(r => r.querySelector('.sds-tree-title')!.textContent)).toEqual([
      'Coarser clusters',
      'Neighborhood enrichment',
      'Leiden clusters',
      'Tumor margin regions'
    ]);
    // the tops of the two lines (b1 and v3), nothing else
    expect(rows(el).filter(r => r.classList.contains('sds-tree-top')).map(r => r.dataset.id)).toEqual(['b1', 'v3', 'w1']);
    expect(rows(el).find(r => r.dataset.id === 'b1')!.getAttribute('aria-label')).toContain('top of its line');
    // two lanes: the branch stands beside its line
    const lanes = new Set([...first.querySelectorAll('.sds-tree-dot')].map(d => d.getAttribute('cx')));
    expect(lanes.size).toBe(2);
    // an untitled version shows its ID (the only name it has)
    expect(rows(el).find(r => r.dataset.id === 'w1')!.querySelector('.sds-tree-title')!.textContent).toBe('w1');
    expect(el.querySelector('.sds-sidebar-where')!.textContent).toBe('in datasets');
    expect(el.querySelector('.sds-sidebar-status')!.textContent).toBe('');
    view.dispose();
  });

  it('searches titles, columns and ops across groups, and says "No matches"', async () => {
    const { el, view } = await mounted();
    search(el, 'column:leiden_coarse');
    expect(rows(el).map(r => r.dataset.id)).toEqual(['b1']);
    expect(el.querySelectorAll<HTMLElement>('.sds-sidebar-group')[1].hidden).toBe(true);
    expect(el.querySelector('.sds-sidebar-status')!.textContent).toBe('1 of 5 versions match');
    search(el, 'op:set-obs regions');
    expect(rows(el).map(r => r.dataset.id)).toEqual(['v1']);
    search(el, 'leiden');
    expect(rows(el).map(r => r.dataset.id)).toEqual(['b1', 'v2']);
    search(el, 'nothing-like-this');
    expect(rows(el)).toEqual([]);
    expect(el.querySelector('.sds-sidebar-status')!.textContent).toBe('No matches for “nothing-like-this”');
    search(el, '');
    expect(rows(el)).toHaveLength(5);
    view.dispose();
  });

  it('opens on a double-click or Enter, not on a single click', async () => {
    const { el, opened, view } = await mounted();
    const b1 = rows(el).find(r => r.dataset.id === 'b1')!;
    b1.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(opened).toEqual([]);
    expect(b1.classList.contains('sds-active') || el.querySelector('.sds-active')?.getAttribute('data-id') === 'b1').toBe(true);
    el.querySelector('.sds-tree-row[data-id="b1"]')!.dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
    expect(opened).toEqual(['datasets/b1']);
    // the keyboard: down to the next row, Enter opens it
    const list = el.querySelector<HTMLElement>('.sds-tree')!;
    list.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown', bubbles: true }));
    list.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    expect(opened).toEqual(['datasets/b1', 'datasets/v3']);
    view.dispose();
  });

  it('says when a folder holds no versions, and a failed listing in one line', async () => {
    const empty = await mounted({ list: async () => [], tree: async () => Promise.reject(new Error('not asked')) });
    expect(empty.el.querySelector('.sds-sidebar-status')!.textContent).toBe('No versions in this folder.');
    empty.view.dispose();
    const failing = await mounted({
      list: async () => Promise.reject(new TransportError('http_403', 'datasets is not readable')),
      tree: async () => Promise.reject(new Error('not asked'))
    });
    expect(failing.el.querySelector('.sds-sidebar-status')!.textContent).toBe('Versions unavailable: datasets is not readable');
    failing.view.dispose();
  });

  it('a title is text, never markup', async () => {
    const hostile = [node('h1', null, 1, '<img src=x onerror=alert(1)>', 1)];
    const { el, view } = await mounted({
      list: async () => [{ name: 'h1', title: 'x' }],
      tree: async () => ({ current: 'h1', nodes: hostile, base: null, notes: [] })
    });
    expect(el.querySelector('img')).toBeNull();
    expect(el.querySelector('.sds-tree-title')!.textContent).toBe('<img src=x onerror=alert(1)>');
    view.dispose();
  });

  it('a later folder wins over one still being read', async () => {
    let release: () => void = () => undefined;
    const slow: SidebarSource = {
      list: dir => (dir === 'slow' ? new Promise(r => (release = () => r([{ name: 'v1', title: 'v1' }]))) : source().list(dir)),
      tree: source().tree
    };
    const view = new VersionsView(slow, { open: () => undefined, now: () => NOW });
    const first = view.load('slow');
    await view.load('datasets');
    release();
    await first;
    expect(view.folder).toBe('datasets');
    expect(view.node.querySelectorAll('.sds-tree-row')).toHaveLength(5);
    view.dispose();
  });
});

describe('the sidebar in the left area', () => {
  it('reads the folder the file browser shows when it is shown, whatever the last follow said', async () => {
    let browserAt = 'datasets';
    const s = source();
    const listed: string[] = [];
    const sidebar = new VersionsSidebar({ ...s, list: async dir => (listed.push(dir), dir ? s.list(dir) : []) }, { open: () => undefined, now: () => NOW }, () => browserAt);
    Widget.attach(sidebar, document.body);
    sidebar.follow('datasets');
    await settle(5);
    expect(listed).toEqual(['datasets']);
    sidebar.hide();
    sidebar.follow('elsewhere'); // hidden: nothing is read
    browserAt = ''; // the browser moved on, and no follow said so
    await settle(5);
    expect(listed).toEqual(['datasets']);
    sidebar.show();
    await settle(5);
    expect(listed).toEqual(['datasets', '']);
    expect(sidebar.view.folder).toBe('');
    expect(sidebar.node.querySelector('.sds-sidebar-status')!.textContent).toBe('No versions in this folder.');
    sidebar.dispose();
  });
});

describe('a base is named alike in the sidebar and the panel', () => {
  const tree = (base: Tree['base']): Tree => ({ current: null, nodes: [], base, notes: [] });
  const local = { depth: 0 as const, dataset_id: null, path: 'data/blobs.sdata.zarr', kind: 'zarr', zarr_format: 3 };

  it("by the folder map's name, else the dataset's ID, else the base store's folder", () => {
    const named = { ...baseOf('077c0c65'), name: 'Xenium breast section' };
    for (const [base, said] of [
      [named, 'Xenium breast section'],
      [baseOf('077c0c65'), '077c0c65'],
      [local, 'blobs.sdata.zarr']
    ] as const) {
      expect(groupHeading(tree(base))).toBe(`On base ${said}`);
      expect(datasetName(base, 'the base')).toBe(said); // the panel's header and the history's base row
    }
  });

  it("names a missing dataset by the folder map's name when the reply carries one, else by its ID", () => {
    const node = { dataset_id: 'v1', parent: '0a1b2c3d', depth: 1, title: 't', folder: 'v1', changes: [] };
    const nodes = [{ ...node, created_at: null, created_by: null }];
    const above = (missing_name?: string): Tree => ({
      current: null,
      nodes,
      base: null,
      notes: [],
      ...(missing_name ? { missing_name } : {})
    });
    expect(groupHeading(above('Xenium breast section'))).toBe('Above missing dataset Xenium breast section');
    expect(groupHeading(above())).toBe('Above missing dataset 0a1b2c3d');
  });
});
