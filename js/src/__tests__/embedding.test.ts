import { describe, expect, it } from 'vitest';
import { Drawing, regionCodes, regionMapping, selectedCells, type Point } from '../app/figures/annotate';
import { PointGrid, fitProjection, loadEmbedding, paintEmbedding } from '../app/figures/embedding';
import { FakeTransport } from './fixtures';

/**
 * 100 cells: on the tissue a 10 × 10 grid (cell i at column i % 10, row i / 10); on the
 * embedding the grid transposed and moved (cell i at (row + 100, column)), so a region drawn
 * on either picks cells whose positions differ between the two.
 */
function cells() {
  const n = 100;
  const tx = new Float32Array(n);
  const ty = new Float32Array(n);
  const ex = new Float32Array(n);
  const ey = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    tx[i] = (i % 10) + 0.5;
    ty[i] = Math.floor(i / 10) + 0.5;
    ex[i] = Math.floor(i / 10) + 100.5;
    ey[i] = (i % 10) + 0.5;
  }
  return { tx, ty, ex, ey };
}

describe('a selection on the embedding is the same cells on the tissue', () => {
  it('a region drawn on the embedding selects by the embedding positions, a tissue region by the tissue ones', () => {
    const { tx, ty, ex, ey } = cells();
    const drawing = new Drawing();
    drawing.tool = 'rectangle';
    drawing.drawOn('X_pca');
    drawing.add([100, 0]);
    drawing.add([101, 3]); // embedding: row 0, columns 0-2 -> cells 0, 1, 2
    expect(drawing.regions[0]).toMatchObject({ label: 'region 1', space: 'X_pca' });
    const spaces = { X_pca: { x: ex, y: ey } };
    const onEmbedding = regionCodes(tx, ty, drawing.regions, spaces);
    expect(selectedCells(onEmbedding)).toEqual([0, 1, 2]);
    // the same cells on the tissue are elsewhere: columns 0-2 of row 0 there too, by table position
    drawing.drawOn(undefined);
    drawing.add([0, 9]);
    drawing.add([2, 10]); // tissue: row 9, columns 0-1 -> cells 90, 91
    const both = regionCodes(tx, ty, drawing.regions, spaces);
    expect(selectedCells(both)).toEqual([0, 1, 2, 90, 91]);
    expect(drawing.regions[1].space).toBeUndefined();
    // without the embedding's positions its region holds nothing (never the tissue's cells by mistake)
    expect(selectedCells(regionCodes(tx, ty, drawing.regions))).toEqual([90, 91]);
  });

  it('the request names the embedding of a region drawn on one; a tissue region stays a bare polygon', () => {
    const square: Point[] = [
      [0, 0],
      [1, 0],
      [1, 1]
    ];
    expect(
      regionMapping([
        { label: 'pca', polygon: square, space: 'X_pca' },
        { label: 'tissue', polygon: square }
      ])
    ).toEqual({ pca: { embedding: 'X_pca', polygon: [[0, 0], [1, 0], [1, 1]] }, tissue: [[0, 0], [1, 0], [1, 1]] });
  });

  it('moving to another panel drops the outline in progress, not the regions', () => {
    const drawing = new Drawing();
    drawing.add([0, 0]);
    drawing.add([1, 0]);
    drawing.drawOn('X_umap');
    expect(drawing.draft).toEqual([]);
    drawing.add([0, 0]);
    drawing.add([1, 0]);
    drawing.add([1, 1]);
    expect(drawing.close()).toBe(true);
    expect(drawing.regions.map(r => r.space)).toEqual(['X_umap']);
  });
});

