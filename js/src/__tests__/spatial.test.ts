import { afterEach, describe, expect, it } from 'vitest';

import type { CanvasData } from '../app/spatial/raster';
import { discVertices, edgeQuads, polygonsOf } from '../app/spatial/geometry';
import { SpatialFigure } from '../app/figures/spatialfigure';
import { intensity } from '../app/figures/imagechannels';
import type { CanvasPayload } from '../app/shared/types';
import { FakeTransport } from './fixtures';

function payload(): CanvasPayload {
  return {
    n_cells: 5,
    bounds: [0, 0, 100, 100],
    viewport: { target: [50, 50], zoom: 0, rotation: 0 },
    color: { mode: 'categorical', column: 'regions', categories: ['tumor', 'stroma'], colors: ['#ff0000', '#00ff00'] },
    point_size: 4,
    image: null,
    unit: 'micrometer',
    obs_columns: ['regions', 'score']
  };
}

function data(): CanvasData {
  return {
    x: Float32Array.from([50, 51, 10, 90, NaN]),
    y: Float32Array.from([50, 49, 10, 90, 20]),
    value: Uint16Array.from([0, 1, 0, 1, 0]),
    image: null
  };
}

const settle = () => new Promise(r => setTimeout(r, 120));
let figure: SpatialFigure | null = null;

afterEach(() => {
  figure?.dispose();
  figure?.node.remove();
  figure = null;
});

function mount(t = new FakeTransport()): SpatialFigure {
  figure = new SpatialFigure(t, 1, 'tissue', payload(), data(), false);
  document.body.append(figure.node);
  figure.start();
  return figure;
}

describe('spatial figure (Canvas 2D, as without WebGL)', () => {
  it('says under the drawing why its cells have no outlines when their shapes element is past MAX_SHAPES', () => {
    const note = 'shapes/cells holds 5,000,000 shapes; at most 4,194,304 (MAX_SHAPES) are read. The cells are drawn at their positions, without outlines.';
    figure = new SpatialFigure(new FakeTransport(), 1, 'tissue', { ...payload(), shapes_note: note }, data(), false);
    expect(figure.node.querySelector('.sds-shapes-note')?.textContent).toBe(note);
    expect(figure.node.querySelector('.sds-canvas-note')?.textContent).toBe('5 cells');
    figure.dispose();
    figure = new SpatialFigure(new FakeTransport(), 1, 'tissue', payload(), data(), false);
    expect(figure.node.querySelector('.sds-shapes-note')).toBeNull();
  });

  it('counts the cells of the saved region, zooms with the buttons and fits back', async () => {
    const f = mount();
    await settle();
    expect(f.node.dataset.renderer).toBe('2d');
    expect(f.node.querySelector('.sds-canvas-note')?.textContent).toBe('5 cells');
    // the saved region (800 units around the centre) holds every placed cell; NaN is nowhere
    expect(f.node.dataset.inView).toBe('4');
    const zoomIn = f.node.querySelector<HTMLButtonElement>('.sds-zoom-in')!;
    for (let i = 0; i < 12; i++) {
      zoomIn.click();
    }
    await settle();
    expect(f.node.dataset.inView).toBe('2'); // only the two cells at the centre
    f.node.querySelector<HTMLButtonElement>('.sds-fit')!.click();
    await settle();
    expect(f.node.dataset.inView).toBe('4');
    expect(f.node.querySelector('.sds-canvas-inview')?.textContent).toBe('· 4 in view');
  });

  it('the keyboard pans and zooms the focused drawing', async () => {
    const f = mount();
    const canvas = f.plot!.canvas;
    expect(canvas.getAttribute('aria-label')).toMatch(/5 cells\. Drag or arrow keys to pan/);
    const region = () => f.node.dataset.inView;
    for (let i = 0; i < 12; i++) {
      canvas.dispatchEvent(new KeyboardEvent('keydown', { key: '+', bubbles: true }));
    }
    await settle();
    expect(region()).toBe('2');
    for (let i = 0; i < 40; i++) {
      canvas.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true }));
    }
    await settle();
    expect(region()).toBe('0'); // panned off the centre cells
  });

  it('legend categories are toggle buttons that hide their cells in the drawing', async () => {
    const f = mount();
    const toggles = [...f.node.querySelectorAll<HTMLButtonElement>('.sds-legend-toggle')];
    expect(toggles.map(b => b.textContent)).toEqual(['tumor', 'stroma']);
    expect(toggles[0].getAttribute('aria-pressed')).toBe('true');
    toggles[0].click();
    const after = f.node.querySelector<HTMLButtonElement>('.sds-legend-toggle')!;
    expect(after.getAttribute('aria-pressed')).toBe('false');
    expect(after.title).toBe('Show tumor');
    const plot = f.drawing2d();
    const color = plot.payload.color;
    expect(color.mode === 'categorical' && color.colors).toEqual(['#00000000', '#00ff00']);
    expect(f.coloring()).toEqual({ hidden: '0' }); // what an export is asked to hide
    after.click();
    expect(f.node.querySelector('.sds-legend-toggle')!.getAttribute('aria-pressed')).toBe('true');
    expect(f.coloring()).toEqual({});
  });

  it('shows a scale bar in the coordinate system unit', async () => {
    const f = mount();
    await settle();
    const bar = f.node.querySelector<HTMLElement>('.sds-scalebar')!;
    expect(bar.hidden).toBe(false);
    expect(bar.textContent).toMatch(/^\d+ µm$/);
  });
});

