import { afterEach, describe, expect, it, vi } from 'vitest';
import { outlineCache, outlineTilesOf } from '../app/spatial/cellstore';
import { MAX_VIEW_TILES, OUTLINE_PX, mergeTiles, tilesInView } from '../app/spatial/outlinetiles';
import type { CanvasData } from '../app/spatial/raster';
import type { Reply } from '../app/shared/transport';
import type { CanvasPayload, CellOutlinesData, OutlineTiles } from '../app/shared/types';
import { FakeTransport, FakeViewport } from './fixtures';

/** Four 2-unit squares, one in each quarter of a 1000-unit tissue; its grid is 2 x 2 tiles of 500. */
const CENTRES = [
  [250, 250],
  [750, 250],
  [250, 750],
  [750, 750]
];
const GRID: OutlineTiles = { x0: 0, y0: 0, size: 500, columns: 2, rows: 2, n_vertices: 20 };

function square([cx, cy]: number[]): number[] {
  return [cx - 1, cy - 1, cx + 1, cy - 1, cx + 1, cy + 1, cx - 1, cy + 1, cx - 1, cy - 1];
}

/** What the server answers for tile (column, row): the cells whose square lies in it. */
function tileReply(key: string, column: number, row: number): Reply<CellOutlinesData> {
  const cells = CENTRES.map((c, i) => [c, i] as const).filter(
    ([[x, y]]) => Math.floor(x / 500) === column && Math.floor(y / 500) === row
  );
  const starts = Uint32Array.from([0, ...cells.map((_, k) => 5 * (k + 1))]);
  const vertices = Float32Array.from(cells.flatMap(([c]) => square(c)));
  const box: [number, number, number, number] = [column * 500, row * 500, (column + 1) * 500, (row + 1) * 500];
  return {
    data: { key, column, row, box, n_cells: cells.length, n_vertices: vertices.length / 2 },
    buffers: [Uint32Array.from(cells.map(([, i]) => i)).buffer, starts.buffer, vertices.buffer]
  };
}

function lodPayload(key = 'cells-k'): CanvasPayload {
  return {
    n_cells: 4,
    bounds: [0, 0, 1000, 1000],
    viewport: { target: [500, 500], zoom: 0, rotation: 0 },
    color: { mode: 'categorical', column: 'c', categories: ['a', 'b'], colors: ['#ff0000', '#00ff00'] },
    point_size: 2,
    image: null,
    shapes: { kind: 'circles', element: 'cell_boundaries', outlines: GRID },
    cells_key: key
  };
}

function lodData(): CanvasData {
  return {
    x: Float32Array.from(CENTRES.map(c => c[0])),
    y: Float32Array.from(CENTRES.map(c => c[1])),
    value: Uint16Array.from([0, 1, 0, 1]),
    image: null,
    shapes: { kind: 'circles', radius: new Float32Array(4).fill(Math.sqrt(4 / Math.PI)) }
  };
}

const flush = () => new Promise(r => setTimeout(r, 0));

afterEach(() => {
  outlineCache.clear();
  vi.unstubAllGlobals();
});

describe('which outline tiles a view asks for', () => {
  it('none while a cell is under OUTLINE_PX across; the tiles the view touches beyond', () => {
    const cell = 2;
    expect(tilesInView(GRID, [0, 0, 1000, 1000], (OUTLINE_PX - 0.1) / cell, cell)).toEqual([]);
    expect(tilesInView(GRID, [400, 100, 600, 200], OUTLINE_PX / cell, cell)).toEqual([
      [0, 0],
      [1, 0]
    ]);
    expect(tilesInView(GRID, [100, 600, 200, 700], 10, cell)).toEqual([[0, 1]]);
    // clipped to the grid: a view reaching past the tissue asks for no tile off it
    expect(tilesInView(GRID, [-300, -300, 100, 100], 10, cell)).toEqual([[0, 0]]);
    expect(tilesInView(GRID, [1200, 1200, 1300, 1300], 10, cell)).toEqual([]);
  });

  it('none when the view would need more than MAX_VIEW_TILES', () => {
    const fine: OutlineTiles = { ...GRID, size: 1, columns: 1000, rows: 1000 };
    const side = Math.ceil(Math.sqrt(MAX_VIEW_TILES)) + 1;
    expect(tilesInView(fine, [0, 0, side, side], 100, 1)).toEqual([]);
    expect(tilesInView(fine, [0, 0, 2.5, 0.5], 100, 1)).toHaveLength(3);
  });
});