describe('the embedding panel', () => {
  it('fits the bounds in the panel, y up, and maps back', () => {
    const view = fitProjection([0, 0, 10, 5], 220, 120, 10);
    expect(view.toScreen(0, 0)).toEqual([10, 110]); // bottom left
    expect(view.toScreen(10, 5)).toEqual([210, 10]); // top right
    const [x, y] = view.toData(...view.toScreen(3.25, 1.5));
    expect(x).toBeCloseTo(3.25);
    expect(y).toBeCloseTo(1.5);
  });

  it('the nearest cell under the pointer is the one a scan of every cell finds', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    const n = 5000;
    const x = Float32Array.from({ length: n }, () => random() * 40 - 20);
    const y = Float32Array.from({ length: n }, () => random() * 10);
    x[17] = Number.NaN;
    const grid = new PointGrid(x, y, [-20, 0, 20, 10]);
    for (let k = 0; k < 200; k++) {
      const px = random() * 44 - 22;
      const py = random() * 12 - 1;
      let best = -1;
      let bestD = 0.5 * 0.5;
      for (let i = 0; i < n; i++) {
        const d = (x[i] - px) ** 2 + (y[i] - py) ** 2;
        if (d < bestD) {
          [best, bestD] = [i, d];
        }
      }
      expect(grid.nearest(px, py, 0.5)).toBe(best);
    }
  });

  it('paints each cell in its colour and skips hidden ones (alpha 0) and cells without a position', () => {
    const x = Float32Array.of(0, 1, 2, Number.NaN);
    const y = Float32Array.of(0, 1, 2, 0);
    const pixels = new Uint8ClampedArray(20 * 20 * 4);
    const view = fitProjection([0, 0, 2, 2], 20, 20, 2);
    const colors = [0xff0000ff, 0x00000000, 0xff00ff00, 0xffff0000];
    expect(paintEmbedding(pixels, 20, 20, view, x, y, i => colors[i], 1)).toBe(2);
    const at = (sx: number, sy: number) => new Uint32Array(pixels.buffer)[sy * 20 + sx];
    expect(at(2, 18)).toBe(0xff0000ff); // (0, 0): bottom left
    expect(at(18, 2)).toBe(0xff00ff00); // (2, 2): top right
    expect(at(10, 10)).toBe(0); // (1, 1) is hidden
  });

  it('loads an embedding as float32 x and y, and refuses a reply without them', async () => {
    const x = Float32Array.of(1, 2, 3);
    const y = Float32Array.of(4, 5, 6);
    const transport = new FakeTransport().on('embedding', params => ({
      data: { keys: ['X_pca'], key: params.key ?? null, name: 'abc', n_cells: 3, columns: 2, bounds: [1, 4, 3, 6] },
      buffers: params.key === 'X_pca' ? [new DataView(x.buffer), new DataView(y.buffer)] : []
    }));
    const got = await loadEmbedding(transport, 2, 'fig', 'X_pca');
    expect(Array.from(got.x)).toEqual([1, 2, 3]);
    expect(Array.from(got.y)).toEqual([4, 5, 6]);
    expect(transport.callsOf('embedding')).toEqual([{ version: 2, figure: 'fig', key: 'X_pca' }]);
    await expect(loadEmbedding(transport, 2, 'fig', 'X_umap')).rejects.toThrow(/embedding reply is missing its x buffer/);
  });
});

describe('the embedding pans and zooms (issue 40, item 4)', () => {
  it('a wheel zoom keeps the point under the pointer, a drag moves the picture, and it never leaves the panel', async () => {
    const { FITTED, panEmbedding, zoomEmbedding } = await import('../app/figures/embedding');
    const bounds: [number, number, number, number] = [0, 0, 10, 10];
    const fitted = fitProjection(bounds, 200, 200, 12);
    const under = fitted.toData(150, 60);
    const zoomed = zoomEmbedding(FITTED, 4, 150, 60, 200, 200);
    expect(zoomed.zoom).toBe(4);
    const view = fitProjection(bounds, 200, 200, 12, zoomed);
    const [sx, sy] = view.toScreen(under[0], under[1]);
    expect(sx).toBeCloseTo(150, 6);
    expect(sy).toBeCloseTo(60, 6);
    // 4x: one data unit is 4 times as many pixels
    expect(view.toScreen(1, 0)[0] - view.toScreen(0, 0)[0]).toBeCloseTo(4 * (fitted.toScreen(1, 0)[0] - fitted.toScreen(0, 0)[0]), 6);
    const panned = panEmbedding(zoomed, -30, 20, 200, 200);
    expect(fitProjection(bounds, 200, 200, 12, panned).toScreen(under[0], under[1])[0]).toBeCloseTo(120, 6);
    // dragged far away: the panel's centre stays over the picture
    const far = panEmbedding(FITTED, 1e6, -1e6, 200, 200);
    const centre = fitProjection(bounds, 200, 200, 12, far).toData(100, 100);
    expect(centre[0]).toBeGreaterThanOrEqual(0);
    expect(centre[0]).toBeLessThanOrEqual(10);
    expect(centre[1]).toBeGreaterThanOrEqual(0);
    expect(centre[1]).toBeLessThanOrEqual(10);
  });
});
