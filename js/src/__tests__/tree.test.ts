import { afterEach, describe, expect, it } from 'vitest';
import { TransportError, mountApp, type AppHandle, type Transport } from '../app';
import { descendants, layoutGraph, leftOut, matchesQuery, topoOrder } from '../app/history/tree';
import type { Data, Params, RequestName, Tree, TreeNode } from '../app/shared/types';
import { FakeTransport, NOW, fakeCharts, history, settle, version } from './fixtures';

let app: AppHandle | null = null;
afterEach(() => {
  app?.dispose();
  app = null;
  document.body.replaceChildren();
});

function node(id: string, parent: string | null, depth: number, hoursAgo: number): TreeNode {
  return {
    dataset_id: id,
    parent,
    depth,
    title: `T ${id}`,
    folder: `datasets/${id}`,
    created_at: new Date(NOW - hoursAgo * 3600_000).toISOString(),
    created_by: 'ana'
  };
}

/** ds-1 ← ds-2 ← ds-3 (the opened chain), a branch b1 on ds-2, b2 on b1, and c1 on ds-1. */
const NODES = [
  node('b2', 'b1', 4, 0.5),
  node('ds-3', 'ds-2', 3, 3),
  node('b1', 'ds-2', 3, 1),
  node('c1', 'ds-1', 2, 0.7),
  node('ds-2', 'ds-1', 2, 2),
  node('ds-1', null, 1, 5)
];

describe('tree layout', () => {
  it('puts every child before its parent and gives each branch a lane', () => {
    const order = topoOrder(NODES).map(n => n.dataset_id);
    for (const n of NODES) {
      if (n.parent) {
        expect(order.indexOf(n.dataset_id)).toBeLessThan(order.indexOf(n.parent));
      }
    }
    const rows = layoutGraph(topoOrder(NODES));
    const lane = Object.fromEntries(rows.map(r => [r.node.dataset_id, r.lane]));
    expect(lane['b2']).toBe(lane['b1']); // one branch, one lane
    expect(new Set([lane['b2'], lane['ds-3'], lane['c1']]).size).toBe(3); // three heads, three lanes
    const root = rows[rows.length - 1];
    expect(root.node.dataset_id).toBe('ds-1');
    expect(root.below.every(x => x === null)).toBe(true); // every lane closes at the root
  });

  it('keeps the opened chain in the first lane', () => {
    const rows = layoutGraph(topoOrder(NODES), new Set(['ds-3', 'ds-2', 'ds-1']));
    for (const r of rows) {
      expect(r.lane === 0).toBe(['ds-3', 'ds-2', 'ds-1'].includes(r.node.dataset_id));
    }
  });

  it('finds the versions built on one', () => {
    expect([...descendants(NODES, 'ds-2')].sort()).toEqual(['b1', 'b2', 'ds-3']);
    expect(descendants(NODES, 'b2').size).toBe(0);
  });
});

describe('search', () => {
  const v = version(2, {
    title: 'Regions drawn',
    message: 'around the front',
    created_by: 'bob@example.org',
    changes: [{ op: 'set-obs', table: 'table', column: 'regions' }]
  });

  it('matches title, message, author, op and column, every word', () => {
    for (const q of ['regions', 'FRONT', 'bob', 'set-obs', 'op:set-obs', 'column:regions', 'author:bob drawn']) {
      expect(matchesQuery(v, q)).toBe(true);
    }
    for (const q of ['op:delete', 'column:front', 'author:ana', 'regions nothing']) {
      expect(matchesQuery(v, q)).toBe(false);
    }
    expect(matchesQuery(v, '  ')).toBe(true);
  });
});

function tree(nodes: TreeNode[], current = 'ds-3'): Tree {
  return { current, nodes, base: history(3).base, notes: [] };
}

function mount(t: Transport, openVersion?: (folder: string) => Promise<void>): HTMLElement {
  const el = document.createElement('div');
  document.body.append(el);
  app = mountApp(el, t, { now: () => NOW, renderChart: fakeCharts().render, openVersion });
  return el;
}

