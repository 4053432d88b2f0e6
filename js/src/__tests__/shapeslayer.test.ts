import { describe, expect, it } from 'vitest';

import { offerShapes } from '../app/figures/layeroffers';
import { LayersMenu } from '../app/figures/layersmenu';
import { ShapesLayers, rgbOf } from '../app/figures/shapes';
import type { CanvasPayload, ShapesIndex, ShapesTileData } from '../app/shared/types';
import { mergeShapeTiles, shapeSpacing } from '../app/spatial/shapetiles';
import { h } from '../app/shared/dom';
import { FakeTransport, settle } from './fixtures';
import { layerContext, layerStage } from './layerkit';

/** Two squares of 10 units in a 100-unit element, cut on a 2 x 1 grid: the second square lies across both tiles. */
const SQUARE_A = [10, 10, 20, 10, 20, 20, 10, 20, 10, 10];
const SQUARE_B = [45, 10, 55, 10, 55, 20, 45, 20, 45, 10];

const INDEX: ShapesIndex = {
  element: 'nuclei',
  key: 'k'.repeat(32),
  kind: 'polygons',
  n_shapes: 2,
  bounds: [10, 10, 55, 20],
  grid: { x0: 0, y0: 0, size: 50, columns: 2, rows: 1, n_vertices: 10 }
};

function tile(column: number): { data: ShapesTileData; buffers: ArrayBuffer[] } {
  const rings = column === 0 ? [[0, SQUARE_A], [1, SQUARE_B]] : [[1, SQUARE_B]];
  const starts = [0];
  rings.forEach(([, ring]) => starts.push(starts[starts.length - 1] + (ring as number[]).length / 2));
  const data: ShapesTileData = { element: 'nuclei', key: INDEX.key, column, row: 0, box: [column * 50, 0, column * 50 + 50, 50], n_shapes: rings.length, n_vertices: starts[starts.length - 1] };
  const index = Uint32Array.from(rings.map(([i]) => i as number));
  const vertices = Float32Array.from(rings.flatMap(([, ring]) => ring as number[]));
  return { data, buffers: [index.buffer, Uint32Array.from(starts).buffer, vertices.buffer] };
}

function transport(index: ShapesIndex = INDEX): FakeTransport {
  return new FakeTransport()
    .on('shapes', p => ({ elements: ['cells', 'nuclei'], colors: ['#00e5ff', '#ffd400'], element: p.element ?? '', index: p.element ? index : null }))
    .on('shapes_tile', p => tile(Number(p.column)));
}

describe('shape tiles', () => {
  it('merge into one ring set, a shape on two tiles taken once, with each edge as a segment', () => {
    const rings = mergeShapeTiles([tile(0), tile(1)] as never);
    expect([...rings.starts]).toEqual([0, 5, 10]);
    expect([...rings.vertices]).toEqual([...SQUARE_A, ...SQUARE_B]);
    expect(rings.segments.length).toBe(4 * 8); // closed rings of 5 vertices: 4 edges each
    expect([...rings.segments.subarray(0, 4)]).toEqual([10, 10, 20, 10]);
  });

  it('space shapes by their bounds shared among them', () => {
    expect(shapeSpacing(INDEX)).toBeCloseTo(Math.sqrt((45 * 10) / 2));
    expect(shapeSpacing({ ...INDEX, bounds: null })).toBe(0);
  });
});

