import { afterEach, describe, expect, it, vi } from 'vitest';
import widget, { CommTransport } from '../widget';
import entry, { loadApp, requestApp } from '../widgetentry';
import { TransportError } from '../app/shared/transport';
import { history, settle, text } from './fixtures';

type Handler = (msg: unknown, buffers: DataView[]) => void;

/** An anywidget model whose "kernel" answers with `answer`. */
class FakeModel {
  sent: Record<string, unknown>[] = [];
  handlers: Handler[] = [];
  /** Listeners of trait changes (`change:<name>`), apart from custom messages. */
  changes: Record<string, (() => void)[]> = {};
  answer: (msg: Record<string, unknown>) => [unknown, DataView[]] | null = () => null;

  on(event: string, cb: Handler): void {
    if (event === 'msg:custom') {
      this.handlers.push(cb);
    } else {
      (this.changes[event] ??= []).push(cb as () => void);
    }
  }
  off(event: string, cb: Handler): void {
    this.handlers = this.handlers.filter(h => h !== cb);
    this.changes[event] = (this.changes[event] ?? []).filter(h => h !== (cb as () => void));
  }
  /** Set a trait from the "kernel" and tell the listeners, as a state update does. */
  update(key: string, value: unknown): void {
    this.state[key] = value;
    (this.changes[`change:${key}`] ?? []).forEach(cb => cb());
  }
  state: Record<string, unknown> = {};
  saved = 0;
  get(key: string): unknown {
    return this.state[key];
  }
  set(key: string, value: unknown): void {
    this.state[key] = value;
  }
  save_changes(): void {
    this.saved++;
  }
  send(content: Record<string, unknown>): void {
    this.sent.push(content);
    const reply = this.answer(content);
    if (reply) {
      setTimeout(() => this.handlers.forEach(h => h(reply[0], reply[1])), 0);
    }
  }
}

afterEach(() => document.body.replaceChildren());

/** A row of the tree reply: version `id` at `depth` on `parent`, in a datasets folder of its own. */
function node(id: string, parent: string | null, depth: number) {
  return {
    dataset_id: id, parent, depth, title: `T ${id}`, folder: `/abs/datasets/${id}`,
    created_at: '2026-12-01T10:00:00Z', created_by: 'ana'
  };
}

/** The widget rendered over a model bound as `name` (nothing bound yet, v2 selected), its history `at.depth` deep. */
async function boundWidget(name: string, at: { depth: number }) {
  const model = new FakeModel();
  model.state = { bound_name: name, bound: -1, selected: 2 };
  model.answer = m => {
    const id = m.id as number;
    if (m.name === 'history') {
      return [{ type: 'response', id, ok: true, data: history(at.depth) }, []];
    }
    return [{ type: 'response', id, ok: true, data: { ops: [], added: [], replaced: [], deleted: [] } }, []];
  };
  const el = document.createElement('div');
  document.body.append(el);
  const cleanup = widget.render({ model: model as never, el } as never);
  await settle(10);
  return { model, el, cleanup };
}

