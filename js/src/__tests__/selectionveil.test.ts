import { describe, expect, it } from 'vitest';
import { MAX_HOLE, MIN_HOLE, selectionMask, veilPixels } from '../app/figures/selectionveil';
import { regionCodes, rectangle } from '../app/figures/annotate';

/** `n` × `n` cells 4 px apart on a drawing (identity projection), cell i at (2 + 4 (i % n), 2 + 4 floor(i / n)). */
function lattice(n: number): { x: Float32Array; y: Float32Array; size: number } {
  const x = new Float32Array(n * n);
  const y = new Float32Array(n * n);
  for (let i = 0; i < n * n; i++) {
    x[i] = 2 + 4 * (i % n);
    y[i] = 2 + 4 * Math.floor(i / n);
  }
  return { x, y, size: 4 * n };
}

const identity = (x: number, y: number): [number, number] => [x, y];

describe('the selection veil (issue 40, item 1)', () => {
  it('gives every selected cell its hole, past the 5,000 once marked, and leaves the others veiled', () => {
    const { x, y, size } = lattice(100); // 10,000 cells
    // 6,100 cells: rows 0-60 of the lattice (61 rows of 100)
    const codes = regionCodes(x, y, [{ label: 'r', polygon: rectangle([0, 0], [400, 243]) }]);
    const selected = codes.reduce((s, c) => s + (c >= 0 ? 1 : 0), 0);
    expect(selected).toBe(6100);
    const { mask, shown } = selectionMask(size, size, identity, x, y, codes, 1.5);
    expect(shown).toBe(selected);
    let holes = 0;
    let veiled = 0;
    for (let i = 0; i < x.length; i++) {
      const k = Math.floor(y[i]) * size + Math.floor(x[i]);
      if (codes[i] >= 0) {
        holes += mask[k];
      } else {
        veiled += mask[k] ? 0 : 1;
      }
    }
    expect(holes).toBe(6100);
    expect(veiled).toBe(10000 - 6100);
  });

  it('counts only the selected cells in view, and clips their holes at the edges', () => {
    const x = Float32Array.from([-10, 0.5, 9.5, 5, 50]);
    const y = Float32Array.from([5, 0.5, 9.5, 5, 5]);
    const codes = Int32Array.from([0, 0, 0, -1, 0]);
    const { mask, shown } = selectionMask(10, 10, identity, x, y, codes, 3);
    expect(shown).toBe(2);
    expect(mask[0]).toBe(1);
    expect(mask[99]).toBe(1);
    expect(mask[5 * 10 + 5]).toBe(0); // the unselected cell in the middle stays veiled
  });

  it('sizes a hole by the cell, within bounds', () => {
    const x = Float32Array.from([100]);
    const y = Float32Array.from([100]);
    const codes = Int32Array.from([0]);
    const area = (r: number) => selectionMask(200, 200, identity, x, y, codes, r).mask.reduce((s, v) => s + v, 0);
    expect(area(0)).toBe(area(MIN_HOLE));
    expect(area(10)).toBeGreaterThan(250); // about pi r^2
    expect(area(10)).toBeLessThan(350);
    expect(area(1000)).toBe(area(MAX_HOLE));
  });

  it('paints holes clear, a ring of the text colour just outside them, and the veil elsewhere', () => {
    const w = 5;
    const mask = new Uint8Array(w * w);
    mask[2 * w + 2] = 1;
    const out = new Uint32Array(w * w);
    veilPixels(mask, w, w, 0x96ffffff, 0xff222222, out);
    expect(out[2 * w + 2]).toBe(0);
    for (const k of [1 * w + 2, 3 * w + 2, 2 * w + 1, 2 * w + 3]) {
      expect(out[k]).toBe(0xff222222);
    }
    expect(out[0]).toBe(0x96ffffff);
    expect(out[1 * w + 1]).toBe(0x96ffffff);
  });
});
