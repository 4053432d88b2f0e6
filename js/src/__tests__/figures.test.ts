import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { mountApp, type AppHandle } from '../app';
import { decodeCanvas, disc, fitView, packColor, rasterizePoints, savedView } from '../app/spatial/raster';
import { TransportError, decodeFrame, encodeFrame } from '../app/shared/transport';
import type { CanvasPayload, Figure } from '../app/shared/types';
import { FakeTransport, FakeViewport, NOW, fakeCharts, history, settle, text } from './fixtures';

let app: AppHandle | null = null;
beforeEach(() => new FakeViewport().install()); // every figure on screen, unless a test says otherwise
afterEach(() => {
  app?.dispose();
  app = null;
  document.body.replaceChildren();
  vi.unstubAllGlobals();
});

const CHART: Figure = {
  id: 'markers_bar',
  title: 'Top markers',
  caption: 'Mean expression per cluster',
  print_width: 89,
  kind: 'chart',
  vega_lite: { mark: 'bar', data: { values: [{ a: 1, b: 2 }] } },
  spec: { kind: 'chart', mark: 'bar' }
};

const CANVAS: Figure = {
  id: 'tissue',
  title: 'Tissue',
  caption: null,
  print_width: 'double',
  kind: 'canvas',
  canvas: { table: 'table', color_by: 'regions', image: null },
  spec: { kind: 'canvas', color_by: 'regions' }
};

const ODD: Figure = {
  id: 'odd',
  title: 'A 3D view',
  caption: null,
  print_width: null,
  kind: 'unsupported',
  reason: 'kind "volume" is not drawn by this viewer',
  spec: '{"kind": "volume", "depth": 3}'
};

function canvasPayload(n: number): CanvasPayload {
  return {
    n_cells: n,
    bounds: [0, 0, 100, 100],
    viewport: { target: [50, 50], zoom: 0, rotation: 0 },
    color: { mode: 'categorical', column: 'regions', categories: ['tumor', 'stroma'], colors: ['#ff0000', '#00ff00'] },
    point_size: 1,
    image: null
  };
}

function mount(t: FakeTransport, charts = fakeCharts()): HTMLElement {
  const el = document.createElement('div');
  document.body.append(el);
  app = mountApp(el, t, { now: () => NOW, renderChart: charts.render, initialTab: 'figures' });
  return el;
}