describe('CommTransport', () => {
  it('sends requests with ids and resolves each with its own response and buffers', async () => {
    const model = new FakeModel();
    model.answer = m => {
      const id = m.id as number;
      if (m.name === 'canvas') {
        return [{ type: 'response', id, ok: true, data: { n: 1 } }, [new DataView(new Float32Array([7]).buffer)]];
      }
      return [{ type: 'response', id, ok: false, error: { kind: 'not-found', message: 'no figure x' } }, []];
    };
    const t = new CommTransport(model as never);
    const [ok, bad] = await Promise.allSettled([
      t.request('canvas', { version: 2, figure: 'f' }),
      t.request('figures', { version: 2 })
    ]);
    expect(model.sent[0]).toMatchObject({ type: 'request', name: 'canvas', params: { version: 2, figure: 'f' } });
    expect(model.sent[0].id).not.toBe(model.sent[1].id);
    expect(ok.status).toBe('fulfilled');
    const reply = (ok as PromiseFulfilledResult<{ data: unknown; buffers: DataView[] }>).value;
    expect(reply.data).toEqual({ n: 1 });
    expect(new Float32Array(reply.buffers[0].buffer)[0]).toBe(7);
    expect(bad.status).toBe('rejected');
    const err = (bad as PromiseRejectedResult).reason as TransportError;
    expect(err).toBeInstanceOf(TransportError);
    expect([err.kind, err.message]).toEqual(['not-found', 'no figure x']);
  });

  it('a pinned transport names the folder open when it was pinned, so its views keep asking it after a move', async () => {
    const model = new FakeModel();
    model.state = { path: 'datasets/v4' };
    model.answer = m => [{ type: 'response', id: m.id as number, ok: true, data: {} }, []];
    const t = new CommTransport(model as never);
    const held = t.pin();
    model.update('path', 'datasets/v3'); // the widget moved on (the kernel's state update)
    await held.request('changes', { version: 4 });
    await t.request('changes', { version: 3 });
    await t.pin().request('history', {});
    expect(model.sent.map(m => [m.name, m.path])).toEqual([
      ['changes', 'datasets/v4'],
      ['changes', undefined],
      ['history', 'datasets/v3']
    ]);
    // a model without a path (an older kernel side) pins nothing: the folder open then answers
    const old = new FakeModel();
    const plain = new CommTransport(old as never);
    expect(plain.pin()).toBe(plain);
  });

  it('after a kernel restart, a request says to run the cell again', async () => {
    const model = new FakeModel();
    model.send = () => {
      throw new Error('Cannot send');
    };
    const t = new CommTransport(model as never);
    await expect(t.request('history', {})).rejects.toMatchObject({
      kind: 'closed',
      message: 'this browser lost its kernel (restarted or shut down): run its cell again (Cannot send)'
    });
  });

  it('ignores other messages and times out unanswered requests', async () => {
    const model = new FakeModel();
    const t = new CommTransport(model as never, 30);
    const p = t.request('history', {});
    model.handlers.forEach(h => h({ type: 'response', id: -1, ok: true, data: {} }, []));
    model.handlers.forEach(h => h({ type: 'something-else' }, []));
    await expect(p).rejects.toMatchObject({ kind: 'timeout' });
    t.dispose();
    expect(model.handlers.length).toBe(0);
  });
});

