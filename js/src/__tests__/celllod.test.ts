import { describe, expect, it } from 'vitest';

import type { Region } from '../app/spatial/camera';
import { buildIndex } from '../app/spatial/cellindex';
import { GEOMETRY_BUDGET, covers, lodFor, planRaster, rasterizeCells, stale } from '../app/spatial/celllod';
import { colorFn, packColor, rasterizePoints, type CanvasData } from '../app/spatial/raster';
import { SpatialStage } from '../app/spatial/spatial';
import type { Bounds, CanvasColor, CanvasPayload } from '../app/shared/types';

/** A grid of cells, one a unit apart: n × n of them over [0, n)². */
function grid(n: number): { x: Float32Array; y: Float32Array; value: Uint16Array } {
  const x = new Float32Array(n * n);
  const y = new Float32Array(n * n);
  const value = new Uint16Array(n * n);
  for (let i = 0; i < n * n; i++) {
    x[i] = (i % n) + 0.5;
    y[i] = Math.floor(i / n) + 0.5;
    value[i] = i % 3;
  }
  return { x, y, value };
}

const color: CanvasColor = { mode: 'categorical', column: 'c', categories: ['a', 'b', 'c'], colors: ['#ff0000', '#00ff00', '#0000ff'] };

describe('level of detail: geometry for few cells in view, a raster for many', () => {
  const { x, y } = grid(300); // 90,000 cells
  const index = buildIndex(x, y);

  it('draws geometry while the cells near the view are within the budget', () => {
    expect(lodFor(index, [0, 0, 300, 300])).toBe('raster');
    expect(lodFor(index, [10, 10, 40, 40])).toBe('geometry');
    expect(lodFor(index, [10, 10, 40, 40], 100)).toBe('raster');
    expect(GEOMETRY_BUDGET).toBeGreaterThan(1000);
  });

  it('plans a raster over the view and a margin, cut to the data, on the screen pixel grid', () => {
    const bounds: Bounds = [0, 0, 300, 300];
    const view: Region = [100.3, 100.3, 200.3, 150.3];
    const plan = planRaster(view, 4, bounds, 1)!;
    expect(covers(plan.region, view)).toBe(true);
    expect(plan.scale).toBe(4);
    // whole pixels from the view's corner
    expect(((view[0] - plan.region[0]) * 4) % 1).toBeCloseTo(0, 6);
    expect(plan.width).toBe(Math.round((plan.region[2] - plan.region[0]) * 4));
    // at a low zoom the whole data is in it, and no more
    const all = planRaster([-500, -500, 800, 800], 0.5, bounds, 1)!;
    expect(covers(all.region, [-1, -1, 301, 301])).toBe(true);
    expect(all.width).toBeLessThanOrEqual(Math.ceil(302 * 0.5) + 1);
    // too many pixels: a lower scale
    const capped = planRaster(view, 100, bounds, 1, 1_000_000)!;
    expect(capped.width * capped.height).toBeLessThanOrEqual(1_000_000 * 1.01);
    expect(capped.scale).toBeLessThan(100);
    expect(planRaster([1000, 1000, 1100, 1100], 1, bounds, 1)).toBeNull();
  });

  it('is made again when the view leaves it or its resolution is off (1.5x moving, exact settled)', () => {
    const bounds: Bounds = [0, 0, 300, 300];
    const view: Region = [100, 100, 200, 150];
    const plan = planRaster(view, 4, bounds, 1);
    expect(stale(plan, view, 4, bounds, 1, 1.5)).toBe(false);
    expect(stale(plan, [110, 105, 210, 155], 4, bounds, 1, 1.5)).toBe(false); // a small pan stays in the margin
    expect(stale(plan, [180, 100, 280, 150], 4, bounds, 1, 1.5)).toBe(true); // a long one leaves it
    expect(stale(plan, view, 5, bounds, 1, 1.5)).toBe(false); // zoomed 1.25x while moving: kept
    expect(stale(plan, view, 5, bounds, 1, 1.01)).toBe(true); // settled: made at the new resolution
    expect(stale(plan, view, 7, bounds, 1, 1.5)).toBe(true);
    expect(stale(null, view, 4, bounds, 1, 1.5)).toBe(true);
  });

  it('paints what rasterizePoints paints over the same view, reading only the cells near it', () => {
    const { x: gx, y: gy, value } = grid(60);
    const idx = buildIndex(gx, gy);
    const plan = planRaster([10, 10, 30, 20], 3, [0, 0, 60, 60], 1)!;
    const colorOf = colorFn(color, value, packColor('#1f77b4'));
    let asked = 0;
    const { pixels, drawn } = rasterizeCells(plan, idx, gx, gy, i => (asked++, colorOf(i)), 2, 33, false);
    const data: CanvasData = { x: gx, y: gy, value, image: null };
    const [x0, y0, x1, y1] = plan.region;
    const expected = new Uint8ClampedArray(plan.width * plan.height * 4);
    const view = { width: plan.width, height: plan.height, target: [(x0 + x1) / 2, (y0 + y1) / 2] as [number, number], scale: plan.scale, rotation: 0 };
    expect(drawn).toBe(rasterizePoints(expected, data, color, view, 2));
    expect(pixels).toEqual(expected);
    expect(asked).toBeLessThan(3600 / 2);
  });

  it('leaves hidden categories out and rings discs of 3 px or more with a darker outline', () => {
    const x = Float32Array.from([5, 15]);
    const y = Float32Array.from([5, 5]);
    const idx = buildIndex(x, y);
    const plan = planRaster([0, 0, 20, 10], 1, [0, 0, 20, 10], 0)!;
    const hidden: CanvasColor = { ...color, colors: ['#ff0000', '#00000000', '#0000ff'] };
    const colorOf = colorFn(hidden, Uint16Array.from([0, 1]), 0);
    const { pixels, drawn } = rasterizeCells(plan, idx, x, y, colorOf, 5, 33, true);
    expect(drawn).toBe(1);
    const at = (px: number, py: number) => [...pixels.subarray((py * plan.width + px) * 4, (py * plan.width + px) * 4 + 4)];
    const cx = Math.round(5 - plan.region[0]);
    const cy = Math.round(5 - plan.region[1]);
    expect(at(cx, cy)).toEqual([255, 0, 0, 255]); // inside
    expect(at(cx + 2, cy)).toEqual([65, 0, 0, 255]); // the ring
    expect(at(Math.round(15 - plan.region[0]), cy)[3]).toBe(0); // the hidden cell
  });

  it('fills polygon cells with their own shapes and sizes, ringed, and keeps a cell smaller than a pixel', () => {
    // a 6 x 4 rectangle, a triangle, a 0.2-unit speck and a cell with no polygon, at 1 px a unit
    const x = Float32Array.from([5, 15, 22, 25]);
    const y = Float32Array.from([5, 5, 5, 8]);
    const starts = Uint32Array.from([0, 5, 8, 12, 12]);
    // prettier-ignore
    const vertices = Float32Array.from([2, 3, 8, 3, 8, 7, 2, 7, 2, 3, /* triangle */ 12, 2, 18, 2, 12, 8, /* speck */ 22, 5, 22.2, 5, 22.2, 5.2, 22, 5.2]);
    const idx = buildIndex(x, y);
    const plan = planRaster([0, 0, 30, 10], 1, [0, 0, 30, 10], 0)!;
    const colors = [0xff0000ff, 0xff00ff00, 0xffff0000, 0xff00ffff];
    const { pixels, drawn } = rasterizeCells(plan, idx, x, y, i => colors[i], { polygons: { starts, vertices } }, 33, true);
    expect(drawn).toBe(4);
    const [ox, oy] = [plan.region[0], plan.region[1]];
    const at = (ux: number, uy: number) => {
      const o = (Math.floor(uy - oy) * plan.width + Math.floor(ux - ox)) * 4;
      return [...pixels.subarray(o, o + 4)];
    };
    // the rectangle covers the pixel centres 2.5..7.5 by 3.5..6.5: 6 x 4 pixels, its border darkened
    let rect = 0;
    for (let py = 0; py < 10; py++) {
      for (let px = 0; px < 10; px++) {
        rect += at(px + 0.5, py + 0.5)[3] ? 1 : 0;
      }
    }
    expect(rect).toBe(24);
    expect(at(5.5, 5.5)).toEqual([255, 0, 0, 255]); // inside
    expect(at(2.5, 5.5)).toEqual([65, 0, 0, 255]); // the ring
    expect(at(1.5, 5.5)[3]).toBe(0); // outside
    // the triangle: its right angle filled, the far side of its hypotenuse empty
    expect(at(12.5, 2.5)[1]).toBeGreaterThan(0);
    expect(at(16.5, 6.5)[3]).toBe(0);
    // the speck holds no pixel centre: one pixel at its position; the cell without a polygon too
    expect(at(22.5, 5.5)).toEqual([0, 0, 255, 255]);
    expect(at(25.5, 8.5)).toEqual([255, 255, 0, 255]);
  });
});