describe('tree section', () => {
  it('draws the tree, marks the opened line and newer versions, and filters the history', async () => {
    const t = new FakeTransport()
      .on('history', () => history(3))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => tree(NODES, 'ds-2'))
      .on('fingerprint', () => ({ fingerprint: 'a' }));
    const el = mount(t);
    await settle();
    const rows = [...el.querySelectorAll<HTMLElement>('.sds-tree-row')];
    expect(rows.length).toBe(6);
    const byId = (id: string) => rows.find(r => r.dataset.id === id)!;
    expect(byId('ds-2').classList.contains('sds-tree-current')).toBe(true);
    expect(byId('ds-3').classList.contains('sds-tree-chain')).toBe(true);
    expect(byId('b1').classList.contains('sds-tree-chain')).toBe(false);
    expect(byId('b2').classList.contains('sds-tree-newer')).toBe(true);
    expect(byId('c1').classList.contains('sds-tree-newer')).toBe(false);
    expect(byId('b2').getAttribute('aria-label')).toContain('newer than the opened version');
    const search = el.querySelector<HTMLInputElement>('.sds-search')!;
    search.value = 'Version 2';
    search.dispatchEvent(new Event('input'));
    expect([...el.querySelectorAll('.sds-history-row')].map(r => r.getAttribute('data-depth'))).toEqual(['2']);
    search.value = 'author:nobody';
    search.dispatchEvent(new Event('input'));
    expect(el.querySelectorAll('.sds-history-row').length).toBe(0);
    search.value = 'message 3';
    search.dispatchEvent(new Event('input'));
    expect([...el.querySelectorAll('.sds-history-row')].map(r => r.getAttribute('data-depth'))).toEqual(['3']);
    search.value = '';
    search.dispatchEvent(new Event('input'));
    expect(el.querySelectorAll('.sds-history-row').length).toBe(4);
  });

  it('names the folders it left out (a corrupt layer.json), the reasons on hover (issue 29 item 4)', async () => {
    const notes = ["skipped 'corrupt-version': layer.json is not valid JSON"];
    const t = new FakeTransport()
      .on('history', () => history(3))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => ({ ...tree(NODES), notes }))
      .on('fingerprint', () => ({ fingerprint: 'a' }));
    const el = mount(t);
    await settle();
    const status = el.querySelector<HTMLElement>('.sds-tree-status')!;
    expect(status.textContent).toBe('Left out of the tree: corrupt-version');
    expect(status.title).toBe(notes[0]);
    expect(leftOut([...notes, "skipped 'b': its parent references form a loop"])).toBe('Left out of the tree: corrupt-version, b');
    expect(leftOut(['something else'])).toBe('1 folder left out of the tree');
    expect(leftOut([])).toBe('');
  });

  it('tags a version saved in the workspace and not yet uploaded', async () => {
    const local = { ...node('b1', 'ds-2', 3, 1), folder: 'sds-versions/b1', not_in_cirro: true };
    const t = new FakeTransport()
      .on('history', () => history(3))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => tree(NODES.map(n => (n.dataset_id === 'b1' ? local : n))))
      .on('fingerprint', () => ({ fingerprint: 'a' }));
    const el = mount(t);
    await settle();
    const row = el.querySelector<HTMLElement>('.sds-tree-row[data-id="b1"]')!;
    expect(row.querySelector('.sds-tree-tag-local')!.textContent).toBe('not yet in Cirro');
    expect(row.getAttribute('aria-label')).toContain('not yet in Cirro');
    expect(el.querySelectorAll('.sds-tree-tag-local').length).toBe(1);
  });

  it('a chain node selects its version; another node opens it', async () => {
    const opened: string[] = [];
    const t = new FakeTransport()
      .on('history', () => history(3))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => tree(NODES))
      .on('fingerprint', () => ({ fingerprint: 'a' }));
    const el = mount(t, async folder => void opened.push(folder));
    await settle();
    (el.querySelector('.sds-tree-row[data-id="ds-1"]') as HTMLElement).click();
    await settle();
    expect(el.querySelector('.sds-selected')!.getAttribute('data-depth')).toBe('1');
    (el.querySelector('.sds-tree-row[data-id="b1"]') as HTMLElement).click();
    await settle();
    expect(opened).toEqual(['datasets/b1']);
  });

  it('keeps naming the folders left out while an opened version\'s tree is still on its way', async () => {
    const notes = ["skipped 'corrupt-version': layer.json is not valid JSON"];
    let finish: () => void = () => {};
    let slow = false; // after the click, the tree's reply takes a while (a loaded server)
    const read = () => ({ ...tree(NODES), notes });
    const t = new FakeTransport()
      .on('history', () => history(3))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => (slow ? new Promise<Tree>(r => setTimeout(() => r(read()), 200)) : read()))
      .on('fingerprint', () => ({ fingerprint: 'a' }));
    const el = mount(t, () => new Promise<void>(resolve => (finish = resolve)));
    await settle();
    const status = el.querySelector<HTMLElement>('.sds-tree-status')!;
    slow = true;
    (el.querySelector('.sds-tree-row[data-id="b1"]') as HTMLElement).click();
    expect(status.textContent).toMatch(/^Opening /);
    // opened, the new tree not yet read: the line stands (never a blank), and stays once it is read
    finish();
    await settle();
    expect(status.textContent).toBe('Left out of the tree: corrupt-version');
    await new Promise(r => setTimeout(r, 250));
    expect(status.textContent).toBe('Left out of the tree: corrupt-version');
  });

  it('shows a missing dataset at the break', async () => {
    const broken = history(2, { base: null, error: { kind: 'missing-dataset', message: 'gone', dataset_id: 'gone-1' } });
    const t = new FakeTransport()
      .on('history', () => broken)
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [], note: 'cannot tell' }))
      .on('tree', () => ({ current: 'ds-2', nodes: [], base: null, notes: [] }))
      .on('fingerprint', () => ({ fingerprint: 'a' }));
    const el = document.createElement('div');
    document.body.append(el);
    app = mountApp(el, t, { now: () => NOW, renderChart: fakeCharts().render, cirro: false });
    await settle();
    const missing = el.querySelector<HTMLElement>('.sds-missing-row')!;
    expect(missing.hidden).toBe(false);
    expect(missing.textContent).toBe('Dataset gone-1 below these versions is missing: add it to the workspace to read their data');
    expect(el.querySelectorAll('.sds-history-row').length).toBe(2);
    expect(el.querySelector('.sds-note')!.textContent).toBe('cannot tell');
    expect(el.querySelector('.sds-tree-summary')!.textContent).toBe('Tree: 0 versions above the missing dataset');
    expect(el.querySelector('.sds-fetch-missing')).toBeNull(); // a host without Cirro: no button
  });

  it('fetches from the project picked on the missing row, says a failure in the panel style, reloads after it', async () => {
    let fetched = false;
    let fail = true;
    const broken = history(2, {
      base: null,
      error: { kind: 'missing-dataset', message: 'gone', dataset_id: 'gone-1', name: 'Xenium breast section' }
    });
    const t = new FakeTransport()
      .on('history', () => (fetched ? history(3) : broken))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => ({ current: 'ds-2', nodes: [], base: null, notes: [] }))
      .on('fingerprint', () => ({ fingerprint: 'a' }))
      .on('cirro_projects', () => ({
        projects: [
          { id: 'p-1', name: 'Breast atlas' },
          { id: 'p-2', name: 'Pilot' }
        ],
        default: 'p-2'
      }))
      .on('cirro_fetch', () => {
        if (fail) {
          throw new TransportError('cirro', 'listing dataset gone-1 failed: Cirro at localhost:9 cannot be reached; check that address');
        }
        fetched = true;
        return { fetched: ['gone-1'] };
      });
    const el = mount(t);
    await settle();
    // the missing dataset is named as the folder map names it
    expect(el.querySelector('.sds-missing-row')!.textContent).toContain('Dataset Xenium breast section below these versions');
    el.querySelector<HTMLButtonElement>('.sds-fetch-missing')!.click();
    await settle();
    const box = el.querySelector<HTMLElement>('.sds-cirro')!;
    expect(box.hidden).toBe(false);
    expect(box.querySelector('h3')!.textContent).toBe('Fetch Xenium breast section from Cirro');
    const picker = box.querySelector<HTMLSelectElement>('select.sds-cirro-project')!;
    expect([...picker.options].map(o => o.textContent)).toEqual(['Breast atlas', 'Pilot']);
    expect(picker.value).toBe('p-2'); // the workspace's own project preselected
    picker.value = 'p-1';
    box.querySelector<HTMLButtonElement>('.sds-cirro-go')!.click();
    await settle();
    // the service's words, in the panel's error style (no code word, no CLI flags)
    expect(box.querySelector('.sds-error .sds-error-message')!.textContent).toContain('cannot be reached');
    expect(box.querySelector('.sds-error-kind')).toBeNull();
    fail = false;
    box.querySelector<HTMLButtonElement>('.sds-cirro-go')!.click();
    await settle(10);
    expect(t.callsOf('cirro_fetch')).toEqual([{ project: 'p-1' }, { project: 'p-1' }]);
    expect(box.querySelector('.sds-cirro-done')!.textContent).toBe('Fetched 1 dataset; the version reads whole now.');
    expect(box.querySelector('.sds-error')).toBeNull();
    expect(el.querySelector<HTMLElement>('.sds-missing-row')!.hidden).toBe(true);
    expect(el.querySelectorAll('.sds-history-row').length).toBe(4);
  });

  it('uploads a version not yet in Cirro: the chain checked first, then the project, then the tag goes', async () => {
    let uploaded = false;
    const t = new FakeTransport()
      .on('history', () => history(3))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => ({
        current: 'ds-3',
        nodes: [3, 2, 1].map(d => ({ ...node(`ds-${d}`, d > 1 ? `ds-${d - 1}` : null, d, 0), not_in_cirro: d === 3 && !uploaded })),
        base: null,
        notes: []
      }))
      .on('fingerprint', () => ({ fingerprint: uploaded ? 'b' : 'a' }))
      .on('cirro_projects', () => ({ projects: [{ id: 'p-1', name: 'Breast atlas' }], default: null }))
      .on('cirro_plan', () => ({ name: 'v3 title', n_files: 4, n_bytes: 2048 }))
      .on('cirro_upload', () => {
        uploaded = true;
        return { dataset_id: 'c1a0-new', project: 'p-1' };
      });
    const el = mount(t);
    await settle(10);
    const upload = el.querySelector<HTMLButtonElement>('.sds-upload-cirro')!;
    expect(upload.hidden).toBe(false); // the top is selected, and it is not in Cirro
    (el.querySelector('.sds-history-row[data-depth="2"]') as HTMLElement).click();
    await settle();
    expect(upload.hidden).toBe(true); // a version that is in Cirro offers no upload
    (el.querySelector('.sds-history-row[data-depth="3"]') as HTMLElement).click();
    await settle();
    upload.click();
    await settle();
    const box = el.querySelector<HTMLElement>('.sds-cirro')!;
    expect(t.callsOf('cirro_plan')).toEqual([{ version: 3 }]);
    expect(box.querySelector('.sds-cirro-status')!.textContent).toBe(
      'Its parent chain is in Cirro. It sends 4 files (2.0 KiB) as the dataset “v3 title”.'
    );
    box.querySelector<HTMLButtonElement>('.sds-cirro-go')!.click();
    await settle(10);
    expect(t.callsOf('cirro_upload')).toEqual([{ project: 'p-1', version: 3 }]);
    expect(box.querySelector('.sds-cirro-done')!.textContent).toBe('Uploaded: now Cirro dataset c1a0-new.');
    expect(el.querySelector('.sds-tree-tag-local')).toBeNull();
    expect(upload.hidden).toBe(true);
  });

  it('says a copy of a Cirro dataset is one, offers no project, and the tag goes (issue 41, item 4)', async () => {
    let recorded = false;
    const said = '“v3 title” is in Cirro already: this folder is a copy of Cirro dataset ds-3; nothing to upload (a version saved on it can be uploaded)';
    const t = new FakeTransport()
      .on('history', () => history(3))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => ({ current: 'ds-3', nodes: [{ ...node('ds-3', 'ds-2', 3, 0), not_in_cirro: !recorded }], base: null, notes: [] }))
      .on('fingerprint', () => ({ fingerprint: 'a' }))
      .on('cirro_projects', () => ({ projects: [{ id: 'p-1', name: 'Breast atlas' }], default: null }))
      .on('cirro_plan', () => {
        recorded = true; // the server records Cirro's answer beside the copy
        return { name: 'v3 title', n_files: 0, n_bytes: 0, copy_of: 'ds-3', said };
      });
    const el = mount(t);
    await settle(10);
    const upload = el.querySelector<HTMLButtonElement>('.sds-upload-cirro')!;
    expect(upload.hidden).toBe(false); // the folder alone cannot tell a copy from a version saved here
    upload.click();
    await settle(10);
    const box = el.querySelector<HTMLElement>('.sds-cirro')!;
    expect(box.querySelector('.sds-cirro-status')!.textContent).toBe(said);
    expect(box.querySelector('select, .sds-cirro-go, .sds-error')).toBeNull();
    expect(box.querySelector('.sds-cirro-close')!.textContent).toBe('Close');
    expect(el.querySelector('.sds-tree-tag-local')).toBeNull();
    expect(upload.hidden).toBe(true);
  });

  it('refuses an upload whose parent is not in Cirro before asking for a project', async () => {
    const t = new FakeTransport()
      .on('history', () => history(3))
      .on('changes', () => ({ ops: [], details: [], added: [], replaced: [], deleted: [] }))
      .on('tree', () => ({ current: 'ds-3', nodes: [{ ...node('ds-3', 'ds-2', 3, 0), not_in_cirro: true }], base: null, notes: [] }))
      .on('fingerprint', () => ({ fingerprint: 'a' }))
      .on('cirro_projects', () => ({ projects: [{ id: 'p-1', name: 'Breast atlas' }], default: null }))
      .on('cirro_plan', () => {
        throw new TransportError('stack', 'version ds-2 in sds-versions is not in Cirro yet: upload sds-versions/ds-2 first');
      });
    const el = mount(t);
    await settle(10);
    el.querySelector<HTMLButtonElement>('.sds-upload-cirro')!.click();
    await settle();
    const box = el.querySelector<HTMLElement>('.sds-cirro')!;
    expect(box.querySelector('.sds-error-message')!.textContent).toBe(
      'version ds-2 in sds-versions is not in Cirro yet: upload sds-versions/ds-2 first'
    );
    expect(box.querySelector('select')).toBeNull();
    expect(box.querySelector('.sds-cirro-go')).toBeNull();
  });
});

