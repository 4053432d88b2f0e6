import { afterEach, describe, expect, it } from 'vitest';
import { installOpenHandler, settingsState, type BrowserLike } from '../lab/handler';
import { VersionDetector } from '../lab/versions';
import { encodeFrame } from '../app/shared/transport';
import { settle } from './fixtures';

type Item = { name: string; path: string; type: string };

/** The server's `versions` answer per directory: {dir: [version folders]}; counts the requests. */
function lister(listings: Record<string, { name: string; title: string | null; unreadable?: string }[]>) {
  const calls: string[] = [];
  const list = async (dir: string) => {
    calls.push(dir);
    return listings[dir] ?? [];
  };
  return Object.assign(list, { calls });
}

const dir = (path: string): Item => ({ name: path.split('/').pop()!, path, type: 'directory' });
const file = (path: string): Item => ({ name: path.split('/').pop()!, path, type: 'file' });

const LISTINGS = {
  stacks: [
    { name: 'v2', title: 'Second' },
    { name: 'v3', title: null }
  ]
};

describe('VersionDetector', () => {
  it('asks once per directory, not per folder, until cleared', async () => {
    const l = lister(LISTINGS);
    const d = new VersionDetector(l);
    expect(d.cached('stacks/v2')).toBeUndefined();
    expect(await d.check('stacks/v2')).toBe(true);
    expect(await d.check('stacks/v3')).toBe(true);
    expect(await d.check('stacks/plain')).toBe(false);
    expect(await d.check('elsewhere/x')).toBe(false);
    expect(d.cached('stacks/v3')).toBe(true);
    expect(d.cached('stacks/plain')).toBe(false);
    expect(d.title('stacks/v2')).toBe('Second');
    expect(l.calls).toEqual(['stacks', 'elsewhere']);
    d.clear();
    expect(d.cached('stacks/v2')).toBeUndefined();
    await d.check('stacks/v2');
    expect(l.calls).toEqual(['stacks', 'elsewhere', 'stacks']);
  });

  it('keeps its answer through a refresh that changed nothing in the listing', async () => {
    const l = lister(LISTINGS);
    let stamp = 'a';
    const d = new VersionDetector(l, dir => (dir === 'stacks' ? stamp : null));
    await d.check('stacks/v2');
    d.clear();
    expect(d.cached('stacks/v2')).toBe(true);
    await d.check('stacks/v2');
    expect(l.calls).toEqual(['stacks']);
    stamp = 'b'; // a folder appeared or changed
    d.clear();
    expect(d.cached('stacks/v2')).toBeUndefined();
    await d.check('stacks/v2');
    expect(l.calls).toEqual(['stacks', 'stacks']);
  });
});

/** A listing like JupyterLab's: the listing's own handlers navigate on dblclick/Enter/click. */
function fakeBrowser(items: Item[]) {
  const node = document.createElement('div');
  const listing = document.createElement('div');
  listing.className = 'jp-DirListing';
  const content = document.createElement('ul');
  content.className = 'jp-DirListing-content';
  listing.append(content);
  node.append(listing);
  const byNode = new Map<Element, Item>();
  for (const item of items) {
    const li = document.createElement('li');
    li.className = 'jp-DirListing-item';
    li.textContent = item.name;
    content.append(li);
    byNode.set(li, item);
  }
  document.body.append(node);
  const navigated: string[] = [];
  let selected: Item[] = [];
  const refreshedSlots: (() => void)[] = [];
  const modelForClick = (event: MouseEvent) => {
    const li = (event.target as Element).closest('.jp-DirListing-item');
    return li ? (byNode.get(li) as never) : undefined;
  };
  // the listing's own (bubbling) handlers, as in DirListing
  listing.addEventListener('dblclick', e => {
    const item = modelForClick(e) as Item | undefined;
    if (item) navigated.push(item.path);
  });
  listing.addEventListener('keydown', e => {
    if (e.key === 'Enter') selected.forEach(i => navigated.push(i.path));
  });
  listing.addEventListener('click', e => {
    if (browser.singleClickNavigation) {
      const item = modelForClick(e) as Item | undefined;
      if (item) navigated.push(item.path);
    }
  });
  const browser = {
    node,
    singleClickNavigation: false,
    modelForClick,
    selectedItems: () => selected[Symbol.iterator]() as never,
    model: {
      refreshed: {
        connect: (f: () => void) => refreshedSlots.push(f),
        disconnect: (f: () => void) => refreshedSlots.splice(refreshedSlots.indexOf(f), 1)
      }
    }
  };
  const itemNode = (name: string) =>
    [...content.querySelectorAll<HTMLElement>('li')].find(li => li.textContent === name)!;
  return {
    browser: browser as unknown as BrowserLike & { singleClickNavigation: boolean },
    navigated,
    itemNode,
    select: (names: string[]) => (selected = items.filter(i => names.includes(i.name))),
    refresh: () => refreshedSlots.forEach(f => f()),
    slots: refreshedSlots
  };
}