describe('figures view', () => {
  it('draws charts, canvases and unsupported figures, each with its header', async () => {
    const x = new Float32Array([10, 20, 30]);
    const y = new Float32Array([10, 20, 30]);
    const codes = new Uint16Array([0, 1, 0]);
    const charts = fakeCharts();
    const t = new FakeTransport()
      .on('history', () => history(1))
      .on('figures', () => ({ figures: [CHART, CANVAS, ODD] }))
      // as the widget hands them: DataViews
      .on('canvas', () => ({
        data: canvasPayload(3),
        buffers: [new DataView(x.buffer), new DataView(y.buffer), new DataView(codes.buffer)]
      }));
    const el = mount(t, charts);
    await settle(10);
    const figs = [...el.querySelectorAll<HTMLElement>('.sds-figure')];
    expect(figs.map(f => f.dataset.figure)).toEqual(['markers_bar', 'tissue', 'odd']);

    // chart: the Vega-Lite spec went to the renderer, export buttons appear
    expect(text(figs[0].querySelector('.sds-figure-title'))).toBe('Top markers');
    expect(text(figs[0].querySelector('.sds-chip'))).toBe('89 mm');
    expect(text(figs[0].querySelector('figcaption'))).toBe('Mean expression per cluster');
    expect(charts.specs).toEqual([CHART.vega_lite]);
    expect(figs[0].querySelector<HTMLElement>('.sds-chart')!.dataset.drawn).toBe('true');
    expect([...figs[0].querySelectorAll('.sds-figure-tools button')].map(b => text(b))).toEqual(['SVG', 'PNG', 'PDF']);

    // canvas: requested with version and figure id, legend from the payload
    expect(t.callsOf('canvas')).toEqual([{ version: 1, figure: 'tissue' }]);
    expect(text(figs[1].querySelector('.sds-chip'))).toBe('double column');
    expect(figs[1].querySelector('canvas')).not.toBeNull();
    expect([...figs[1].querySelectorAll('.sds-figure-tools button')].map(b => text(b))).toEqual(['SVG', 'PNG', 'PDF']);
    expect([...figs[1].querySelectorAll('.sds-export-view option')].map(o => (o as HTMLOptionElement).value)).toEqual(['saved', 'screen', 'whole']);
    const legend = figs[1].querySelector('.sds-legend')!;
    expect(text(legend.querySelector('.sds-legend-title'))).toBe('regions');
    expect([...legend.querySelectorAll('.sds-legend-label')].map(l => text(l))).toEqual(['tumor', 'stroma']);
    expect(legend.querySelector<HTMLElement>('.sds-swatch')!.getAttribute('style')).toContain('rgb(255, 0, 0)');
    expect(text(figs[1].querySelector('.sds-canvas-note'))).toBe('3 cells');

    // unsupported: the reason and the spec as pretty JSON
    expect(text(figs[2].querySelector('.sds-reason'))).toBe('kind "volume" is not drawn by this viewer');
    expect(figs[2].querySelector('pre')!.textContent).toBe(JSON.stringify({ kind: 'volume', depth: 3 }, null, 2));
  });

  it('exports ask the service for the selected version\'s file and save it under the name it gives', async () => {
    const names: string[] = [];
    const saved = (ev: Event) => {
      const a = ev.target as HTMLElement;
      if (a.tagName === 'A' && a.hasAttribute('download')) {
        names.push(a.getAttribute('download')!);
        ev.preventDefault();
      }
    };
    document.addEventListener('click', saved, true);
    const created = URL.createObjectURL;
    URL.createObjectURL = () => 'blob:export';
    try {
      const t = new FakeTransport()
        .on('history', () => history(2, {}))
        .on('figures', () => ({ figures: [{ ...CHART, vega_lite: { mark: 'bar', data: { values: [{ a: 1, b: 2 }] }, encoding: { x: { field: 'a' }, y: { field: 'b' } } } }] }))
        .on('export', p => ({
          data: { name: `v${p.version}_Version_${p.version}-${p.figure}.${p.format}`, format: `.${p.format}`, media_type: 'image/png', size: 1, cells: 0, rasterized: false },
          buffers: [new Uint8Array([1]).buffer]
        }));
      const el = mount(t);
      const exportAll = async () => {
        await settle(10);
        for (const b of el.querySelectorAll<HTMLButtonElement>('.sds-figure-tools button')) {
          b.click();
          await settle(2);
        }
      };
      app!.select(2);
      await exportAll();
      app!.select(1);
      await exportAll();
      expect(t.callsOf('export').map(c => (c as { version: number }).version)).toEqual([2, 2, 2, 1, 1, 1]);
      expect(names.sort()).toEqual([
        'v1_Version_1-markers_bar.pdf',
        'v1_Version_1-markers_bar.png',
        'v1_Version_1-markers_bar.svg',
        'v2_Version_2-markers_bar.pdf',
        'v2_Version_2-markers_bar.png',
        'v2_Version_2-markers_bar.svg'
      ]);
    } finally {
      document.removeEventListener('click', saved, true);
      URL.createObjectURL = created;
    }
  });

  it('asks for a canvas figure only once it scrolls into view', async () => {
    const viewport = new FakeViewport(false);
    viewport.install();
    const below = { ...CANVAS, id: 'below', title: 'Below the fold' };
    const x = new Float32Array([10, 20, 30]);
    const t = new FakeTransport()
      .on('history', () => history(1))
      .on('figures', () => ({ figures: [CANVAS, below] }))
      .on('canvas', () => ({ data: canvasPayload(3), buffers: [x.buffer, x.buffer, new Uint16Array([0, 1, 0]).buffer] }));
    const el = mount(t);
    await settle(10);
    const bodies = [...el.querySelectorAll<HTMLElement>('.sds-figure .sds-figure-body')];
    expect(bodies.map(b => b.dataset.lazy)).toEqual(['waiting', 'waiting']);
    expect(t.callsOf('canvas')).toEqual([]);
    viewport.scrollTo(bodies[1]);
    await settle(10);
    expect(t.callsOf('canvas')).toEqual([{ version: 1, figure: 'below' }]);
    expect(bodies.map(b => b.dataset.lazy)).toEqual(['waiting', 'loaded']);
  });

  it('shows a canvas with missing buffers as an in-place error', async () => {
    const t = new FakeTransport()
      .on('history', () => history(1))
      .on('figures', () => ({ figures: [CANVAS] }))
      .on('canvas', () => ({ data: canvasPayload(3), buffers: [new Float32Array(3).buffer] }));
    const el = mount(t);
    await settle(10);
    expect(text(el.querySelector('.sds-figure .sds-error'))).toContain('missing its y buffer');
  });

  it('keeps other figures when one chart fails, and shows a figures error in place', async () => {
    const failing = {
      specs: [] as object[],
      render: async () => {
        throw new Error('bad spec');
      },
      click: () => undefined
    };
    const t = new FakeTransport()
      .on('history', () => history(1))
      .on('figures', () => ({ figures: [CHART, ODD], error: { kind: 'figure', message: 'figure x is not JSON' } }));
    const el = mount(t, failing);
    await settle(10);
    expect(text(el.querySelector('.sds-figures > .sds-error'))).toContain('figure x is not JSON');
    expect(text(el.querySelector('[data-figure="markers_bar"] .sds-error'))).toContain('bad spec');
    expect(text(el.querySelector('[data-figure="odd"] .sds-reason'))).toContain('volume');
  });

  it('shows a failed figures request in place', async () => {
    const t = new FakeTransport()
      .on('history', () => history(1))
      .on('figures', () => {
        throw new TransportError('bad-request', 'stack refused: cycle');
      });
    const el = mount(t);
    await settle(10);
    expect(text(el.querySelector('.sds-figures .sds-error'))).toContain('stack refused: cycle');
    expect(el.querySelectorAll('.sds-history-row').length).toBe(2);
  });

  it('says so when a version has no figures', async () => {
    const t = new FakeTransport().on('history', () => history(1)).on('figures', () => ({ figures: [] }));
    const el = mount(t);
    await settle(10);
    expect(text(el.querySelector('.sds-figures'))).toBe('This version has no figures.');
  });
});

