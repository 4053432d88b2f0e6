import { describe, expect, it } from 'vitest';

import {
  REFERENCE_WIDTH,
  aspectOf,
  countInRegion,
  fitViewState,
  panBy,
  regionOf,
  savedRegion,
  scaleBar,
  viewStateFor,
  zoomBy,
  zoomRange,
  spacingOf
} from '../app/spatial/camera';
import type { Bounds } from '../app/shared/types';

const bounds: Bounds = [0, 0, 1000, 500];
const payload = { bounds, viewport: { target: [300, 200] as [number, number], zoom: 1, rotation: 0 } };

describe('camera: a saved viewport is a region of the data', () => {
  it('reads the saved zoom at the reference width, with the figure aspect', () => {
    const r = savedRegion(payload);
    const halfW = REFERENCE_WIDTH / 2 / 2;
    expect(r).toEqual([300 - halfW, 200 - halfW * 0.5, 300 + halfW, 200 + halfW * 0.5]);
    expect(aspectOf(bounds)).toBe(0.5);
    expect(aspectOf([0, 0, 10, 1000])).toBe(1.5); // clamped
  });

  it.each([320, 657, 800, 1200, 1920])('frames the same region at %i px', width => {
    const height = width * aspectOf(bounds);
    const region = savedRegion(payload);
    const vs = viewStateFor(region, width, height);
    expect(vs.target).toEqual([300, 200]);
    const shown = regionOf(vs, width, height);
    for (let k = 0; k < 4; k++) {
      expect(shown[k]).toBeCloseTo(region[k], 6);
    }
    // the zoom grows with the width: log2(width / reference) above the saved zoom
    expect(vs.zoom).toBeCloseTo(1 + Math.log2(width / REFERENCE_WIDTH), 9);
  });

  it('counts the same cells in view at every width', () => {
    const n = 5000;
    const x = new Float32Array(n);
    const y = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      x[i] = ((i * 7919) % 1000) + 0.37; // off the region edges, where rounding decides
      y[i] = ((i * 104729) % 500) + 0.37;
    }
    x[0] = NaN; // a cell with no position is never in view
    const counts = [300, 657, 1920].map(w => countInRegion(x, y, regionOf(viewStateFor(savedRegion(payload), w, w / 2), w, w / 2)));
    expect(new Set(counts).size).toBe(1);
    expect(counts[0]).toBeGreaterThan(0);
    expect(counts[0]).toBeLessThan(n);
    expect(countInRegion(x, y, [-1, -1, 1001, 501])).toBe(n - 1);
  });

  it('fits all of the data with a margin, whichever side limits', () => {
    const vs = fitViewState(bounds, 400, 400);
    expect(vs.target).toEqual([500, 250]);
    expect(Math.pow(2, vs.zoom)).toBeCloseTo((0.95 * 400) / 1000, 9);
    const r = regionOf(vs, 400, 400);
    expect(r[0]).toBeLessThan(0);
    expect(r[2]).toBeGreaterThan(1000);
  });

  it('zooms in steps within the range, and pans by screen pixels', () => {
    const range = zoomRange(bounds, 400, 200);
    const fit = fitViewState(bounds, 400, 200);
    expect(range[0]).toBeCloseTo(fit.zoom, 9);
    const vs = { target: [10, 20] as [number, number], zoom: 0 };
    expect(zoomBy(vs, 2, [-10, 10]).zoom).toBe(1);
    expect(zoomBy(vs, 100, [-10, 10]).zoom).toBe(10);
    expect(zoomBy(vs, -100, [-10, 10]).zoom).toBe(-10);
    expect(panBy({ target: [10, 20], zoom: 1 }, 20, -10).target).toEqual([20, 15]);
  });

  it('zoom limits: out to the whole data fitted, in until one cell fills the shorter side', () => {
    const [out, inmost] = zoomRange(bounds, 400, 200, 5);
    // zoomed out as far as allowed, all the data is in view
    const r = regionOf({ target: [500, 250], zoom: out }, 400, 200);
    expect(r[0] <= 0 && r[1] <= 0 && r[2] >= 1000 && r[3] >= 500).toBe(true);
    // zoomed in as far as allowed, a 5-unit cell spans the 200 px height
    expect(Math.pow(2, inmost) * 5).toBeCloseTo(200, 9);
    // a cell bigger than the fitted view: no zooming in at all, never a range upside down
    expect(zoomRange(bounds, 400, 200, 1e6)).toEqual([out, out]);
    expect(spacingOf([0, 0, 100, 100], 100)).toBe(10);
    expect(spacingOf([0, 0, 100, 100], 0)).toBe(0);
  });

  it('scale bar: a round length in physical units', () => {
    expect(scaleBar(2, 'micrometer', 120)).toEqual({ px: 100, label: '50 µm' });
    expect(scaleBar(0.05, 'micrometer', 120)).toEqual({ px: 100, label: '2 mm' });
    expect(scaleBar(1, '', 120)).toEqual({ px: 100, label: '100' });
    expect(scaleBar(0, 'um')).toBeNull();
  });
});