describe('file browser open handler', () => {
  afterEach(() => {
    document.body.replaceChildren();
    settingsState.openVersionsOnDoubleClick = true;
  });

  const items = [dir('stacks/v2'), dir('stacks/v3'), dir('stacks/plain'), file('stacks/readme.md')];

  function setup() {
    const fb = fakeBrowser(items);
    const detector = new VersionDetector(lister(LISTINGS));
    const opened: string[] = [];
    const entered: string[] = [];
    const remove = installOpenHandler(
      fb.browser,
      detector,
      item => opened.push(item.path),
      async item => {
        entered.push(item.path);
      }
    );
    return { ...fb, detector, opened, entered, remove };
  }

  const dbl = (el: Element) => el.dispatchEvent(new MouseEvent('dblclick', { bubbles: true, button: 0 }));
  const down = (el: Element) => el.dispatchEvent(new MouseEvent('mousedown', { bubbles: true, button: 0 }));

  it('opens a version folder on double-click instead of entering it', async () => {
    const s = setup();
    down(s.itemNode('v2')); // the first click warms the cache
    await settle();
    dbl(s.itemNode('v2'));
    expect(s.opened).toEqual(['stacks/v2']);
    expect(s.navigated).toEqual([]); // the listing never saw the event
  });

  it('lets ordinary folders and files through to the listing', async () => {
    const s = setup();
    down(s.itemNode('plain'));
    await settle();
    dbl(s.itemNode('plain'));
    dbl(s.itemNode('readme.md'));
    expect(s.navigated).toEqual(['stacks/plain', 'stacks/readme.md']);
    expect(s.opened).toEqual([]);
  });

  it('checks a folder not seen yet, then opens or enters it', async () => {
    const s = setup();
    dbl(s.itemNode('v3')); // layer.json under data/
    dbl(s.itemNode('plain'));
    expect(s.navigated).toEqual([]); // held while asking
    await settle();
    expect(s.opened).toEqual(['stacks/v3']);
    expect(s.entered).toEqual(['stacks/plain']);
  });

  it('opens on Enter with one version selected, not while renaming', async () => {
    const s = setup();
    await s.detector.check('stacks/v2');
    s.select(['v2']);
    const listing = s.browser.node.querySelector('.jp-DirListing-content')!;
    listing.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    expect(s.opened).toEqual(['stacks/v2']);
    const input = document.createElement('input');
    s.itemNode('v2').append(input);
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    expect(s.opened).toEqual(['stacks/v2']);
    expect(s.navigated).toEqual(['stacks/v2']); // the rename's Enter reached the listing
  });

  it('keeps single-click navigation working, opening versions on that click', async () => {
    const s = setup();
    s.browser.singleClickNavigation = true;
    await s.detector.check('stacks/v2');
    await s.detector.check('stacks/plain');
    s.itemNode('plain').click();
    s.itemNode('v2').click();
    expect(s.navigated).toEqual(['stacks/plain']);
    expect(s.opened).toEqual(['stacks/v2']);
  });

  it('browses into a folder whose layer.json cannot be read, and says why (issue 41, item 6)', async () => {
    const fb = fakeBrowser([dir('stacks/broken'), dir('stacks/plain')]);
    const detector = new VersionDetector(
      lister({ stacks: [{ name: 'broken', title: null, unreadable: 'layer.json is not valid JSON' }] })
    );
    const said: string[] = [];
    const entered: string[] = [];
    installOpenHandler(
      fb.browser,
      detector,
      () => {},
      async item => {
        entered.push(item.path);
      },
      undefined,
      (item, why) => said.push(`${item.path}: ${why}`)
    );
    dbl(fb.itemNode('broken')); // not listed yet: asked, then entered
    await settle();
    expect(entered).toEqual(['stacks/broken']);
    expect(said).toEqual(['stacks/broken: layer.json is not valid JSON']);
    dbl(fb.itemNode('broken')); // listed: the listing navigates, and it is said again
    dbl(fb.itemNode('plain')); // an ordinary folder: nothing said
    expect(fb.navigated).toEqual(['stacks/broken', 'stacks/plain']);
    expect(said).toEqual(['stacks/broken: layer.json is not valid JSON', 'stacks/broken: layer.json is not valid JSON']);
  });

  it('does nothing when the setting is off, and clears its cache on refresh', async () => {
    const s = setup();
    await s.detector.check('stacks/v2');
    settingsState.openVersionsOnDoubleClick = false;
    dbl(s.itemNode('v2'));
    expect(s.navigated).toEqual(['stacks/v2']);
    expect(s.opened).toEqual([]);
    s.refresh();
    expect(s.detector.cached('stacks/v2')).toBeUndefined();
    s.remove();
    expect(s.slots.length).toBe(0);
  });
});

