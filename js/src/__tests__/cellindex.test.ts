import { describe, expect, it } from 'vitest';

import type { Region } from '../app/spatial/camera';
import { buildIndex, cellsIn, containing, countIn, countOver, forEachIn, inPolygon, nearest } from '../app/spatial/cellindex';

/** A deterministic scatter (a small LCG), a few cells without a position. */
function scatter(n: number, seed = 7): { x: Float32Array; y: Float32Array } {
  let s = seed;
  const rand = () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
  const x = new Float32Array(n);
  const y = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    x[i] = rand() * 1000;
    y[i] = rand() * 400 + 100;
  }
  x[3] = NaN;
  y[5] = NaN;
  return { x, y };
}

function brute(x: Float32Array, y: Float32Array, r: Region): number[] {
  const out: number[] = [];
  for (let i = 0; i < x.length; i++) {
    if (x[i] >= r[0] && x[i] <= r[2] && y[i] >= r[1] && y[i] <= r[3]) out.push(i);
  }
  return out;
}

describe('cell index: a uniform grid, cells counting-sorted by bin', () => {
  const { x, y } = scatter(5000);
  const index = buildIndex(x, y);

  it('holds every cell with a position once, and none without', () => {
    expect(index.order.length).toBe(4998);
    expect(new Set(index.order).size).toBe(4998);
    expect([...index.order].includes(3) || [...index.order].includes(5)).toBe(false);
    expect(index.starts.length).toBe(index.cols * index.rows + 1);
    expect(index.starts[index.starts.length - 1]).toBe(4998);
    // about 8 cells a bin: the bins' table stays small beside the cells
    expect(index.cols * index.rows).toBeLessThan(5000 / 4);
  });

  it.each<[string, Region]>([
    ['a window', [100, 200, 300, 260]],
    ['everything', [-10, -10, 2000, 2000]],
    ['outside', [2000, 2000, 3000, 3000]],
    ['a sliver on an edge', [999, 100, 1000, 500]]
  ])('finds exactly the cells of %s', (_name, region) => {
    const found: number[] = [];
    forEachIn(index, x, y, region, i => found.push(i));
    expect(found.sort((a, b) => a - b)).toEqual(brute(x, y, region));
    expect(countIn(index, x, y, region)).toBe(found.length);
    expect(countOver(index, region)).toBeGreaterThanOrEqual(found.length);
  });

  it('lists the cells of a region only while they are within a limit', () => {
    const region: Region = [0, 0, 200, 600];
    const all = brute(x, y, region);
    expect([...(cellsIn(index, x, y, region, all.length) ?? [])].sort((a, b) => a - b)).toEqual(all);
    expect(cellsIn(index, x, y, region, all.length - 1)).toBeNull();
  });

  it('picks the nearest accepted cell within a radius, as a full scan would', () => {
    for (const [px, py] of [[500, 300], [10, 110], [999, 499], [123.4, 432.1]]) {
      let best = -1;
      let bestD = 25;
      for (let i = 0; i < x.length; i++) {
        const d = (x[i] - px) ** 2 + (y[i] - py) ** 2;
        if (d < bestD) [best, bestD] = [i, d];
      }
      expect(nearest(index, x, y, px, py, 5)).toBe(best);
    }
    expect(nearest(index, x, y, -500, -500, 5)).toBe(-1);
    const first = nearest(index, x, y, 500, 300, 50);
    expect(nearest(index, x, y, 500, 300, 50, i => i !== first)).not.toBe(first);
  });

  it('builds on no cells, or cells all at one place', () => {
    const empty = buildIndex(new Float32Array(0), new Float32Array(0));
    expect(countIn(empty, new Float32Array(0), new Float32Array(0), [0, 0, 1, 1])).toBe(0);
    const same = buildIndex(Float32Array.from([2, 2, 2]), Float32Array.from([3, 3, 3]));
    expect(countIn(same, Float32Array.from([2, 2, 2]), Float32Array.from([3, 3, 3]), [2, 3, 2, 3])).toBe(3);
  });
});

describe('polygon picking', () => {
  // two squares side by side: cell 0 [0,10]², cell 1 [10,20]×[0,10]; an L-shaped cell 2 around (30, 5)
  const starts = Uint32Array.from([0, 4, 8, 14]);
  const vertices = Float32Array.from([0, 0, 10, 0, 10, 10, 0, 10, 10, 0, 20, 0, 20, 10, 10, 10, 25, 0, 35, 0, 35, 4, 29, 4, 29, 10, 25, 10]);
  const x = Float32Array.from([5, 15, 29]);
  const y = Float32Array.from([5, 5, 4]);
  const index = buildIndex(x, y);

  it('tells inside from outside, concave shapes included', () => {
    expect(inPolygon(starts, vertices, 0, 2, 2)).toBe(true);
    expect(inPolygon(starts, vertices, 0, 12, 2)).toBe(false);
    expect(inPolygon(starts, vertices, 2, 26, 8)).toBe(true);
    expect(inPolygon(starts, vertices, 2, 32, 8)).toBe(false); // the L's notch
  });

  it('finds the cell whose outline holds the point, not merely the nearest centroid', () => {
    // (9.5, 9) is 6.0 from cell 1's centroid and 5.7 from cell 0's; (10.5, 1) is nearer cell 0's but inside cell 1
    expect(containing(index, x, y, starts, vertices, 9.5, 9, 15)).toBe(0);
    expect(containing(index, x, y, starts, vertices, 10.5, 1, 15)).toBe(1);
    expect(containing(index, x, y, starts, vertices, 32, 8, 15)).toBe(-1);
    expect(containing(index, x, y, starts, vertices, 9.5, 9, 15, i => i !== 0)).toBe(-1);
  });
});