describe('the WebGL stage: levels of detail and picking on the CPU', () => {
  function stageOf(n: number, pointSize = 4): { stage: SpatialStage; data: CanvasData; p: CanvasPayload } {
    const { x, y, value } = grid(n);
    const p: CanvasPayload = {
      n_cells: n * n,
      bounds: [0, 0, n, n],
      viewport: { target: [n / 2, n / 2], zoom: 0, rotation: 0 },
      color,
      point_size: pointSize,
      image: null,
      unit: null,
      obs_columns: []
    } as unknown as CanvasPayload;
    const data: CanvasData = { x, y, value, image: null };
    const stage = new SpatialStage(p, data);
    (stage as unknown as { size: [number, number] }).size = [400, 300];
    stage.setColors(color, value, '#1f77b4');
    return { stage, data, p };
  }
  const lod = (s: SpatialStage) => s.node.dataset.lod;

  it('a view over many cells is a raster; zoomed in, the geometry of the cells near the view only', () => {
    const { stage } = stageOf(300);
    stage.apply({ target: [150, 150], zoom: 0.5 }); // all 90,000 in view
    expect(lod(stage)).toBe('raster');
    stage.apply({ target: [150, 150], zoom: 4 }); // 25 × 19 units in view
    expect(lod(stage)).toBe('geometry');
    const cells = (stage as unknown as { subset: { cells: { n: number; positions: Float32Array } } }).subset.cells;
    expect(cells.n).toBeGreaterThan(400);
    expect(cells.n).toBeLessThan(90_000 / 20);
    expect(cells.positions.length).toBe(cells.n * 2);
    stage.dispose();
  });

  it('picks the cell under the pointer, not a hidden one, none with cells off', () => {
    const { stage } = stageOf(20);
    stage.apply({ target: [10, 10], zoom: 4 }); // 16 px a unit; cell (10.5, 10.5) at (208, 158)
    const index = 10 * 20 + 10;
    expect(stage.pick(208, 158)).toBe(index);
    expect(stage.pick(208 + 4, 158)).toBe(index); // within its 2 px radius and the slop
    expect(stage.pick(208 + 8, 158)).toBe(-1); // between cells
    // hide category index % 3
    const hidden: CanvasColor = { ...color, colors: color.mode === 'categorical' ? color.colors.map((c, k) => (k === index % 3 ? '#00000000' : c)) : [] };
    stage.setColors(hidden, grid(20).value, '#1f77b4');
    expect(stage.pick(208, 158)).toBe(-1);
    stage.setColors(color, grid(20).value, '#1f77b4');
    stage.cellsVisible = false;
    expect(stage.pick(208, 158)).toBe(-1);
    stage.dispose();
  });
});
