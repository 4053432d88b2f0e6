import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { pollDelay, REFUSED_POLL_MS, SAMPLE_NOTE, sampleNote, TranscriptsLayer, WHOLE_POLL_MS } from '../app/figures/transcripts';
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

/** The server's sample when its disk refused the whole index and memory may not hold it (`retry` seconds until it tries again). */
function refused(retry: number): PointsInfo {
  return { ...info(true), partial_reason: 'refused', refused: 'No space left on device', memory_points: 3, retry_seconds: retry };
}

/** A server whose asks answer, in turn, `answers` (the last one again after). */
function server(answers: PointsInfo[]): FakeTransport {
  let asked = 0;
  const fake = transport(0);
  return fake.on('points', () => ({ elements: ['transcripts'], index: answers[Math.min(asked++, answers.length - 1)] }));
}

describe('what the layer says when the server cannot keep the whole index', () => {
  it('says why only a sample shows and what to do, in the user\'s words', () => {
    const note = sampleNote(refused(60));
    expect(note).toContain('Showing a sample only');
    expect(note).toContain('the disk refused the transcripts index (No space left on device)');
    expect(note).toContain('4 transcripts are too many to index in memory; at most 3');
    expect(note).toContain('Free disk space, or set SDS_POINTS_CACHE to a folder with room');
    expect(note).toContain('tries again in 60 s');
    expect(note).not.toContain('Indexing');
    expect(sampleNote(refused(150))).toContain('tries again in 3 min');
    expect(sampleNote({ ...info(true), partial_reason: 'building' })).toBe(SAMPLE_NOTE);
    expect(sampleNote(info(true))).toBe(SAMPLE_NOTE); // a server that does not say why: building
  });

  it('asks again only when the server will try another build', () => {
    expect(pollDelay(info(true))).toBe(WHOLE_POLL_MS);
    expect(pollDelay(refused(60))).toBe(60_000 + WHOLE_POLL_MS);
    expect(pollDelay(refused(0))).toBe(REFUSED_POLL_MS);
  });
});

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

  it('a build the disk refused: says so, stops asking every second, asks when the server tries again, then draws the whole', async () => {
    const s = layerStage([10, 90], [10, 90]);
    const fake = server([info(true), refused(60), { ...info(true), partial_reason: 'building' }, info(false)]);
    const layer = new TranscriptsLayer(layerContext(fake, s), 'transcripts');
    await layer.show(true);
    const line = layer.controls.querySelector('.sds-points-status')!;
    expect(line.textContent).toBe(SAMPLE_NOTE);
    const tiles = fake.callsOf('points_tile').length;

    await vi.advanceTimersByTimeAsync(WHOLE_POLL_MS); // the build was refused: the line says so, the sample stays
    expect(fake.callsOf('points')).toHaveLength(2);
    expect(line.textContent).toContain('Showing a sample only');
    expect(line.textContent).toContain('SDS_POINTS_CACHE');
    expect(line.textContent).not.toContain('Indexing');
    expect(s.node.dataset.pointsReason).toBe('refused');
    expect(s.node.dataset.pointsPartial).toBe('true');
    expect(fake.callsOf('points_tile')).toHaveLength(tiles); // the same sample: no tile asked again

    await vi.advanceTimersByTimeAsync(30 * WHOLE_POLL_MS); // nothing will change before the server tries again: no asks
    expect(fake.callsOf('points')).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(60_000 + WHOLE_POLL_MS - 30 * WHOLE_POLL_MS); // the server tries again: building
    expect(fake.callsOf('points')).toHaveLength(3);
    expect(line.textContent).toBe(SAMPLE_NOTE);
    expect(s.node.dataset.pointsReason).toBe('building');

    await vi.advanceTimersByTimeAsync(WHOLE_POLL_MS); // built (room was made): the whole index replaces the sample
    expect(fake.callsOf('points')).toHaveLength(4);
    expect(s.node.dataset.pointsPartial).toBe('false');
    expect(line.textContent).toBe('');
    s.dispose();
  });

  it('a sample refused from the first ask is said at once, and an unknown gene\'s message is not overwritten', async () => {
    const s = layerStage([10, 90], [10, 90]);
    const fake = server([refused(60)]);
    const layer = new TranscriptsLayer(layerContext(fake, s), 'transcripts');
    await layer.show(true);
    const line = layer.controls.querySelector('.sds-points-status')!;
    expect(line.textContent).toContain('tries again in 60 s');
    await vi.advanceTimersByTimeAsync(WHOLE_POLL_MS);
    expect(fake.callsOf('points')).toHaveLength(1);
    await layer.setGenes(['EPCAM']);
    line.textContent = 'No gene “X” in transcripts.'; // another message on the line
    await vi.advanceTimersByTimeAsync(60_000 + WHOLE_POLL_MS);
    expect(fake.callsOf('points')).toHaveLength(2);
    expect(line.textContent).toBe('No gene “X” in transcripts.');
    s.dispose();
  });

  it('a tile of a whole index the server dropped and cannot make again: asks for the index anew and says why', async () => {
    const s = layerStage([10, 90], [10, 90]);
    const whole = { ...info(false), key: 'k-dropped' };
    const sample = { ...refused(60), key: 'sample-k-dropped' };
    const fake = server([whole, sample]).on('points_tile', p => {
      const key = p.key ?? '';
      const stand = key === whole.key; // the server's sample in the whole index's tile, marked so
      const n = stand || key === sample.key ? 2 : 4;
      const data: PointsTileData = {
        key,
        level: 0,
        x: 0,
        y: 0,
        bounds: [0, 0, 100, 100],
        n,
        total: n,
        sampled: n === 2,
        partial: n === 2,
        ...(stand ? { partial_reason: 'refused' as const, refused: 'No space left on device' } : {})
      };
      const steps = Uint16Array.from({ length: n }, (_, i) => (i + 1) * 10000);
      return { data, buffers: [steps.buffer, steps.slice().buffer, Uint16Array.from({ length: n }, (_, i) => i % 2).buffer] };
    });
    const layer = new TranscriptsLayer(layerContext(fake, s), 'transcripts');
    await layer.show(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(fake.callsOf('points')).toHaveLength(2); // the whole index, then (its tile was the sample) asked anew
    expect((fake.callsOf('points_tile') as { key: string }[]).map(c => c.key)).toEqual(['k-dropped', 'sample-k-dropped']);
    const line = layer.controls.querySelector('.sds-points-status')!;
    expect(line.textContent).toContain('Showing a sample only');
    expect(s.node.dataset.pointsPartial).toBe('true');
    expect(s.node.dataset.pointsReason).toBe('refused');
    expect(s.node.dataset.points).toBe('2');
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