describe('the shapes layers of a figure spec', () => {
  it('restore a saved element shown: its index and the tiles in view are asked once on screen, drawn in its colour, saved back', async () => {
    const s = layerStage([15, 50], [15, 15]);
    const fake = transport();
    const layers = new ShapesLayers(layerContext(fake, s, 'aligned'), ['nuclei'], ['#ffd400']);
    layers.restore([{ element: 'nuclei', color: '#ff0000', visible: true, opacity: 0.5 }, { element: 'gone', color: '#000000', visible: true, opacity: 1 }]);
    expect(fake.calls).toEqual([]); // nothing asked before the figure is seen
    layers.onScreen();
    await settle();
    // in the figure's coordinate system, as its export draws them
    expect(fake.callsOf('shapes')).toEqual([{ version: 3, element: 'nuclei', coordinate_system: 'aligned' }]);
    expect((fake.callsOf('shapes_tile') as { column: number }[]).map(c => c.column).sort()).toEqual([0, 1]);
    expect(new Set((fake.callsOf('shapes_tile') as { coordinate_system: string }[]).map(c => c.coordinate_system))).toEqual(new Set(['aligned']));
    expect(s.node.dataset.shapes).toBe('nuclei');
    const drawn = (s as unknown as { shapeLayers: Map<string, { color: number[]; opacity: number; rings: { starts: Uint32Array } }> }).shapeLayers.get('nuclei')!;
    expect(drawn.color).toEqual([255, 0, 0]);
    expect(drawn.opacity).toBe(0.5);
    expect(drawn.rings.starts.length).toBe(3);
    expect(layers.legend.hidden).toBe(false);
    expect(layers.legend.textContent).toContain('nuclei');
    expect(layers.saved()).toEqual([{ element: 'nuclei', color: '#ff0000', visible: true, opacity: 0.5 }]);
    s.dispose();
  });

  it('an element saved hidden stays off, asks nothing, and its legend stays hidden', () => {
    const s = layerStage([15, 50], [15, 15]);
    const fake = transport();
    const layers = new ShapesLayers(layerContext(fake, s), ['nuclei'], ['#ffd400']);
    layers.restore([{ element: 'nuclei', color: '#ffd400', visible: false, opacity: 1 }]);
    layers.onScreen();
    expect(fake.calls).toEqual([]);
    expect(layers.legend.hidden).toBe(true);
    s.dispose();
  });

  it('reads colours as RGB bytes', () => {
    expect(rgbOf('#00e5ff')).toEqual([0, 229, 255]);
    expect(rgbOf('teal')).toEqual([255, 255, 255]);
  });
});

describe('cells past MAX_SHAPES: their outlines by tile as a layer', () => {
  /** The figure's offer of shapes layers for a canvas whose cells ("cells") came as points with `shapes_by_tile`. */
  async function offered(saved: CanvasPayload['shape_layers'] = []) {
    const s = layerStage([15, 50], [15, 15]);
    s.node.dataset.live = 'true'; // the figure is on screen
    // a shape every 1.8 units: 3.4 px apart fitted (under OUTLINE_PX), 5.1 px at the stage's closest zoom (1.5)
    const fake = transport({ ...INDEX, key: 'c'.repeat(32), n_shapes: 139 }); // its own key: no tile held by the page yet
    const payload = { shapes: null, shapes_note: 'past MAX_SHAPES', shapes_by_tile: 'cells', shape_layers: saved } as unknown as CanvasPayload;
    const host = { ...layerContext(fake, s), payload, node: h('div'), layers: new LayersMenu(), legendSlot: h('div') };
    host.node.append(host.legendSlot);
    const layers = (await offerShapes(host))!;
    await settle();
    return { s, fake, layers, row: layers.rows.find(r => r.element === 'cells')! };
  }

  it('the cells element is shown: fitted, no tile is asked and its row says to zoom in; zoomed in, its tiles come and are drawn', async () => {
    const { s, fake, row } = await offered();
    expect(row.shown).toBe(true);
    expect(fake.callsOf('shapes')).toContainEqual({ version: 3, element: 'cells', coordinate_system: '' });
    s.apply({ target: [50, 50], zoom: -3 }); // fitted: too far out for outlines
    row.viewChanged(s.region());
    await settle();
    expect(fake.callsOf('shapes_tile')).toEqual([]);
    expect(row.controls.textContent).toContain('zoom in to see');
    expect(s.node.dataset.shapes ?? '').not.toContain('cells');
    s.apply({ target: [50, 15], zoom: 5 }); // held at the closest zoom
    row.viewChanged(s.region());
    await settle();
    row.viewChanged(s.region()); // the tiles arrived: drawn
    expect((fake.callsOf('shapes_tile') as { element: string }[]).map(c => c.element)).toEqual(['cells', 'cells']);
    expect(s.node.dataset.shapes).toContain('cells');
    expect(row.controls.textContent).not.toContain('zoom in to see');
    s.dispose();
  });

  it('saved hidden, the cells element stays off and asks nothing', async () => {
    const { s, fake, row } = await offered([{ element: 'cells', color: '#00e5ff', visible: false, opacity: 1 }]);
    expect(row.shown).toBe(false);
    expect(fake.callsOf('shapes').filter(p => (p as { element?: string }).element)).toEqual([]);
    s.dispose();
  });
});