describe('colorBy: another obs column or a gene', () => {
  it('asks the service, recolors and rebuilds the legend; {} restores the figure coloring', async () => {
    const t = new FakeTransport().on('color_values', params => {
      if (params.gene === 'CD3E') {
        return {
          data: { mode: 'continuous', column: 'CD3E', colormap: 'viridis', min: 0, max: 4, lut: ['#000000', '#ffffff'] },
          buffers: [Float32Array.from([0, 1, 2, 3, 4]).buffer]
        };
      }
      throw new Error(`No gene ${JSON.stringify(params.gene)} in this table's var names.`);
    });
    const f = mount(t);
    await f.colorBy({ gene: 'CD3E' });
    expect(t.callsOf('color_values')).toEqual([{ version: 1, figure: 'tissue', gene: 'CD3E' }]);
    expect(f.node.dataset.colorBy).toBe('CD3E');
    expect(f.node.querySelector('.sds-legend-title')?.textContent).toBe('CD3E (viridis)');
    expect(f.node.querySelector('.sds-legend-toggle')).toBeNull();
    const plot = f.drawing2d();
    expect(plot.payload.color.mode).toBe('continuous');
    expect([...(plot.data.value as Float32Array)]).toEqual([0, 1, 2, 3, 4]);
    expect(f.coloring()).toEqual({ gene: 'CD3E', limits: '0.04,3.96' }); // an export asked for now is colored by it too, clipped at the 1st and 99th percentiles as shown
    await expect(f.colorBy({ gene: 'NOPE' })).rejects.toThrow(/No gene "NOPE"/);
    expect(f.node.querySelector('.sds-color-status')?.textContent).toMatch(/No gene/);
    await f.colorBy({});
    expect(f.node.querySelectorAll('.sds-legend-toggle').length).toBe(2);
    // the toolbar offers every obs column
    const options = [...f.node.querySelectorAll('.sds-color-by option')].map(o => o.textContent);
    expect(options).toEqual(['regions (saved)', 'regions', 'score']);
  });

  it('offers the columns the service finds worth colouring by, not a single value or an ID (issue 40, item 5)', () => {
    const given = { ...payload(), obs_columns: ['region', 'cell_id', 'regions', 'score'], color_columns: ['regions', 'score'] };
    figure = new SpatialFigure(new FakeTransport(), 1, 'tissue', given, data(), false);
    document.body.append(figure.node);
    const options = [...figure.node.querySelectorAll('.sds-color-by option')].map(o => o.textContent);
    expect(options).toEqual(['regions (saved)', 'regions', 'score']);
  });

  it('the color dropdown says what the view shows: a gene, a highlight, a change, a column, the saved coloring', async () => {
    const categorical = {
      data: { mode: 'categorical' as const, column: 'regions', categories: ['tumor', 'stroma'], colors: ['#ff0000', '#888888'] },
      buffers: [Uint16Array.from([0, 1, 0, 1, 0]).buffer]
    };
    const t = new FakeTransport().on('color_values', params =>
      params.gene
        ? {
            data: { mode: 'continuous', column: String(params.gene), colormap: 'viridis', min: 0, max: 4, lut: ['#000000', '#ffffff'] },
            buffers: [Float32Array.from([0, 1, 2, 3, 4]).buffer]
          }
        : categorical
    );
    const f = mount(t);
    const select = f.node.querySelector<HTMLSelectElement>('.sds-color-by')!;
    const shown = () => select.selectedOptions[0]?.textContent;
    expect(shown()).toBe('regions (saved)');
    await f.colorBy({ gene: 'CD3E' });
    expect(shown()).toBe('gene CD3E');
    await f.colorBy({ column: 'regions', highlight: 'tumor' });
    expect(shown()).toBe('regions: tumor highlighted');
    await f.colorBy({ column: 'regions', against: 2 });
    expect(shown()).toBe('regions: changed since v2');
    // one extra option at most, gone when a column is chosen again
    expect(select.querySelectorAll('.sds-color-shown').length).toBe(1);
    await f.colorBy({ column: 'score' });
    expect(shown()).toBe('score');
    expect(select.querySelector('.sds-color-shown')).toBeNull();
    await f.colorBy({ gene: 'MS4A1', layer: 'counts' });
    expect(shown()).toBe('gene MS4A1 (counts)');
    await f.colorBy({});
    expect(shown()).toBe('regions (saved)');
    expect(select.querySelector('.sds-color-shown')).toBeNull();
  });
});

