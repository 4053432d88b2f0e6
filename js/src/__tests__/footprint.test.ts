import { describe, expect, it } from 'vitest';

import { buildIndex } from '../app/spatial/cellindex';
import { planRaster, rasterizeCells } from '../app/spatial/celllod';
import { OUTLINE, outlineColors, ringsClosed } from '../app/spatial/geometry';

/**
 * A jittered hexagonal grid of cells as the demo's tissue lays them out: rows `spacing` · 0.866
 * apart. At `scale` px a unit, the fitted 100,000-cell demo had rows 1.036 px apart.
 */
function hexTissue(spacing: number, rows: number, cols: number): { x: Float32Array; y: Float32Array } {
  const x: number[] = [];
  const y: number[] = [];
  let seed = 7;
  const jitter = () => ((seed = (seed * 16807) % 2147483647) / 2147483647 - 0.5) * 0.36 * spacing;
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      x.push(c * spacing + (r % 2) * (spacing / 2) + jitter());
      y.push(r * spacing * 0.866 + jitter());
    }
  }
  return { x: Float32Array.from(x), y: Float32Array.from(y) };
}

/** Each pixel row's mean opacity (0..1) over the middle of a raster (away from the tissue's edge). */
function rowCover(pixels: Uint8ClampedArray, width: number, height: number): number[] {
  const rows: number[] = [];
  for (let r = Math.floor(height * 0.2); r < Math.floor(height * 0.8); r++) {
    let sum = 0;
    for (let c = Math.floor(width * 0.2); c < Math.floor(width * 0.8); c++) {
      sum += pixels[4 * (r * width + c) + 3];
    }
    rows.push(sum / 255 / Math.floor(width * 0.6));
  }
  return rows;
}

describe('the software raster of cells a pixel or two across', () => {
  it('has no empty scan lines where rows of cells beat against the pixel grid', () => {
    const spacing = 4.53; // µm, the demo's
    const { x, y } = hexTissue(spacing, 140, 120);
    const index = buildIndex(x, y);
    const bounds: [number, number, number, number] = [0, 0, 120 * spacing, 140 * spacing * 0.866];
    const cell = 0.88 * spacing; // the demo's octagons span about 0.88 of the spacing
    for (const rowPx of [1.036, 1.3, 1.7, 0.8]) {
      const scale = rowPx / (spacing * 0.866);
      const plan = planRaster(bounds, scale, bounds, cell)!;
      const { pixels, drawn } = rasterizeCells(plan, index, x, y, () => 0xff3366cc, { footprint: cell * scale }, 4, false);
      expect(drawn).toBe(x.length);
      const rows = rowCover(pixels, plan.width, plan.height);
      const mean = rows.reduce((s, v) => s + v, 0) / rows.length;
      // every scan line is about as covered as the tissue is: no row drops out
      expect(Math.min(...rows), `rows ${rowPx} px apart`).toBeGreaterThan(0.75 * mean);
      expect(mean).toBeGreaterThan(0.5);
    }
  });

  it('gives each pixel the colour of the cell covering most of it, at full colour', () => {
    const x = Float32Array.from([10.5, 10.9]);
    const y = Float32Array.from([10.5, 10.5]);
    const plan = { region: [0, 0, 20, 20] as [number, number, number, number], scale: 1, width: 20, height: 20 };
    const colors = [0xff0000ff, 0xff00ff00];
    const { pixels } = rasterizeCells(plan, buildIndex(x, y), x, y, i => colors[i], { footprint: 1 }, 2, false);
    const at = (px: number, py: number) => new Uint32Array(pixels.buffer)[py * 20 + px];
    // pixel 10 is all of cell 0 and most of cell 1's square: cell 1 came later with less, cell 0 keeps it
    expect(at(10, 10) & 0xffffff).toBe(0x0000ff);
    expect(at(10, 10) >>> 24).toBe(255);
    // pixel 11 holds only 0.4 of cell 1: its colour, 40 % opaque
    expect(at(11, 10) & 0xffffff).toBe(0x00ff00);
    expect(Math.abs((at(11, 10) >>> 24) - 102)).toBeLessThanOrEqual(1);
  });
});

describe('the GPU tier outlines', () => {
  it('are the outline colour per vertex, transparent on a hidden cell', () => {
    const fills = new Uint8Array(new Uint32Array([0xff0000ff, 0xff0000ff, 0x00000000]).buffer);
    expect([...new Uint32Array(outlineColors(fills).buffer)]).toEqual([OUTLINE, OUTLINE, 0]);
  });

  it('draw rings that repeat their first vertex as open paths, others as loops', () => {
    const closed = { starts: Uint32Array.of(0, 4), vertices: Float32Array.of(0, 0, 1, 0, 1, 1, 0, 0) };
    const open = { starts: Uint32Array.of(0, 3), vertices: Float32Array.of(0, 0, 1, 0, 1, 1) };
    expect(ringsClosed(closed)).toBe(true);
    expect(ringsClosed(open)).toBe(false);
  });
});
