import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { SAMPLE_NOTE, TranscriptsLayer, WHOLE_POLL_MS } from '../app/figures/transcripts';
import type { PointsInfo, PointsTileData } from '../app/shared/types';
import { FakeTransport } from './fixtures';
import { layerContext, layerStage } from './layerkit';

/** An index over the stage's 100-unit square: one level, two genes; the sample's key and counts as the server gives them. */
function info(partial: boolean): PointsInfo {
  return {
    element: 'transcripts',
    key: partial ? 'sample-k1' : 'k1',
    partial,
    rows: 4,
    n_points: partial ? 2 : 4,
    bounds: [0, 0, 100, 100],
    finest_level: 0,
    tile_points: 100,
    palette: ['#4e79a7', '#f28e2b'],
    genes: [
      { name: 'EPCAM', count: partial ? 1 : 2 },
      { name: 'CD3E', count: partial ? 1 : 2 }
    ]
  };
}

/** The server while the index builds: `building` asks answer the sample, then the whole index. */
function transport(building: number): FakeTransport {
  let asked = 0;
  return new FakeTransport()
    .on('points', () => ({ elements: ['transcripts'], index: info(asked++ < building) }))
    .on('points_tile', p => {
      const key = p.key ?? '';
      const partial = key.startsWith('sample-');
      const n = partial ? 2 : 4;
      const data: PointsTileData = { key, level: 0, x: 0, y: 0, bounds: [0, 0, 100, 100], n, total: n, sampled: partial, partial };
      const steps = Uint16Array.from({ length: n }, (_, i) => (i + 1) * 10000);
      return { data, buffers: [steps.buffer, steps.slice().buffer, Uint16Array.from({ length: n }, (_, i) => i % 2).buffer] };
    });
}

describe('the transcripts layer while the element is indexed', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('draws the sample at once and says so, asks again until the whole index is ready, then draws the whole', async () => {
    const s = layerStage([10, 90], [10, 90]);
    const fake = transport(2);
    const layer = new TranscriptsLayer(layerContext(fake, s), 'transcripts');
    await layer.show(true);
    expect(fake.callsOf('points')).toEqual([{ version: 3, element: 'transcripts', coordinate_system: '', sample: true }]);
    expect((fake.callsOf('points_tile') as { key: string }[]).map(c => c.key)).toEqual(['sample-k1']);
    const line = layer.controls.querySelector('.sds-points-status')!;
    expect(line.textContent).toContain(SAMPLE_NOTE);
    expect(s.node.dataset.points).toBe('2');
    expect(s.node.dataset.pointsPartial).toBe('true');
    expect(layer.legend.textContent).toContain('a sample of 2 of 4');

    await vi.advanceTimersByTimeAsync(WHOLE_POLL_MS); // still building: the sample stays
    expect(fake.callsOf('points')).toHaveLength(2);
    expect(s.node.dataset.pointsPartial).toBe('true');

    await vi.advanceTimersByTimeAsync(WHOLE_POLL_MS); // built: the whole index's tiles replace the sample's
    expect(fake.callsOf('points')).toHaveLength(3);
    expect((fake.callsOf('points_tile') as { key: string }[]).map(c => c.key)).toEqual(['sample-k1', 'k1']);
    expect(s.node.dataset.points).toBe('4');
    expect(s.node.dataset.pointsPartial).toBe('false');
    expect(line.textContent).not.toContain(SAMPLE_NOTE);
    expect(layer.legend.textContent).toContain('transcripts (4)');

    await vi.advanceTimersByTimeAsync(5 * WHOLE_POLL_MS); // and asks no more
    expect(fake.callsOf('points')).toHaveLength(3);
    s.dispose();
  });

  it('turned off while the sample shows, it stops asking; turned on again, it asks anew', async () => {
    const s = layerStage([10, 90], [10, 90]);
    const fake = transport(1);
    const layer = new TranscriptsLayer(layerContext(fake, s), 'transcripts');
    await layer.show(true);
    await layer.show(false);
    await vi.advanceTimersByTimeAsync(3 * WHOLE_POLL_MS);
    expect(fake.callsOf('points')).toHaveLength(1);
    await layer.show(true);
    expect(fake.callsOf('points')).toHaveLength(2);
    expect(s.node.dataset.pointsPartial).toBe('false');
    s.dispose();
  });
});
