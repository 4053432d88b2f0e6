import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { mountApp, type AppHandle } from '../app';
import { KeptViews, type Keepable } from '../app/figures/keptviews';
import { keptViews } from '../app/figures/figures';
import type { CanvasPayload, Figure } from '../app/shared/types';
import { FakeTransport, FakeViewport, NOW, fakeCharts, history, settle } from './fixtures';

/** A view as the keeper sees it: its bytes, whether it holds a context, and what was done to it. */
class View implements Keepable {
  readonly node = document.createElement('div');
  live = true;
  parked = false;
  disposed = false;
  constructor(readonly bytes = 10) {}
  park(): void {
    this.parked = true;
  }
  unpark(): void {
    this.parked = false;
  }
  releaseContext(): void {
    this.live = false;
  }
  dispose(): void {
    this.disposed = true;
    this.live = false;
  }
}

describe('kept views', () => {
  it('gives back the same view, parked, to its owner only', () => {
    const kept = new KeptViews<View>();
    const [panel, other] = [{}, {}];
    const view = new View();
    kept.keep(panel, 'v1/tissue', view);
    expect(view.parked).toBe(true);
    expect(kept.take(other, 'v1/tissue')).toBeNull();
    expect(kept.take(panel, 'v1/tissue')).toBe(view);
    expect(kept.take(panel, 'v1/tissue')).toBeNull(); // taken out: shown now
    expect(view.disposed).toBe(false);
  });

  it('is bounded by count and bytes, disposing the least recently kept', () => {
    const owner = {};
    const kept = new KeptViews<View>(3, 100, 10);
    const views = [1, 2, 3, 4].map(() => new View(10));
    views.forEach((v, i) => kept.keep(owner, `k${i}`, v));
    expect(kept.size).toBe(3);
    expect(views.map(v => v.disposed)).toEqual([true, false, false, false]);
    const big = new View(80);
    kept.keep(owner, 'big', big); // four views, 110 bytes: the oldest goes
    expect(kept.bytes).toBeLessThanOrEqual(100);
    expect(big.disposed).toBe(false);
    expect(views.map(v => v.disposed)).toEqual([true, true, false, false]);
    kept.drop(owner); // the panel closed
    expect(kept.size).toBe(0);
    expect(big.disposed && views[3].disposed).toBe(true);
  });

  it('lets only maxLive parked views keep a WebGL context', () => {
    const owner = {};
    const kept = new KeptViews<View>(10, 1e9, 2);
    const views = [0, 1, 2, 3].map(() => new View());
    views.forEach((v, i) => kept.keep(owner, `k${i}`, v));
    expect(kept.live).toBe(2);
    expect(views.map(v => v.live)).toEqual([false, false, true, true]); // the newest kept keep theirs
    expect(views.some(v => v.disposed)).toBe(false); // still kept: a new context when shown
  });
});

const CANVAS: Figure = {
  id: 'tissue',
  title: 'Tissue',
  caption: null,
  print_width: 'double',
  kind: 'canvas',
  canvas: { table: 'table', color_by: 'regions', image: null },
  spec: { kind: 'canvas', color_by: 'regions' }
};

function payload(): CanvasPayload {
  return {
    n_cells: 3,
    bounds: [0, 0, 100, 100],
    viewport: { target: [50, 50], zoom: 0, rotation: 0 },
    color: { mode: 'categorical', column: 'regions', categories: ['tumor', 'stroma'], colors: ['#ff0000', '#00ff00'] },
    point_size: 1,
    image: null
  };
}

describe('a version revisited', () => {
  let app: AppHandle | null = null;
  beforeEach(() => new FakeViewport().install());
  afterEach(() => {
    app?.dispose();
    app = null;
    document.body.replaceChildren();
    vi.unstubAllGlobals();
  });

  it('shows the same figure view again and asks for nothing', async () => {
    const x = new Float32Array([10, 20, 30]);
    const t = new FakeTransport()
      .on('history', () => history(2))
      .on('figures', () => ({ figures: [CANVAS] }))
      .on('canvas', () => ({ data: payload(), buffers: [x.buffer, x.buffer, new Uint16Array([0, 1, 0]).buffer] }));
    const el = document.createElement('div');
    document.body.append(el);
    app = mountApp(el, t, { now: () => NOW, renderChart: fakeCharts().render, initialTab: 'figures' });
    await settle(10);
    const first = el.querySelector('.sds-spatial');
    expect(first).not.toBeNull();
    app.select(1);
    await settle(10);
    expect(el.querySelector('.sds-spatial')).not.toBe(first); // the other version's own view
    expect(keptViews.size).toBe(1); // the first one parked
    const asked = t.calls.length;
    app.select(2);
    await settle(10);
    expect(el.querySelector('.sds-spatial')).toBe(first); // the very view, as it was left
    expect(t.calls.slice(asked).map(c => c.name)).toEqual([]); // no figures, canvas or cells request
    app.dispose();
    app = null;
    expect(keptViews.size).toBe(0); // the panel closed: its views went with it
  });
});

describe('the same cells in another version', () => {
  it('draw from the index already built for their cells key, whichever version asks', async () => {
    const { SpatialStage } = await import('../app/spatial/spatial');
    const cells = { x: Float32Array.from([5, 25, 60]), y: Float32Array.from([5, 25, 60]), image: null };
    const shown = (key: string, codes: number[]) =>
      new SpatialStage({ ...payload(), cells_key: key }, { ...cells, value: Uint16Array.from(codes) });
    const a = shown('cells-k', [0, 1, 0]);
    const b = shown('cells-k', [1, 1, 0]); // another version: only its colour column differs
    const c = shown('cells-other', [0, 0, 0]);
    expect(b.index).toBe(a.index);
    expect(c.index).not.toBe(a.index);
    const built = performance.getEntriesByName('sds:cell-index').slice(-3);
    if (built.length === 3 && 'detail' in built[0]) {
      expect(built.map(e => (e as PerformanceMeasure).detail?.shared)).toEqual([false, true, false]);
    }
    [a, b, c].forEach(s => s.dispose());
  });
});
