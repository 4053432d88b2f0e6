/** A fake Transport and small payloads shaped as docs/service-protocol.md says. */
import { vi } from 'vitest';

import type { ChartHandle, ChartRenderer } from '../app/shared/chart';
import { TransportError, type Buffer, type Reply, type Transport } from '../app/shared/transport';
import type { Data, History, Params, RequestName, VersionSummary } from '../app/shared/types';

export const NOW = Date.parse('2026-12-01T12:00:00Z');

type Handler<N extends RequestName> = (params: Params<N>) => Data<N> | Reply<Data<N>> | Promise<Data<N> | Reply<Data<N>>>;

export class FakeTransport implements Transport {
  calls: { name: RequestName; params: unknown }[] = [];
  handlers: { [N in RequestName]?: Handler<N> } = {};

  on<N extends RequestName>(name: N, handler: Handler<N>): this {
    (this.handlers as Record<string, unknown>)[name] = handler;
    return this;
  }

  async request<N extends RequestName>(name: N, params: Params<N>): Promise<Reply<Data<N>>> {
    this.calls.push({ name, params });
    const handler = this.handlers[name] as Handler<N> | undefined;
    if (!handler) {
      throw new TransportError('not-found', `no handler for ${name}`);
    }
    const out = await handler(params);
    if (out && typeof out === 'object' && 'buffers' in out && 'data' in out) {
      return out as Reply<Data<N>>;
    }
    return { data: out as Data<N>, buffers: [] as Buffer[] };
  }

  callsOf(name: RequestName): unknown[] {
    return this.calls.filter(c => c.name === name).map(c => c.params);
  }
}

export function version(depth: number, extra: Partial<VersionSummary> = {}): VersionSummary {
  return {
    depth,
    dataset_id: `ds-${depth}`,
    title: `Version ${depth}`,
    message: `message ${depth}`,
    created_at: new Date(NOW - depth * 3600 * 1000).toISOString(),
    created_by: 'ana',
    app: { id: 'spatial-data-studio', version: '1.2.0' },
    changes: [],
    n_files: 3,
    n_deleted: 0,
    folder: `v${depth}`,
    ...extra
  };
}

export function history(n: number, extra: Partial<History> = {}): History {
  const versions: VersionSummary[] = [];
  for (let d = n; d >= 1; d--) {
    versions.push(version(d));
  }
  return {
    top_depth: n,
    versions,
    base: { depth: 0, dataset_id: 'base-ds', path: '/data/base.zarr', kind: 'folder', zarr_format: 3 },
    ...extra
  };
}

/** A chart renderer that records what it was asked to draw. */
export function fakeCharts(): {
  render: ChartRenderer;
  specs: object[];
  /** Click a mark of the last chart drawn: its listeners get `datum`. */
  click(datum: Record<string, unknown>): void;
} {
  const specs: object[] = [];
  let listeners: ((datum: Record<string, unknown>) => void)[] = [];
  const render: ChartRenderer = async (el, spec) => {
    listeners = [];
    specs.push(spec);
    el.dataset.drawn = 'true';
    el.textContent = 'chart';
    const handle: ChartHandle = {
      dispose: () => undefined,
      onClick: listener => {
        listeners.push(listener);
      }
    };
    return handle;
  };
  return { render, specs, click: datum => listeners.forEach(l => l(datum)) };
}

/** Let pending promises and timers settle. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await new Promise(r => setTimeout(r, 0));
  }
}

export function text(el: Element | null | undefined): string {
  return (el?.textContent ?? '').replace(/\s+/g, ' ').trim();
}

/**
 * The viewport as IntersectionObserver reports it: happy-dom lays nothing out, so which nodes
 * are on screen is said here. With `all` every observed node is on screen (reported on the next
 * task, as a browser does); otherwise only those passed to `scrollTo`.
 */
export class FakeViewport {
  private readonly watchers = new Map<Element, Set<(on: boolean) => void>>();
  private readonly shown = new Set<Element>();

  constructor(private readonly all = true) {}

  install(): void {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the Observer class below has a this of its own
    const viewport = this;
    class Observer {
      private readonly nodes = new Set<Element>();
      private readonly report: (on: boolean) => void;
      constructor(callback: (entries: { isIntersecting: boolean; target: Element }[]) => void) {
        this.report = on => callback([...this.nodes].map(target => ({ isIntersecting: on, target })));
      }
      observe(node: Element): void {
        this.nodes.add(node);
        const set = viewport.watchers.get(node) ?? new Set();
        set.add(this.report);
        viewport.watchers.set(node, set);
        if (viewport.all || viewport.shown.has(node)) {
          setTimeout(() => this.report(true), 0);
        }
      }
      disconnect(): void {
        for (const node of this.nodes) {
          viewport.watchers.get(node)?.delete(this.report);
        }
        this.nodes.clear();
      }
      unobserve(node: Element): void {
        viewport.watchers.get(node)?.delete(this.report);
        this.nodes.delete(node);
      }
    }
    vi.stubGlobal('IntersectionObserver', Observer);
  }

  /** Bring `node` on screen: its observers hear of it. */
  scrollTo(node: Element): void {
    this.shown.add(node);
    for (const report of this.watchers.get(node) ?? []) {
      report(true);
    }
  }

  /**
   * Lay `node` out off screen without its observers hearing of it: a browser reports only the
   * changes it sees between frames, so a node taken off the page and put back lower within one
   * frame is never reported gone. Observing it anew reports where it is.
   */
  moveAway(node: Element): void {
    this.shown.delete(node);
  }

  /** Take `node` off screen again (scrolled past): its observers hear of it. */
  scrollAway(node: Element): void {
    this.shown.delete(node);
    for (const report of this.watchers.get(node) ?? []) {
      report(false);
    }
  }
}