describe('the caption under a recolored view', () => {
  it('says what is shown now while the coloring is not the saved one, as text', async () => {
    const t = new FakeTransport().on('color_values', params => ({
      data: { mode: 'continuous', column: String(params.gene ?? params.column), colormap: 'viridis', min: 0, max: 4, lut: ['#000000', '#ffffff'] },
      buffers: [Float32Array.from([0, 1, 2, 3, 4]).buffer]
    }));
    const f = mount(t);
    const holder = document.createElement('figure');
    const caption = document.createElement('figcaption');
    caption.className = 'sds-caption';
    caption.textContent = 'Cells colored by regions';
    holder.append(f.node, caption);
    document.body.append(holder);
    await f.colorBy({ gene: '<b>CD3E</b>' });
    expect(caption.textContent).toBe('Cells colored by regions Shown now: colored by gene <b>CD3E</b> (the caption is the saved view\'s).');
    expect(caption.querySelector('b')).toBeNull();
    await f.colorBy({ column: 'score' });
    expect(caption.querySelectorAll('.sds-caption-now').length).toBe(1);
    expect(caption.textContent).toMatch(/colored by score/);
    await f.colorBy({ column: 'regions' }); // the saved column: the caption is true again
    expect(caption.textContent).toBe('Cells colored by regions');
    await f.colorBy({ gene: 'CD3E' });
    await f.colorBy({});
    expect(caption.textContent).toBe('Cells colored by regions');
    holder.remove();
  });
});