describe('outline tiles merged into polygons', () => {
  it('puts each cell of the tiles in table order once, and no outline for the cells of tiles not here', () => {
    const a = tileReply('k', 0, 0);
    const b = tileReply('k', 1, 1);
    const both = tileReply('k', 0, 0); // a cell on an edge is in two tiles: taken once
    const merged = mergeTiles(4, [a, b, both]);
    expect([...merged.starts]).toEqual([0, 5, 5, 5, 10]);
    expect([...merged.vertices]).toEqual([...square(CENTRES[0]), ...square(CENTRES[3])]);
  });
});

describe('outline tiles are asked once per page', () => {
  it('two views of the same cells key share a tile; another key asks again', async () => {
    const t = new FakeTransport().on('cell_outlines', p => tileReply(p.key!, p.column!, p.row!));
    const one = outlineTilesOf(t, 1, 'fig', lodPayload())!;
    const two = outlineTilesOf(t, 2, 'other-fig', lodPayload())!; // another version and figure, same cells
    expect(await one.want([[0, 0]])).toBe(true);
    expect(await two.want([[0, 0]])).toBe(true);
    expect(await one.want([[0, 0]])).toBe(false); // already held: nothing new
    expect(t.callsOf('cell_outlines')).toEqual([{ version: 1, figure: 'fig', key: 'cells-k', column: 0, row: 0 }]);
    expect([...two.polygons().starts]).toEqual([0, 5, 5, 5, 5]);
    await outlineTilesOf(t, 1, 'fig', lodPayload('rewritten'))!.want([[0, 0]]);
    expect(t.callsOf('cell_outlines')).toHaveLength(2);
  });

  it('a tile the server refuses is not asked again by the view, and the others still arrive', async () => {
    const t = new FakeTransport().on('cell_outlines', p => {
      if (p.column === 1) {
        throw new Error('Outline tile (1, 0) meets 20000 cells, more than 16384');
      }
      return tileReply(p.key!, p.column!, p.row!);
    });
    const set = outlineTilesOf(t, 1, 'fig', lodPayload())!;
    expect(await set.want([[0, 0], [1, 0]])).toBe(true);
    expect(await set.want([[0, 0], [1, 0]])).toBe(false);
    expect(t.callsOf('cell_outlines')).toHaveLength(2); // (1, 0) once, refused; (0, 0) once, kept
    expect(set.size).toBe(1);
  });

  it('a figure whose outlines came with its cells has no tiles to ask', () => {
    const payload = { ...lodPayload(), shapes: { kind: 'polygons', element: 'cells', n_vertices: 20 } } as CanvasPayload;
    expect(outlineTilesOf(new FakeTransport(), 1, 'fig', payload)).toBeNull();
  });
});

describe('both tiers draw the outlines from tiles', () => {
  it('keeps the circles when every tile in view fails', async () => {
    const { SpatialStage } = await import('../app/spatial/spatial');
    const t = new FakeTransport().on('cell_outlines', () => {
      throw new Error('refused');
    });
    const payload = lodPayload();
    const stage = new SpatialStage(payload, lodData(), {}, outlineTilesOf(t, 1, 'fig', payload));
    (stage as unknown as { size: [number, number] }).size = [100, 100];
    stage.apply({ target: [250, 250], zoom: 2 });
    await flush();
    stage.apply({ target: [251, 250], zoom: 2 });
    await flush();
    expect(t.callsOf('cell_outlines')).toHaveLength(1);
    expect(stage.data.shapes?.kind).toBe('circles');
    stage.dispose();
  });

  for (const tier of ['software', 'gpu'] as const) {
    it(`${tier}: circles when fitted, the tile in view as polygons when zoomed in, circles again when out`, async () => {
      const { SpatialStage } = await import('../app/spatial/spatial');
      const t = new FakeTransport().on('cell_outlines', p => tileReply(p.key!, p.column!, p.row!));
      const payload = lodPayload();
      const stage = new SpatialStage(payload, lodData(), {}, outlineTilesOf(t, 1, 'fig', payload));
      (stage as unknown as { tier: string }).tier = tier;
      (stage as unknown as { size: [number, number] }).size = [100, 100];
      stage.apply({ target: [500, 500], zoom: -3.3 }); // the whole tissue: a cell is 0.2 px
      await flush();
      expect(t.callsOf('cell_outlines')).toEqual([]);
      expect(stage.data.shapes?.kind).toBe('circles');
      stage.apply({ target: [250, 250], zoom: 2 }); // 4 px a unit: a cell is 9 px, tile (0, 0) alone in view
      await flush();
      expect(t.callsOf('cell_outlines')).toEqual([{ version: 1, figure: 'fig', key: 'cells-k', column: 0, row: 0 }]);
      expect(stage.data.shapes?.kind).toBe('polygons');
      expect(stage.drawnAs).not.toBe('points');
      const subset = (stage as unknown as { subset: { cells: { ids: Uint32Array; polygons: { starts: Uint32Array } } } }).subset;
      expect([...subset.cells.ids]).toEqual([0]); // the cell near the view, drawn as its polygon
      expect([...subset.cells.polygons.starts]).toEqual([0, 5]);
      expect(stage.node.dataset.outlines).toBe('1');
      stage.apply({ target: [250, 250], zoom: 2.5 }); // closer: the same tile, not asked again
      await flush();
      expect(t.callsOf('cell_outlines')).toHaveLength(1);
      stage.apply({ target: [500, 500], zoom: -3.3 });
      await flush();
      expect(stage.data.shapes?.kind).toBe('circles');
      stage.dispose();
    });
  }
});

