/**
 * anywidget entry: the version browser over the widget's comm.
 *
 * Requests go out as `{type: "request", id, name, params}` custom messages and
 * come back as `{type: "response", id, ok, data | error}` with buffers
 * (docs/service-protocol.md). "Bind as `adata`" sends `{type: "open_adata", id,
 * version}` and is answered the same way with `data: {message}`. The model's
 * `bound` trait marks the bound version in the history; a new `path` (a version
 * saved from Python) reloads the history and selects the model's `selected`.
 */

import type { AnyModel, RenderProps } from '@anywidget/types';
import { mountApp } from './app';
import { TransportError, type Buffer, type Reply, type Transport } from './app/shared/transport';
import type {
  Data,
  OpenAdataData,
  Params,
  RequestName,
  WidgetOpenAdata,
  WidgetOpenVersion,
  WidgetRequest,
  WidgetResponse
} from './app/shared/types';

/** Milliseconds before an unanswered request fails. */
export const REQUEST_TIMEOUT = 120_000;

type Pending = {
  resolve: (reply: Reply<unknown>) => void;
  reject: (err: TransportError) => void;
  timer: ReturnType<typeof setTimeout>;
};

/** What the page asks the kernel, without the id the transport adds (the shapes are generated). */
type Ask = Omit<WidgetRequest, 'id'> | Omit<WidgetOpenVersion, 'id'> | Omit<WidgetOpenAdata, 'id'>;

/** A Transport over anywidget custom messages, matching replies by id. */
export class CommTransport implements Transport {
  private readonly pending = new Map<number, Pending>();
  // several views of one model share the comm: start ids apart
  private next = Math.floor(Math.random() * 2 ** 30);

  constructor(
    private readonly model: AnyModel,
    private readonly timeout = REQUEST_TIMEOUT
  ) {
    model.on('msg:custom', this.onMessage);
  }

  dispose(): void {
    this.model.off('msg:custom', this.onMessage);
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new TransportError('closed', 'the widget was closed'));
      this.pending.delete(id);
    }
  }

  request<N extends RequestName>(name: N, params: Params<N>): Promise<Reply<Data<N>>> {
    return this.send({ type: 'request', name, params }) as Promise<Reply<Data<N>>>;
  }

  /**
   * A transport held to the version folder open now: when the widget moves on, the views of the
   * folder left keep asking about it (the kernel keeps its last folders' services), as a panel's
   * RestTransport does. A model without a path (an older kernel side) asks the folder open then.
   */
  pin(): Transport {
    const path = this.model.get('path');
    if (typeof path !== 'string' || !path) {
      return this;
    }
    return {
      request: <N extends RequestName>(name: N, params: Params<N>) =>
        this.send({ type: 'request', name, params, path }) as Promise<Reply<Data<N>>>
    };
  }

  /** Send any message that the Python side answers with a `response`. */
  send(message: Ask): Promise<Reply<unknown>> {
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new TransportError('timeout', `no answer from the kernel after ${this.timeout / 1000} s`));
      }, this.timeout);
      this.pending.set(id, { resolve, reject, timer });
      try {
        this.model.send({ ...message, id });
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(id);
        // what a person sees after a kernel restart: say what to do, not only what failed
        reject(
          new TransportError(
            'closed',
            `this browser lost its kernel (restarted or shut down): run its cell again (${TransportError.from(err).message})`
          )
        );
      }
    });
  }

  private onMessage = (msg: unknown, buffers: DataView[] = []): void => {
    const m = msg as Partial<WidgetResponse> | null;
    if (!m || m.type !== 'response' || typeof m.id !== 'number') {
      return;
    }
    const p = this.pending.get(m.id);
    if (!p) {
      return; // another view's request, or one that timed out
    }
    this.pending.delete(m.id);
    clearTimeout(p.timer);
    if (m.ok) {
      p.resolve({ data: m.data, buffers: buffers as Buffer[] });
    } else {
      p.reject(
        new TransportError(m.error?.kind ?? 'internal', m.error?.message ?? 'the request failed')
      );
    }
  };
}

/** A trait of the model, or `fallback` for a model without it (an older kernel side). */
function trait<T>(model: AnyModel, name: string, fallback: T): T {
  try {
    const value = model.get(name) as T | undefined;
    return value === undefined || value === null ? fallback : value;
  } catch {
    return fallback;
  }
}

function render({ model, el }: RenderProps): () => void {
  const transport = new CommTransport(model);
  const name = trait(model, 'bound_name', 'adata') || 'adata';
  const host = document.createElement('div');
  host.className = 'sds-widget';
  el.append(host);
  // a move in the tree changes `path` too; only a save from Python says "saved". Moves can overlap
  // (a click while the last one is answered): the count, not a flag, says whether any is under way
  let moving = 0;
  const app = mountApp(host, transport, {
    // "Copy code" opens the path the browser shows now (a getter: a move or a save changes it)
    path: trait(model, 'path', '') ? () => trait(model, 'path', '') : undefined,
    // the Python side's `selected` trait follows the selection (`browser.adata`)
    onSelect: depth => {
      try {
        model.set('selected', depth);
        model.save_changes();
      } catch {
        // a model without the trait: nothing to keep in sync
      }
    },
    // the cells inside the drawn regions: `browser.selection` in Python
    onCellSelection: selection => {
      try {
        model.set('selected_cells', selection);
        model.save_changes();
      } catch {
        // a model without the trait (an older kernel side)
      }
    },
    // a version chosen in the tree (or a new one) replaces the opened one in Python
    openVersion: async folder => {
      moving++;
      try {
        await transport.send({ type: 'open_version', folder });
      } finally {
        moving--;
      }
    },
    actions: [
      {
        id: 'open-adata',
        label: `Bind as \`${name}\``,
        title: `Bind the selected version’s table to the notebook variable ${name}`,
        run: async version => {
          const { data } = await transport.send({ type: 'open_adata', version });
          const message = (data as Partial<OpenAdataData> | null)?.message;
          return message ?? `AnnData of v${version} opened`;
        }
      }
    ]
  });
  const markBound = (): void => {
    const depth = trait(model, 'bound', -1);
    app.markBound(depth >= 0 ? { depth, label: name } : null);
  };
  // a version saved from Python: show the new history, its top selected
  const onPath = (): void => {
    if (moving > 0) {
      return; // the tree's own move: the app reloads the history itself
    }
    // read it first: the reload reselects the old version and syncs that back
    const target = trait<number>(model, 'selected', 0);
    void app.refresh().then(() => {
      app.select(target);
      markBound();
      // bound only where the kernel has a namespace (IPython); plain Python and marimo bind nothing
      const bound = trait(model, 'bound', -1) === target;
      app.say(`v${target} saved from the notebook${bound ? `; \`${name}\` is bound to it` : ''}.`);
    });
  };
  markBound();
  model.on('change:bound', markBound);
  model.on('change:path', onPath);
  return () => {
    model.off('change:bound', markBound);
    model.off('change:path', onPath);
    app.dispose();
    transport.dispose();
    host.remove();
  };
}

export default { render };