describe('export buttons', () => {
  it('ask the service for the file (the one renderer) and save it under the name it gives', async () => {
    const { exportButtons } = await import('../app/figures/figures');
    const bytes = new TextEncoder().encode('%PDF-1.4 drawn');
    const t = new FakeTransport().on('export', params => ({
      data: { name: `v3_Redrawn_regions-fig-regions.${params.format}`, format: `.${params.format}`, media_type: 'application/pdf', size: bytes.length, cells: 2, rasterized: false },
      buffers: [bytes.buffer]
    }));
    const saved: { name: string; blob: Blob }[] = [];
    const blobs = new Map<string, Blob>();
    const created = URL.createObjectURL;
    const revoked = URL.revokeObjectURL;
    URL.createObjectURL = (b: Blob) => (blobs.set(`blob:${blobs.size}`, b), `blob:${blobs.size - 1}`);
    URL.revokeObjectURL = () => undefined;
    const click = HTMLAnchorElement.prototype.click;
    HTMLAnchorElement.prototype.click = function (this: HTMLAnchorElement) {
      saved.push({ name: this.download, blob: blobs.get(this.getAttribute('href')!)! });
    };
    try {
      const buttons = exportButtons(t, 3, 'fig-regions', () => ({ view: '0,0,50,50', column: 'niche', hidden: '0,2' }));
      expect(buttons.map(b => b.textContent)).toEqual(['SVG', 'PNG', 'PDF']);
      buttons[2].click();
      // issue 40, item 9: the button says an export is under way until the file is saved
      expect(buttons[2].textContent).toBe('PDF…');
      expect(buttons[2].disabled).toBe(true);
      expect(buttons[2].getAttribute('aria-busy')).toBe('true');
      await new Promise(r => setTimeout(r, 0));
      expect(buttons[2].textContent).toBe('PDF');
      expect(buttons[2].disabled).toBe(false);
      expect(t.callsOf('export')).toEqual([{ version: 3, figure: 'fig-regions', format: 'pdf', view: '0,0,50,50', column: 'niche', hidden: '0,2' }]);
      expect(saved.map(s => s.name)).toEqual(['v3_Redrawn_regions-fig-regions.pdf']);
      expect(saved[0].blob.type).toBe('application/pdf');
      expect(new Uint8Array(await saved[0].blob.arrayBuffer())).toEqual(bytes);
      // a chart's buttons send no view
      exportButtons(t, 3, 'fig-chart')[0].click();
      await new Promise(r => setTimeout(r, 0));
      expect(t.callsOf('export')[1]).toEqual({ version: 3, figure: 'fig-chart', format: 'svg' });
    } finally {
      HTMLAnchorElement.prototype.click = click;
      URL.createObjectURL = created;
      URL.revokeObjectURL = revoked;
    }
  });
});

describe('cells as outlines', () => {
  it('a typical cell width is the median outline extent, so one huge outline does not skew it', async () => {
    const { typicalWidth } = await import('../app/spatial/spatial');
    // three squares of side 2, 2 and 50 (cell i: vertices starts[i]..starts[i+1])
    const squares = [
      [0, 0, 2, 0, 2, 2, 0, 2],
      [10, 10, 12, 10, 12, 12, 10, 12],
      [0, 0, 50, 0, 50, 50, 0, 50]
    ];
    const vertices = new Float32Array(squares.flat());
    const starts = new Uint32Array([0, 4, 8, 12]);
    expect(typicalWidth(starts, vertices, 3)).toBe(2);
    expect(typicalWidth(new Uint32Array([0, 0]), new Float32Array(0), 1)).toBe(0);
  });

  it('draws cells as centroids, filled outlines, then outlines as the zoom makes them bigger', async () => {
    const { SpatialStage } = await import('../app/spatial/spatial');
    // two 10-unit squares
    const starts = Uint32Array.from([0, 5, 10]);
    const vertices = Float32Array.from([0, 0, 10, 0, 10, 10, 0, 10, 0, 0, 20, 20, 30, 20, 30, 30, 20, 30, 20, 20]);
    const p: CanvasPayload = { ...payload(), bounds: [0, 0, 1000, 1000], n_cells: 2, shapes: { kind: 'polygons', element: 'cells', n_vertices: 10 } };
    const d: CanvasData = {
      x: Float32Array.from([5, 25]),
      y: Float32Array.from([5, 25]),
      value: Uint16Array.from([0, 1]),
      image: null,
      shapes: { kind: 'polygons', starts, vertices }
    };
    const stage = new SpatialStage(p, d);
    // 100 px across: zoom from 2^-3.4 (the 1000-unit data fitted) to 2^3.3 (a 10-unit cell filling it)
    (stage as unknown as { size: [number, number] }).size = [100, 100];
    const at = (zoom: number) => {
      stage.apply({ target: [15, 15], zoom });
      return stage.drawnAs;
    };
    // 10 units wide: 2.5 px at 2^-2, 5 px at 2^-1, 20 px at 2^1
    expect(at(-2)).toBe('points');
    expect(at(-1)).toBe('filled');
    expect(at(1)).toBe('outlined');
    expect(stage.node.dataset.cells).toBe('outlined');
    // colors go to every vertex of each cell (of the cells near the view, drawn as geometry)
    (stage as unknown as { size: [number, number] }).size = [400, 400];
    stage.setColors(p.color, d.value, '#1f77b4');
    const fills = (stage as unknown as { subset: { cells: { polygons: { fills: Uint8Array } } } }).subset.cells.polygons.fills;
    expect([...fills.subarray(0, 4)]).toEqual([255, 0, 0, 255]); // cell 0 (tumor, red), first vertex
    expect([...fills.subarray(36, 40)]).toEqual([0, 255, 0, 255]); // cell 1 (stroma, green), last vertex
    stage.dispose();
  });
});