describe('widget render', () => {
  it('draws the app over the comm and opens AnnData for the selected version', async () => {
    const model = new FakeModel();
    model.answer = m => {
      const id = m.id as number;
      if (m.type === 'open_adata') {
        return [{ type: 'response', id, ok: true, data: { message: `adata = v${m.version} (120 × 40)` } }, []];
      }
      if (m.name === 'history') {
        return [{ type: 'response', id, ok: true, data: history(2) }, []];
      }
      return [{ type: 'response', id, ok: true, data: { ops: [], added: [], replaced: [], deleted: [] } }, []];
    };
    const el = document.createElement('div');
    document.body.append(el);
    const cleanup = widget.render({ model: model as never, el } as never);
    await settle(10);
    expect(el.querySelectorAll('.sds-history-row').length).toBe(3);
    // the selection is synced to the Python side
    expect(model.state.selected).toBe(2);
    el.querySelectorAll<HTMLElement>('.sds-history-row')[1].click();
    expect(model.state.selected).toBe(1);
    expect(model.saved).toBe(2);
    el.querySelectorAll<HTMLElement>('.sds-history-row')[0].click();
    el.querySelector<HTMLButtonElement>('[data-action="open-adata"]')!.click();
    await settle(10);
    expect(model.sent.find(m => m.type === 'open_adata')).toMatchObject({ version: 2 });
    expect(text(el.querySelector('.sds-action-msg'))).toBe('adata = v2 (120 × 40)');
    cleanup();
    expect(el.querySelector('.sds-app')).toBeNull();
    expect(model.handlers.length).toBe(0);
  });

  it('names the variable on the button, marks the bound version, and follows a save', async () => {
    const at = { depth: 2 }; // the history the kernel answers: Python's save moves it on
    const { model, el, cleanup } = await boundWidget('tbl', at);
    expect(text(el.querySelector('[data-action="open-adata"]'))).toBe('Bind as `tbl`');
    expect(el.querySelector('.sds-bound')).toBeNull();
    model.update('bound', 1);
    const marked = el.querySelector('.sds-bound')!;
    expect(text(marked)).toBe('bound: tbl');
    expect(marked.getAttribute('title')).toBe(
      'bound as tbl in the notebook; saving it puts a new version on this one, whatever is selected'
    );
    expect(marked.closest<HTMLElement>('.sds-history-row')!.dataset.depth).toBe('1');
    // Python saved v3 and moved onto it: a new path reloads the history
    at.depth = 3;
    model.state.selected = 3;
    model.state.bound = 3;
    model.update('path', '/datasets/new');
    await settle(10);
    expect(el.querySelectorAll('.sds-history-row').length).toBe(4);
    expect(el.querySelector<HTMLElement>('.sds-selected')!.dataset.depth).toBe('3');
    expect(el.querySelector('.sds-bound')!.closest<HTMLElement>('.sds-history-row')!.dataset.depth).toBe('3');
    expect(text(el.querySelector('.sds-action-msg'))).toBe('v3 saved from the notebook; `tbl` is bound to it.');
    cleanup();
    expect(Object.values(model.changes).every(list => list.length === 0)).toBe(true);
  });

  it('outside IPython a save binds nothing: no mark, and the message does not claim one', async () => {
    // Issue 38, item 15: plain Python and marimo have no namespace; the kernel leaves `bound` at -1
    const at = { depth: 2 }; // the history the kernel answers: Python's save moves it on
    const { model, el, cleanup } = await boundWidget('adata', at);
    at.depth = 3;
    model.state.selected = 3;
    model.update('path', '/datasets/new');
    await settle(10);
    expect(el.querySelector<HTMLElement>('.sds-selected')!.dataset.depth).toBe('3');
    expect(el.querySelector('.sds-bound')).toBeNull();
    expect(text(el.querySelector('.sds-action-msg'))).toBe('v3 saved from the notebook.');
    cleanup();
  });

  it('a move in the tree is no save: no "saved" message, and Copy code names the version moved to', async () => {
    const model = new FakeModel();
    model.state = { bound_name: 'adata', bound: 3, selected: 3, path: '../datasets/top' };
    const nodes = [node('ds-3', 'ds-2', 3), node('b1', 'ds-1', 2), node('ds-2', 'ds-1', 2), node('ds-1', null, 1)];
    let current = 'ds-3';
    model.answer = m => {
      const id = m.id as number;
      const ok = (data: unknown): [unknown, DataView[]] => [{ type: 'response', id, ok: true, data }, []];
      if (m.type === 'open_version') {
        // the kernel side: the path trait first (a state update), then the reply
        current = 'b1';
        model.state.selected = 2;
        model.update('path', m.folder);
        return ok({ path: m.folder });
      }
      if (m.name === 'history') return ok(history(current === 'b1' ? 2 : 3));
      if (m.name === 'tree') return ok({ current, nodes, base: history(3).base, notes: [] });
      if (m.name === 'fingerprint') return ok({ fingerprint: 'a' });
      if (m.name === 'results') {
        const tables = [{ name: 'table', n_rows: 0, columns: [{ name: 'gene', dtype: 'object' }] }];
        return ok({ results: [{ id: 'markers', kind: 'markers', title: 'Markers', meta: { kind: 'markers', title: 'Markers' }, tables }] });
      }
      return ok({ ops: [], details: [], added: [], replaced: [], deleted: [] });
    };
    const el = document.createElement('div');
    document.body.append(el);
    const cleanup = widget.render({ model: model as never, el } as never);
    await settle(10);
    (el.querySelector('.sds-tree-row[data-id="b1"]') as HTMLElement).click();
    await settle(20);
    expect(model.sent.find(m => m.type === 'open_version')).toMatchObject({ folder: '/abs/datasets/b1' });
    expect(el.querySelectorAll('.sds-history-row').length).toBe(3);
    expect(text(el.querySelector('.sds-action-msg'))).not.toContain('saved from the notebook');
    el.querySelector<HTMLElement>('.sds-tab[data-tab="results"]')!.click();
    await settle(20);
    expect(el.querySelector('.sds-copy-code')!.getAttribute('title')).toContain('VersionBrowser("/abs/datasets/b1")');
    cleanup();
  });

  it('moves that overlap are no save either: the second move\'s path arriving after the first reply says nothing', async () => {
    const model = new FakeModel();
    model.state = { bound_name: 'adata', bound: 3, selected: 3, path: '../datasets/top' };
    const nodes = [node('ds-3', 'ds-2', 3), node('b1', 'ds-1', 2), node('b2', 'ds-1', 2), node('ds-2', 'ds-1', 2), node('ds-1', null, 1)];
    const moves: { id: number; folder: string }[] = [];
    model.answer = m => {
      const id = m.id as number;
      const ok = (data: unknown): [unknown, DataView[]] => [{ type: 'response', id, ok: true, data }, []];
      if (m.type === 'open_version') {
        moves.push({ id, folder: m.folder as string }); // answered below, one at a time, as the kernel would
        return null;
      }
      if (m.name === 'history') return ok(history(3));
      if (m.name === 'tree') return ok({ current: 'ds-3', nodes, base: history(3).base, notes: [] });
      if (m.name === 'fingerprint') return ok({ fingerprint: 'a' });
      return ok({ ops: [], details: [], added: [], replaced: [], deleted: [] });
    };
    const el = document.createElement('div');
    document.body.append(el);
    const cleanup = widget.render({ model: model as never, el } as never);
    await settle(10);
    (el.querySelector('.sds-tree-row[data-id="b1"]') as HTMLElement).click();
    (el.querySelector('.sds-tree-row[data-id="b2"]') as HTMLElement).click();
    await settle(5);
    expect(moves.map(m => m.folder)).toEqual(['/abs/datasets/b1', '/abs/datasets/b2']);
    // the kernel takes the moves in order: each sets the path trait, then replies
    for (const move of moves) {
      model.update('path', move.folder);
      model.handlers.forEach(h => h({ type: 'response', id: move.id, ok: true, data: { path: move.folder } }, []));
      await settle(5);
    }
    await settle(20);
    expect(text(el.querySelector('.sds-action-msg'))).not.toContain('saved from the notebook');
    cleanup();
  });
});

