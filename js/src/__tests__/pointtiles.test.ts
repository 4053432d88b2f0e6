import { describe, expect, it } from 'vitest';
import { LEGEND_GENES, geneColors, legendEntries } from '../app/figures/transcripts';
import { MAX_VIEW_TILES, PointTileSet, TILE_PX, decodeTile, levelFor, mergePoints, nearestPoint, pointTilesOf, tilesInView, type TileAddress } from '../app/spatial/pointtiles';
import { FakeTransport } from './fixtures';
import type { Reply } from '../app/shared/transport';
import type { PointsInfo, PointsTileData } from '../app/shared/types';

/** An index over a 1024-unit square, 3 levels, three genes. */
const INFO: PointsInfo = {
  element: 'transcripts',
  key: 'k1',
  partial: false,
  rows: 600,
  n_points: 600,
  bounds: [0, 0, 1024, 1024],
  finest_level: 3,
  tile_points: 100,
  palette: ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2'],
  genes: [
    { name: 'EPCAM', count: 100 },
    { name: 'CD3E', count: 400 },
    { name: 'VWF', count: 100 }
  ]
};

/** A tile reply of points at `at` (data units) with gene codes `genes`. */
function reply(t: TileAddress, at: [number, number][], genes: number[]): Reply<PointsTileData> {
  const size = 1024 / 2 ** t.level;
  const bounds: [number, number, number, number] = [t.x * size, t.y * size, (t.x + 1) * size, (t.y + 1) * size];
  const step = (v: number, lo: number) => Math.round(((v - lo) / size) * 65535);
  return {
    data: { key: 'k1', level: t.level, x: t.x, y: t.y, bounds, n: at.length, total: at.length, sampled: false, partial: false },
    buffers: [
      Uint16Array.from(at.map(p => step(p[0], bounds[0]))).buffer,
      Uint16Array.from(at.map(p => step(p[1], bounds[1]))).buffer,
      Uint16Array.from(genes).buffer
    ]
  };
}

describe('which tiles a view asks for', () => {
  it('takes the level whose tiles are at most TILE_PX across, never finer than the finest', () => {
    expect(levelFor(INFO, TILE_PX / 1024)).toBe(0); // the whole square fits one tile's width
    expect(levelFor(INFO, (2 * TILE_PX) / 1024)).toBe(1);
    expect(levelFor(INFO, 100)).toBe(3);
  });

  it('lists the tiles a region touches, clipped to the square, and goes coarser past MAX_VIEW_TILES', () => {
    expect(tilesInView(INFO, [0, 0, 300, 100], 2)).toEqual([
      { level: 2, x: 0, y: 0 },
      { level: 2, x: 1, y: 0 }
    ]);
    expect(tilesInView(INFO, [-50, -50, 10, 10], 3)).toEqual([{ level: 3, x: 0, y: 0 }]);
    expect(tilesInView(INFO, [2000, 2000, 3000, 3000], 3)).toEqual([]);
    const big: PointsInfo = { ...INFO, finest_level: 6 };
    const tiles = tilesInView(big, [0, 0, 1024, 1024], 6);
    expect(tiles.length).toBeLessThanOrEqual(MAX_VIEW_TILES);
    expect(tiles[0].level).toBe(3);
  });
});