describe('polygon geometry for the WebGL view', () => {
  // cell 0: a closed triangle (first vertex repeated); cell 1: an open square; cell 2: a stray point
  const starts = Uint32Array.from([0, 4, 8, 9]);
  const vertices = Float32Array.from([0, 0, 4, 0, 0, 3, 0, 0, 10, 10, 12, 10, 12, 12, 10, 12, 7, 7]);
  const red = 0xff0000ff;
  const blue = 0xffff0000;

  it('flattens the picked cells in order, with each cell color per vertex', () => {
    const p = polygonsOf([1, 0], starts, vertices, Uint32Array.from([blue, red]), 8);
    expect(Array.from(p.starts)).toEqual([0, 4, 8]);
    expect(Array.from(p.vertices.subarray(0, 8))).toEqual([10, 10, 12, 10, 12, 12, 10, 12]);
    expect(Array.from(new Uint32Array(p.fills.buffer))).toEqual([blue, blue, blue, blue, red, red, red, red]);
  });

  it('outlines every edge once: an open ring gets its closing edge, a closed one no zero-length edge', () => {
    const p = polygonsOf([0, 1, 2], starts, vertices, Uint32Array.from([red, blue, red]), 9);
    const edges: number[][] = [];
    for (let e = 0; e < p.segments.length / 4; e++) {
      edges.push(Array.from(p.segments.subarray(4 * e, 4 * e + 4)));
    }
    expect(edges).toEqual([
      [0, 0, 4, 0],
      [4, 0, 0, 3],
      [0, 3, 0, 0],
      [10, 10, 12, 10],
      [12, 10, 12, 12],
      [12, 12, 10, 12],
      [10, 12, 10, 10]
    ]);
    const ends = new Uint32Array(p.segmentColors.buffer, p.segmentColors.byteOffset, p.segmentColors.length / 4);
    expect(Array.from(ends)).toEqual([red, red, red, red, red, red, blue, blue, blue, blue, blue, blue, blue, blue]);
  });
});