describe('widget entry (the small `_esm`)', () => {
  it('shows that it is loading, says in place when the kernel named no app, and cleans up', async () => {
    const model = new FakeModel();
    const el = document.createElement('div');
    document.body.append(el);
    const cleanup = entry.render({ model: model as never, el } as never);
    expect(el.querySelector('[role="status"]')?.textContent).toContain('Loading the version browser');
    await settle();
    expect(el.querySelector('[role="alert"]')?.textContent).toMatch(/could not load: .*`_app_hash` is empty/);
    expect(model.sent).toEqual([]);
    cleanup();
    expect(el.children.length).toBe(0);
  });

  it('asks the kernel for the app once per page, whatever the number of widgets', async () => {
    const models = [new FakeModel(), new FakeModel()];
    const source = 'export default {}';
    for (const model of models) {
      model.state._app_hash = 'hash-once-per-page';
      model.answer = m => (m.type === 'app' ? [{ type: 'app', id: m.id, hash: 'hash-once-per-page' }, [new DataView(new TextEncoder().encode(source).buffer)]] : null);
    }
    const imported: string[] = [];
    const rendered: number[] = [];
    const importModule = async (text: string) => {
      imported.push(text);
      return { default: { render: () => (rendered.push(1), () => undefined) } };
    };
    const apps = models.map(model => loadApp('hash-once-per-page', () => requestApp(model as never), importModule));
    await Promise.all(apps);
    expect(apps[0]).toBe(apps[1]);
    expect(models.map(m => m.sent.filter(s => s.type === 'app').length)).toEqual([1, 0]);
    expect(imported).toEqual([source]);
    // a failed fetch is not remembered: the next widget asks again
    const failing = loadApp('another-hash', () => Promise.reject(new Error('no kernel')), importModule);
    await expect(failing).rejects.toThrow('no kernel');
    await expect(loadApp('another-hash', async () => source, importModule)).resolves.toBeDefined();
    expect(imported).toEqual([source, source]);
  });

  it('renders from the cached app once the kernel has sent it', async () => {
    const model = new FakeModel();
    model.state._app_hash = 'hash-rendered';
    const drawn = vi.fn(() => () => undefined);
    await loadApp('hash-rendered', async () => '', async () => ({ default: { render: drawn } }));
    const el = document.body.appendChild(document.createElement('div'));
    const cleanup = entry.render({ model: model as never, el } as never);
    await settle();
    expect(drawn).toHaveBeenCalledTimes(1);
    expect(model.sent).toEqual([]);
    expect(el.querySelector('[role="status"]')).toBeNull();
    cleanup();
  });

  it('an answer to another request, or none in time, is not taken for the app', async () => {
    const model = new FakeModel();
    model.answer = m => [{ type: 'app', id: `${String(m.id)}-other` }, [new DataView(new ArrayBuffer(1))]];
    await expect(requestApp(model as never, 50)).rejects.toThrow(/did not send it; run the cell again/);
    expect(model.handlers).toEqual([]);
  });
});
