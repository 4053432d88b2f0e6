import { describe, expect, it } from 'vitest';

import { rangeTicks } from '../app/shared/format';
import cases from './fixtures/exports.json';

describe('the same colorbar numbers as the export', () => {
  it('answers the shared ticks cases (fixtures/exports.json) as studio/render.py range_ticks does', () => {
    // the on-screen legend's colorbar and the exported one read alike
    for (const c of cases.ticks) {
      expect(rangeTicks(c.column, c.min, c.max).map(t => t[1])).toEqual(c.labels);
    }
  });
});