describe('REST transport', () => {
  it('builds the URL, decodes JSON and octet-stream, and maps errors', async () => {
    const { ServerConnection } = await import('@jupyterlab/services');
    const { RestTransport, requestAPI } = await import('../lab/transport');
    const seen: string[] = [];
    const modes: string[] = [];
    const fetchFn = async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      seen.push(`${init?.method ?? (input as Request).method ?? 'GET'} ${url}`);
      if (url.includes('/canvas') || url.includes('/cells')) {
        return new Response(encodeFrame({ n_cells: 1 }, [new Float32Array([3])]), {
          headers: { 'Content-Type': url.includes('json-typed') ? 'application/json' : 'application/octet-stream' }
        });
      }
      if (url.includes('/changes')) {
        return new Response(JSON.stringify({ kind: 'not_found', message: 'no such version 9' }), {
          status: 404,
          headers: { 'Content-Type': 'application/json' }
        });
      }
      return new Response(JSON.stringify({ top_depth: 1 }), { headers: { 'Content-Type': 'application/json' } });
    };
    // the cache mode each request is made with (happy-dom's Request does not keep it)
    class Recorded extends Request {
      constructor(input: RequestInfo | URL, init?: RequestInit) {
        super(input, init);
        modes.push(init?.cache ?? 'unset');
      }
    }
    const settings = ServerConnection.makeSettings({
      baseUrl: 'http://localhost:8888/lab-base/',
      fetch: fetchFn as typeof fetch,
      Request: Recorded as typeof Request
    });
    const t = new RestTransport('stacks/v 2', settings);
    const h = await t.request('history', {});
    expect(h.data).toEqual({ top_depth: 1 });
    const c = await t.request('canvas', { version: 2, figure: 'tissue' });
    expect(c.data).toEqual({ n_cells: 1 });
    expect(new Float32Array(c.buffers[0] as ArrayBuffer)[0]).toBe(3);
    // a frame under the wrong content type is still recognised
    const wrong = await t.request('canvas', { version: 3, figure: 'json-typed' });
    expect(wrong.data).toEqual({ n_cells: 1 });
    expect(wrong.buffers.length).toBe(1);
    await expect(t.request('changes', { version: 9 })).rejects.toMatchObject({
      kind: 'not_found',
      message: 'no such version 9'
    });
    expect(seen[0]).toBe('GET http://localhost:8888/lab-base/sds-jupyter/api/history?path=stacks%2Fv+2');
    expect(seen[1]).toBe(
      'GET http://localhost:8888/lab-base/sds-jupyter/api/canvas?path=stacks%2Fv+2&version=2&figure=tissue'
    );
    const post = await requestAPI('notebook', {}, { method: 'POST', body: '{}' }, settings);
    expect(post.data).toEqual({ top_depth: 1 });
    expect(seen[4]).toBe('POST http://localhost:8888/lab-base/sds-jupyter/api/notebook');
    // the server never sees the unknown cache-buster parameter
    expect(seen.every(u => !/[?&]\d+$/.test(u))).toBe(true);
    // every reply is revalidated, but one named by its content key may come from the HTTP cache as it is
    expect(modes.slice(0, 2)).toEqual(['no-cache', 'no-cache']);
    await t.request('cells', { version: 2, figure: 'tissue', key: 'abc' });
    await t.request('cells', { version: 2, figure: 'tissue' });
    expect(modes.slice(-2)).toEqual(['default', 'no-cache']);
  });
});

describe('Copy code from the lab panel', () => {
  it('names the version from the server root, so the line runs in a notebook anywhere below it', async () => {
    const { kernelPath } = await import('../lab/paths');
    expect(kernelPath('datasets/v3', '/home/ana/work')).toBe('/home/ana/work/datasets/v3');
    expect(kernelPath('/datasets/v3', '/home/ana/work/')).toBe('/home/ana/work/datasets/v3');
    expect(kernelPath('datasets/v3', 'C:/Users/ana')).toBe('C:/Users/ana/datasets/v3');
    expect(kernelPath('', '/srv')).toBe('/srv');
    // a root in the home folder, as JupyterLab names it: VersionBrowser expands the ~
    expect(kernelPath('datasets/v3', '~/work')).toBe('~/work/datasets/v3');
    // no root known (not in JupyterLab): the path as the server names it
    expect(kernelPath('datasets/v3', '')).toBe('datasets/v3');
  });
});