/** A started stage of the four squares, 100 px square, off screen in a fake viewport, its on-screen reports listed (no WebGL here). */
async function watchedStage() {
  const viewport = new FakeViewport(false);
  viewport.install();
  const { SpatialStage } = await import('../app/spatial/spatial');
  const t = new FakeTransport().on('cell_outlines', p => tileReply(p.key!, p.column!, p.row!));
  const payload = lodPayload();
  const stage = new SpatialStage(payload, lodData(), {}, outlineTilesOf(t, 1, 'fig', payload));
  const shown: boolean[] = [];
  (stage as unknown as { callbacks: { onScreen: (on: boolean) => void } }).callbacks.onScreen = on => shown.push(on);
  (stage as unknown as { ensureDeck: () => Promise<void> }).ensureDeck = () => Promise.resolve();
  stage.start();
  (stage as unknown as { size: [number, number] }).size = [100, 100];
  return { viewport, t, stage, shown };
}

describe('a figure off screen asks for no outline tile', () => {
  it('zoomed in while scrolled away: nothing; back on screen: its view\'s tile; away again: nothing', async () => {
    const { viewport, t, stage, shown } = await watchedStage();
    expect(stage.offScreen).toBe(true);
    stage.apply({ target: [250, 250], zoom: 2 }); // a view that wants tile (0, 0), e.g. after a resize
    await flush();
    expect(t.callsOf('cell_outlines')).toEqual([]);
    viewport.scrollTo(stage.node);
    await flush();
    expect(shown).toEqual([true]);
    expect(t.callsOf('cell_outlines')).toEqual([{ version: 1, figure: 'fig', key: 'cells-k', column: 0, row: 0 }]);
    expect(stage.data.shapes?.kind).toBe('polygons');
    viewport.scrollAway(stage.node);
    stage.apply({ target: [750, 750], zoom: 2 }); // tile (1, 1) now, but nobody sees it
    await flush();
    expect(shown).toEqual([true, false]);
    expect(t.callsOf('cell_outlines')).toHaveLength(1);
    stage.dispose();
  });
});

describe('a kept figure shown again below the fold asks for no tile until it is seen', () => {
  it('parked on screen, unparked lower on the page within one frame: nothing; scrolled to: its tile', async () => {
    const { viewport, t, stage } = await watchedStage();
    viewport.scrollTo(stage.node);
    await flush();
    expect(stage.offScreen).toBe(false);
    stage.park(); // another version selected: the figure leaves the page, kept
    expect(stage.offScreen).toBe(true);
    viewport.moveAway(stage.node); // this version shows it again, but below the fold: no report
    stage.unpark();
    stage.apply({ target: [250, 250], zoom: 2 }); // the view it comes back with wants tile (0, 0)
    await flush();
    expect(stage.offScreen).toBe(true);
    expect(t.callsOf('cell_outlines')).toEqual([]);
    viewport.scrollTo(stage.node);
    await flush();
    expect(stage.offScreen).toBe(false);
    expect(t.callsOf('cell_outlines')).toEqual([{ version: 1, figure: 'fig', key: 'cells-k', column: 0, row: 0 }]);
    stage.dispose();
  });
});