/**
 * Folders that answer as the server does: each a stack of its own height, a request for a depth
 * it lacks refused with the library's words. `path` moves as a panel's RestTransport does;
 * `hold(path)` keeps that folder's history reply back until the returned function is called.
 */
class Folders implements Transport {
  path = 'A';
  asked: { path: string; name: string; version?: unknown }[] = [];
  private held = new Map<string, Promise<void>>();

  constructor(private readonly tops: Record<string, number>) {}

  hold(path: string): () => void {
    let release = () => {};
    this.held.set(path, new Promise<void>(r => (release = r)));
    return release;
  }

  pin(): Transport {
    const path = this.path;
    return { request: (name, params) => this.at(path, name, params) };
  }

  request<N extends RequestName>(name: N, params: Params<N>) {
    return this.at(this.path, name, params);
  }

  private async at<N extends RequestName>(path: string, name: N, params: Params<N>) {
    const version = (params as { version?: unknown }).version;
    this.asked.push({ path, name, version });
    const top = this.tops[path];
    if (name === 'history') {
      await this.held.get(path);
    }
    if (typeof version === 'number' && version > top) {
      throw new TransportError('stack', `no version at depth ${version}: this stack has depths 0 (the base) to ${top}`);
    }
    const answers: Partial<Record<RequestName, unknown>> = {
      history: history(top, { versions: history(top).versions.map(v => ({ ...v, title: `${path} v${v.depth}`, dataset_id: `${path}-${v.depth}` })) }),
      changes: { ops: [], details: [], added: [], replaced: [], deleted: [] },
      tree: { ...tree(NODES), current: `${path}-${top}` },
      fingerprint: { fingerprint: path }
    };
    return { data: answers[name] as Data<N>, buffers: [] };
  }
}