describe('canvas decoding and rasterising', () => {
  it('decodes buffers in protocol order, including an RGBA image', () => {
    const payload: CanvasPayload = {
      ...canvasPayload(2),
      color: { mode: 'continuous', column: 'score', colormap: 'viridis', min: 0, max: 1, lut: ['#000000', '#ffffff'] },
      image: { width: 2, height: 1, bounds: [0, 0, 100, 100], channels: [{ name: 'DAPI', color: '#0000ff' }] }
    };
    const frame = encodeFrame(payload, [
      new Float32Array([1, 2]),
      new Float32Array([3, 4]),
      new Float32Array([0.25, 0.75]),
      new Uint8ClampedArray([1, 2, 3, 4, 5, 6, 7, 8])
    ]);
    const reply = decodeFrame<CanvasPayload>(frame);
    expect(reply.data).toEqual(payload);
    const d = decodeCanvas(reply.data, reply.buffers);
    expect([...d.x]).toEqual([1, 2]);
    expect([...d.y]).toEqual([3, 4]);
    expect([...(d.value as Float32Array)]).toEqual([0.25, 0.75]);
    expect([...d.image!]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('decodes the cells\' polygons after the image, and refuses starts that disagree with the vertices', () => {
    const payload: CanvasPayload = {
      ...canvasPayload(2),
      color: { mode: 'none' },
      shapes: { kind: 'polygons', element: 'cell_boundaries', n_vertices: 7 }
    };
    const starts = new Uint32Array([0, 4, 7]);
    const vertices = new Float32Array([0, 0, 1, 0, 1, 1, 0, 0, 5, 5, 6, 5, 5, 5]);
    const reply = decodeFrame<CanvasPayload>(encodeFrame(payload, [new Float32Array(2), new Float32Array(2), starts, vertices]));
    const d = decodeCanvas(reply.data, reply.buffers);
    expect(d.shapes?.kind).toBe('polygons');
    if (d.shapes?.kind === 'polygons') {
      expect([...d.shapes.starts]).toEqual([0, 4, 7]);
      expect(d.shapes.vertices.length).toBe(14);
    }
    const short = encodeFrame(payload, [new Float32Array(2), new Float32Array(2), starts, vertices.subarray(0, 10)]);
    const bad = decodeFrame<CanvasPayload>(short);
    expect(() => decodeCanvas(bad.data, bad.buffers)).toThrow(/vertices buffer has 10 float32 values/);
  });

  it('decodes circle radii', () => {
    const payload: CanvasPayload = { ...canvasPayload(2), color: { mode: 'none' }, shapes: { kind: 'circles', element: 'spots' } };
    const reply = decodeFrame<CanvasPayload>(
      encodeFrame(payload, [new Float32Array(2), new Float32Array(2), new Float32Array([27.5, 30])])
    );
    const d = decodeCanvas(reply.data, reply.buffers);
    expect(d.shapes?.kind === 'circles' && [...d.shapes.radius]).toEqual([27.5, 30]);
  });

  it('decodes misaligned DataViews by copying', () => {
    const raw = new Uint8Array(1 + 8);
    raw.set(new Uint8Array(new Float32Array([5, 6]).buffer), 1);
    const view = new DataView(raw.buffer, 1, 8);
    const payload = { ...canvasPayload(2), color: { mode: 'none' as const } };
    const d = decodeCanvas(payload, [view, view]);
    expect([...d.x]).toEqual([5, 6]);
    expect(d.value).toBeNull();
  });

  it('puts points where the view says, in their category colours', () => {
    const w = 10;
    const hgt = 10;
    const pixels = new Uint8ClampedArray(w * hgt * 4);
    const data = {
      x: new Float32Array([0, 9, 5, 500]),
      y: new Float32Array([0, 9, 2, 500]),
      value: new Uint16Array([0, 1, 7, 0]),
      image: null
    };
    const color = { mode: 'categorical' as const, column: 'c', categories: ['a', 'b'], colors: ['#ff0000', '#0000ff'] };
    // identity view: target at the centre, one pixel per unit
    const drawn = rasterizePoints(pixels, data, color, { width: w, height: hgt, target: [5, 5], scale: 1, rotation: 0 }, 1);
    expect(drawn).toBe(3); // the point at 500,500 is out of view
    const at = (px: number, py: number) => [...pixels.slice((py * w + px) * 4, (py * w + px) * 4 + 4)];
    expect(at(0, 0)).toEqual([255, 0, 0, 255]);
    expect(at(9, 9)).toEqual([0, 0, 255, 255]);
    expect(at(5, 2)).toEqual([128, 128, 128, 128]); // code 7: no such category
    expect(at(1, 1)).toEqual([0, 0, 0, 0]);
  });

  it('rasterises a million points, every one, dark rows to light', () => {
    const n = 1_000_000;
    const x = new Float32Array(n);
    const y = new Float32Array(n);
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      x[i] = (i % 1000) / 10;
      y[i] = Math.floor(i / 1000) / 10;
      v[i] = i / n;
    }
    const payload: CanvasPayload = {
      ...canvasPayload(n),
      color: { mode: 'continuous', column: 's', colormap: 'gray', min: 0, max: 1, lut: ['#000000', '#808080', '#ffffff'] }
    };
    const view = fitView(payload.bounds, 800, 800);
    const pixels = new Uint8ClampedArray(800 * 800 * 4);
    // (its speed is benchmarks/bench_canvas.py's to report, not a test's to bound)
    const drawn = rasterizePoints(pixels, { x, y, value: v, image: null }, payload.color, view, 2);
    expect(drawn).toBe(n);
    // the first rows are dark, the last rows light
    const lum = (py: number) => pixels[(py * 800 + 400) * 4];
    expect(lum(25)).toBe(0);
    expect(lum(775)).toBe(255);
  });

  it('skips cells without a position (NaN), at any point size', () => {
    const data = { x: new Float32Array([NaN, 2, 3]), y: new Float32Array([1, NaN, 3]), value: null, image: null };
    const view = { width: 8, height: 8, target: [4, 4] as [number, number], scale: 1, rotation: 0 };
    for (const size of [1, 3]) {
      const pixels = new Uint8ClampedArray(8 * 8 * 4);
      expect(rasterizePoints(pixels, data, { mode: 'none' }, view, size, '#00ff00')).toBe(1);
      expect(pixels[0 + 3]).toBe(0); // nothing at the corner
      expect([...pixels.slice((3 * 8 + 3) * 4, (3 * 8 + 3) * 4 + 4)]).toEqual([0, 255, 0, 255]);
    }
  });

  it('draws symmetric discs', () => {
    for (const d of [3, 4, 8]) {
      const offs = disc(d);
      const xs = [...offs].filter((_, i) => i % 2 === 0);
      const ys = [...offs].filter((_, i) => i % 2 === 1);
      // as many pixels left of the centre as right of it, and above as below
      const c = -Math.floor((d - 1) / 2) + (d - 1) / 2;
      expect(xs.filter(x => x < c).length).toBe(xs.filter(x => x > c).length);
      expect(ys.filter(y => y < c).length).toBe(ys.filter(y => y > c).length);
      expect(Math.max(...xs) - Math.min(...xs) + 1).toBe(d);
    }
    expect(disc(1).length).toBe(2);
  });

  it('frames the saved viewport with 2^zoom pixels per unit', () => {
    const view = savedView({ ...canvasPayload(1), viewport: { target: [10, 20], zoom: 1, rotation: 0 } }, 100, 50);
    expect(view.scale).toBe(2);
    expect(view.target).toEqual([10, 20]);
    expect(packColor('#102030')).toBe(((255 << 24) | (0x30 << 16) | (0x20 << 8) | 0x10) >>> 0);
    expect(packColor('#abc')).toBe(packColor('#aabbcc'));
  });
});