describe('outline edges as quads (2x screens)', () => {
  it('puts each edge on the six corners of its quad, both ends and its color on each', () => {
    const segments = Float32Array.from([0, 0, 4, 0, 4, 0, 4, 3]);
    const colors = new Uint8Array(new Uint32Array([0xff0000ff, 0xff0000ff, 0xffff0000, 0xffff0000]).buffer);
    const q = edgeQuads(segments, colors);
    expect(q.corners).toHaveLength(24);
    expect(Array.from(q.starts.subarray(0, 2))).toEqual([0, 0]);
    expect(Array.from(q.ends.subarray(10, 12))).toEqual([4, 0]); // edge 0's last corner
    expect(Array.from(q.starts.subarray(12, 14))).toEqual([4, 0]); // edge 1's first
    expect(Array.from(q.ends.subarray(12, 14))).toEqual([4, 3]);
    // along 0..1 and the side -1 / 1: two triangles over the edge's rectangle
    expect(Array.from(q.corners.subarray(0, 12))).toEqual([0, -1, 1, -1, 1, 1, 0, -1, 1, 1, 0, 1]);
    expect(Array.from(new Uint32Array(q.colors.buffer))).toEqual([...Array(6).fill(0xff0000ff), ...Array(6).fill(0xffff0000)]);
  });
});

describe('disc geometry for the WebGL view', () => {
  it('repeats each disc on the six corners of its quad, with its radius and colors', () => {
    const positions = Float32Array.from([1, 2, 30, 40]);
    const fills = new Uint8Array(new Uint32Array([0xff0000ff, 0x00000000]).buffer);
    const lines = new Uint8Array(new Uint32Array([0xbe000000, 0]).buffer);
    const v = discVertices(2, positions, Float32Array.from([0.5, 3]), 9, fills, lines);
    expect(v.positions).toHaveLength(24);
    expect(Array.from(v.positions.subarray(10, 14))).toEqual([1, 2, 30, 40]); // disc 0's last corner, disc 1's first
    expect(Array.from(v.radii)).toEqual([0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 3, 3, 3, 3, 3, 3]);
    // two triangles covering the square -1..1
    expect(Array.from(v.corners.subarray(0, 12))).toEqual([-1, -1, 1, -1, 1, 1, -1, -1, 1, 1, -1, 1]);
    expect(Array.from(new Uint32Array(v.fills.buffer))).toEqual([...Array(6).fill(0xff0000ff), ...Array(6).fill(0)]);
    expect(Array.from(new Uint32Array(v.lines.buffer))).toEqual([...Array(6).fill(0xbe000000), ...Array(6).fill(0)]);
    // no radii: every disc the one radius (pixels)
    expect(Array.from(discVertices(2, positions, null, 9, fills, lines).radii)).toEqual(Array(12).fill(9));
  });
});