describe('tiles to points', () => {
  it('decodes uint16 steps back to data units within a step', () => {
    const tile = decodeTile(reply({ level: 1, x: 1, y: 0 }, [[600, 10], [1000, 500]], [0, 2]));
    expect(tile.n).toBe(2);
    expect(Math.abs(tile.positions[0] - 600)).toBeLessThan(512 / 65535);
    expect(Math.abs(tile.positions[3] - 500)).toBeLessThan(512 / 65535);
    expect([...tile.genes]).toEqual([0, 2]);
  });

  it('draws a held coarse tile for a finer one still on its way, and never both over one spot', async () => {
    const asked: string[] = [];
    const set = new PointTileSet(INFO, t => {
      asked.push(`${t.level}/${t.x}/${t.y}`);
      return Promise.resolve(reply(t, [[t.x * 10 + 1, t.y * 10 + 1]], [1]));
    });
    await set.want([{ level: 0, x: 0, y: 0 }]);
    const fine = [
      { level: 2, x: 0, y: 0 },
      { level: 2, x: 1, y: 0 }
    ];
    expect(set.drawn(fine).map(t => t.level)).toEqual([0]);
    await set.want([fine[0]]);
    // one fine tile held, its neighbour not: the coarse tile covers both, the fine one is not drawn twice over it
    expect(set.drawn(fine).map(t => t.level)).toEqual([0]);
    expect(await set.want(fine)).toBe(true);
    expect(set.drawn(fine).map(t => `${t.level}/${t.x}`)).toEqual(['2/0', '2/1']);
    expect(await set.want(fine)).toBe(false); // held: not asked again
    expect(asked).toEqual(['0/0/0', '2/0/0', '2/1/0']);
  });

  it('colours each point by its gene, hides genes not chosen, and names the nearest shown point', () => {
    const tile = decodeTile(reply({ level: 0, x: 0, y: 0 }, [[100, 100], [102, 100], [500, 500]], [0, 1, 2]));
    const chosen = geneColors(INFO, ['VWF', 'EPCAM']);
    const drawing = mergePoints([tile], chosen);
    expect(drawing.n).toBe(3);
    const rgba = (i: number) => [...drawing.colors.subarray(4 * i, 4 * i + 4)];
    const hex = (c: string) => [1, 3, 5].map(k => parseInt(c.slice(k, k + 2), 16));
    expect(rgba(0)).toEqual([...hex(INFO.palette[1]), 255]); // EPCAM, second chosen
    expect(rgba(1)[3]).toBe(0); // CD3E not chosen: hidden
    expect(rgba(2)).toEqual([...hex(INFO.palette[0]), 255]);
    // the hidden CD3E point is nearer (101, 100) than the EPCAM one is not: the shown one is named
    expect(nearestPoint(drawing, 101.6, 100, 5)).toBe(0);
    expect(nearestPoint(drawing, 300, 300, 5)).toBe(-1);
  });

  it('with no gene chosen colours every gene, the most frequent first, and the legend says so', () => {
    const all = geneColors(INFO, []);
    expect([...all.subarray(4, 8)]).toEqual([78, 121, 167, 255]); // CD3E, the most frequent: the first colour
    const many: PointsInfo = { ...INFO, genes: Array.from({ length: 30 }, (_, i) => ({ name: `G${i}`, count: i })) };
    const { entries, more } = legendEntries(many, []);
    expect(entries.length).toBe(LEGEND_GENES);
    expect(entries[0].name).toBe('G29');
    expect(more).toBe(30 - LEGEND_GENES);
  });
});

describe('a tile the server answers from the sample for a whole index it dropped', () => {
  it.each([
    ['building', {}],
    ['refused', { refused: 'No space left on device' }]
  ] as const)('(%s) is drawn, marks the set dropped, and is not kept in the page cache under the whole index key', async (reason, why) => {
    const info: PointsInfo = { ...INFO, key: `k-dropped-cache-${reason}` };
    let partial = true;
    const fake = new FakeTransport().on('points_tile', p => {
      const r = reply({ level: p.level ?? 0, x: p.x ?? 0, y: p.y ?? 0 }, [[10, 10]], [1]);
      return { ...r, data: { ...r.data, key: info.key, sampled: partial, partial, ...(partial ? { partial_reason: reason, ...why } : {}) } };
    });
    const source = { transport: fake, version: 3, system: '' };
    const first = pointTilesOf(source, info, []);
    await first.want([{ level: 0, x: 0, y: 0 }]);
    expect(first.dropped).toBe(true);
    expect(first.drawn([{ level: 0, x: 0, y: 0 }])[0].n).toBe(1);
    partial = false; // the whole index is back: the tile is asked again, not the sample's answer kept
    const again = pointTilesOf(source, info, []);
    await again.want([{ level: 0, x: 0, y: 0 }]);
    expect(fake.callsOf('points_tile')).toHaveLength(2);
    expect(again.dropped).toBe(false);
    const third = pointTilesOf(source, info, []);
    await third.want([{ level: 0, x: 0, y: 0 }]);
    expect(fake.callsOf('points_tile')).toHaveLength(2); // a whole index's tile is kept
  });
});