describe('a panel moving to another version', () => {
  it('keeps its views asking the stack they show until the new history is shown, and drops a history reply for a folder it left again', async () => {
    // Seen in a flow (issue 29, 1 3 4): a view of v4 asked after the panel moved to a stack of
    // depths 0 to 3, and the page said "no version at depth 4: this stack has depths 0 (the base) to 3".
    const folders = new Folders({ A: 4, B: 3, C: 2 });
    const el = mount(folders, async folder => {
      folders.path = folder === 'datasets/b1' ? 'B' : 'C';
    });
    await settle();
    const title = () => el.querySelector('.sds-title-text')?.textContent ?? el.querySelector('.sds-banner')?.textContent;
    expect(title()).toBe('A v4');
    (el.querySelector('.sds-history-row[data-depth="3"]') as HTMLElement).click();
    await settle();
    // a key moves the selection to v4 now and asks for its details once the key rests: by then the
    // panel has moved to B, whose history is still on its way
    const list = el.querySelector('.sds-history')!;
    const before = folders.asked.length;
    list.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowUp', bubbles: true }));
    const releaseB = folders.hold('B');
    (el.querySelector('.sds-tree-row[data-id="b1"]') as HTMLElement).click();
    await new Promise(r => setTimeout(r, 200)); // past the key's rest (KEY_DELAY)
    expect(folders.asked.slice(before).filter(a => a.name === 'changes')).toEqual([{ path: 'A', name: 'changes', version: 4 }]);
    // while B's history is on its way, another move (to C) is made and shown first
    folders.path = 'C';
    await app!.refresh();
    expect(title()).toBe('C v2');
    releaseB();
    await settle();
    // B's late reply is for a folder the panel left: C stays, and its views ask C
    expect(title()).toBe('C v2');
    (el.querySelector('.sds-history-row[data-depth="1"]') as HTMLElement).click();
    await settle();
    expect(folders.asked).toContainEqual({ path: 'C', name: 'changes', version: 1 });
    // no folder was ever asked about a depth it does not have
    const beyond = folders.asked.filter(a => typeof a.version === 'number' && a.version > ({ A: 4, B: 3, C: 2 } as Record<string, number>)[a.path]);
    expect(beyond).toEqual([]);
  });
});
