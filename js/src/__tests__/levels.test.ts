import { describe, expect, it } from 'vitest';
import { DETAIL_AT, levelFor, overviewLevel } from '../app/spatial/levels';
import type { Bounds, ImageLevel } from '../app/shared/types';

/** A 2,048 px image over 2,048 units, halved four times: 2048, 1024, 512, 256, 128 px. */
const BOUNDS: Bounds = [0, 0, 2048, 2048];
const LEVELS: ImageLevel[] = [2048, 1024, 512, 256, 128].map(side => ({ width: side, height: side, tile: 512, bounds: BOUNDS }));
/** As the canvas reply names it: the server's default overview is level 1 (the finest within 1,024 px). */
const IMAGE = { levels: LEVELS, level: 1 };

describe('the first image request sized to the view', () => {
  it('asks the coarsest level that looks sharp across the canvas’s device pixels', () => {
    expect(overviewLevel(IMAGE, BOUNDS, 600)).toBe(2); // 600 px: 512 px is within DETAIL_AT of it
    expect(overviewLevel(IMAGE, BOUNDS, 300)).toBe(3);
    expect(overviewLevel(IMAGE, BOUNDS, 100)).toBe(4);
    // the same 600 CSS px at devicePixelRatio 2 wants twice the pixels: the default overview
    expect(overviewLevel(IMAGE, BOUNDS, 1200)).toBeNull();
  });

  it('never asks finer than the server’s default overview: detail comes by tile, for what is on screen', () => {
    expect(levelFor(LEVELS, 3000 / 2048)).toBe(0); // a 3,000 px screen would want level 0 ...
    expect(overviewLevel(IMAGE, BOUNDS, 3000)).toBeNull(); // ... the first request stays at the default
  });

  it('each choice keeps a level pixel within DETAIL_AT screen pixels, and the next coarser would not', () => {
    for (const width of [90, 200, 333, 700, 900]) {
      const level = overviewLevel(IMAGE, BOUNDS, width) ?? IMAGE.level;
      const perUnit = width / 2048;
      expect(perUnit / (LEVELS[level].width / 2048)).toBeLessThanOrEqual(DETAIL_AT);
      if (level + 1 < LEVELS.length) {
        expect(perUnit / (LEVELS[level + 1].width / 2048)).toBeGreaterThan(DETAIL_AT);
      }
    }
  });

  it('the figure’s bounds count: a tissue wider than its image fits more units across the same pixels', () => {
    expect(overviewLevel(IMAGE, [0, 0, 4096, 2048], 600)).toBe(3);
  });

  it('leaves the choice to the server when it cannot make one', () => {
    expect(overviewLevel({ levels: LEVELS, level: null }, BOUNDS, 600)).toBeNull(); // read with a stride
    expect(overviewLevel({ level: 1 }, BOUNDS, 600)).toBeNull(); // an older reply without levels
    expect(overviewLevel(IMAGE, BOUNDS, 0)).toBeNull(); // not laid out yet
  });
});