describe('image tiles in the Canvas 2D drawing', () => {
  it('asks for the tiles of the region it shows, and draws and exports them', async () => {
    // a 4 × 4 px overview of a 64 × 64 px level-0 image in 32 px tiles over the 100-unit square
    const bounds: [number, number, number, number] = [0, 0, 100, 100];
    const p = { ...payload(), image: { width: 4, height: 4, bounds, channels: [{ name: 'DAPI', color: '#0000ff' }] } };
    const d = { ...data(), image: new Uint8ClampedArray(4 * 4 * 4) };
    const t = new FakeTransport()
      .on('channels', () => ({
        data: {
          width: 4,
          height: 4,
          bounds,
          channels: [{ name: 'DAPI', color: '#0000ff', visible: true, contrast_limits: [0, 255], range: [0, 255] }],
          levels: [
            { width: 64, height: 64, tile: 32, bounds },
            { width: 4, height: 4, tile: 4, bounds }
          ]
        },
        buffers: [new Uint8Array(16).buffer]
      }))
      .on('image_tile', params => {
        const [x, y] = [Number(params.x), Number(params.y)];
        return {
          data: { level: 0, x, y, width: 32, height: 32, channels: 1, bounds: [x * 50, y * 50, x * 50 + 50, y * 50 + 50] },
          buffers: [new Uint8Array(32 * 32).fill(255).buffer]
        };
      });
    figure = new SpatialFigure(t, 1, 'tissue', p as CanvasPayload, d, false);
    document.body.append(figure.node);
    figure.start();
    await settle();
    const zoomIn = figure.node.querySelector<HTMLButtonElement>('.sds-zoom-in')!;
    for (let i = 0; i < 6; i++) {
      zoomIn.click();
    }
    await settle();
    await settle();
    // the last view's tiles: zoomed in on the centre, the four around it
    const asked = (t.callsOf('image_tile') as { level: number; x: number; y: number }[]).filter(a => figure!.drawing2d().tiles.some(tile => tile.key === `0/${a.x}/${a.y}`));
    expect(asked.map(a => `${a.x}/${a.y}`).sort()).toEqual(['0/0', '0/1', '1/0', '1/1']);
    expect(asked.every(a => a.level === 0)).toBe(true);
    expect(figure.node.dataset.tileLevel).toBe('0');
    // the drawing carries the tiles on screen, colored in the channel's blue
    const plot = figure.drawing2d();
    expect(plot.tiles.map(tile => [tile.width, tile.rgba?.[2]])).toEqual(asked.map(() => [32, 255]));
    expect(figure.node.dataset.tiles).toBe(String(asked.length));
    // an export is asked for with the channels as the controls set them (raw limits, no range)
    const on = figure.node.querySelector<HTMLInputElement>('.sds-channel-on')!;
    on.checked = false;
    on.dispatchEvent(new Event('change'));
    expect(JSON.parse(figure.coloring().channels!)).toEqual([{ name: 'DAPI', color: '#0000ff', visible: false, contrast_limits: [0, 255] }]);
  });

  it('says a contrast limit in the image\'s own intensities, read aloud and on hover', async () => {
    const bounds: [number, number, number, number] = [0, 0, 100, 100];
    const p = { ...payload(), image: { width: 4, height: 4, bounds, channels: [{ name: 'DAPI', color: '#0000ff' }] } };
    const d = { ...data(), image: new Uint8ClampedArray(4 * 4 * 4) };
    const t = new FakeTransport().on('channels', () => ({
      data: {
        width: 4,
        height: 4,
        bounds,
        // a 16-bit image whose limits sit inside its range
        channels: [{ name: 'DAPI', color: '#0000ff', visible: true, contrast_limits: [1000, 40000], range: [0, 65535] }],
        levels: [{ width: 4, height: 4, tile: 4, bounds }]
      },
      buffers: [new Uint8Array(16).buffer]
    }));
    figure = new SpatialFigure(t, 1, 'tissue', p as CanvasPayload, d, false);
    document.body.append(figure.node);
    figure.start();
    await settle();
    const [low, high] = [...figure.node.querySelectorAll<HTMLInputElement>('.sds-contrast')];
    // the track's steps (0-255) stand for 0-65,535: the words are the intensity the step means
    expect(low.getAttribute('aria-label')).toBe('DAPI contrast minimum');
    expect(low.getAttribute('aria-valuetext')).toBe(intensity(0 + (Number(low.value) / 255) * 65535, [0, 65535]));
    expect(high.getAttribute('aria-valuetext')).toBe(intensity((Number(high.value) / 255) * 65535, [0, 65535]));
    expect(Number(high.getAttribute('aria-valuetext')!.replace(/,/g, ''))).toBeGreaterThan(39000);
    high.value = '255';
    high.dispatchEvent(new Event('input'));
    expect(high.getAttribute('aria-valuetext')).toBe('65,535');
    expect(high.title).toBe('DAPI contrast maximum: 65,535');
    expect(intensity(0.123456, [0, 1])).toBe('0.123');
  });
});

describe('the camera keeps the tissue on screen (issue 40, item 4)', () => {
  it('a drag takes the view to the tissue edge at most, never off it', async () => {
    const { keepOnTissue } = await import('../app/spatial/camera');
    const bounds: [number, number, number, number] = [0, 0, 100, 50];
    expect(keepOnTissue([40, 20], bounds)).toEqual([40, 20]);
    expect(keepOnTissue([-1e6, 1e6], bounds)).toEqual([0, 50]);
    expect(keepOnTissue([250, -3], bounds)).toEqual([100, 0]);
    expect(keepOnTissue([Number.NaN, 10], bounds)).toEqual([50, 10]);
  });
});
