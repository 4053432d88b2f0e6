import { describe, expect, it } from 'vitest';

import { DETAIL_AT, DetailLoader, clip, covers, detailWanted, magnification, type Detail, type Overview } from '../app/detail';
import type { ChannelState } from '../app/channels';
import { FakeTransport } from './fixtures';

/** A 1,000 px overview of an image 870.4 units (µm) wide: 0.8704 units per overview pixel. */
const IMAGE: Overview = { width: 1000, height: 1000, bounds: [0, 0, 870.4, 870.4] };
const CHANNELS: ChannelState[] = [
  { name: 'DAPI', color: '#0000ff', visible: true, contrast_limits: [0, 100], range: [0, 100] },
  { name: 'CD45', color: '#00ff00', visible: true, contrast_limits: [5, 50], range: [5, 50] }
];

describe('when detail is fetched and for what region', () => {
  it('measures how far the view magnifies the overview', () => {
    // all of it on 1,000 screen px: one screen pixel per overview pixel
    expect(magnification([0, 0, 870.4, 870.4], 1000, IMAGE)).toBeCloseTo(1);
    expect(magnification([0, 0, 217.6, 217.6], 1000, IMAGE)).toBeCloseTo(4);
  });

  it('asks nothing while the overview is sharp enough or the image is off screen', () => {
    expect(detailWanted([0, 0, 870.4, 870.4], [1000, 1000], IMAGE)).toBeNull();
    // 1.4x: still below DETAIL_AT
    expect(DETAIL_AT).toBe(1.5);
    expect(detailWanted([0, 0, 621.7, 621.7], [1000, 1000], IMAGE)).toBeNull();
    expect(detailWanted([2000, 2000, 2100, 2100], [1000, 1000], IMAGE)).toBeNull();
  });

  it('asks for the region grown by a quarter, clipped to the image, within the screen budget', () => {
    const want = detailWanted([400, 400, 500, 500], [800, 600], IMAGE)!;
    expect(want.region).toEqual([375, 375, 525, 525]);
    expect(want.maxSide).toBe(1200);
    const edge = detailWanted([-20, 800, 80, 900], [800, 800], IMAGE)!;
    expect(edge.region).toEqual([0, 775, 105, 870.4]);
    expect(detailWanted([400, 400, 500, 500], [4000, 4000], IMAGE)!.maxSide).toBe(2048);
  });

  it('clips and covers', () => {
    expect(clip([10, 10, 20, 20], [0, 0, 15, 15])).toEqual([10, 10, 15, 15]);
    expect(clip([10, 10, 20, 20], [30, 30, 40, 40])).toBeNull();
    expect(covers([0, 0, 10, 10], [1, 1, 9, 9])).toBe(true);
    expect(covers([0, 0, 10, 10], [1, 1, 11, 9])).toBe(false);
  });
});

describe('DetailLoader', () => {
  function transport(level = 0) {
    return new FakeTransport().on('image_region', params => {
      const [x0, y0, x1, y1] = String(params.region).split(',').map(Number);
      const width = 4;
      const height = 2;
      return {
        data: { level, levels: 5, width, height, bounds: [x0, y0, x1, y1] as [number, number, number, number], channels: 2 },
        buffers: [Uint8Array.from([0, 255, 0, 255, 0, 255, 0, 255]).buffer, new Uint8Array(8).buffer]
      };
    });
  }

  it('asks the service with the overview channel ranges, once per region, and hands the planes over', async () => {
    const t = transport();
    const got: Detail[] = [];
    const loader = new DetailLoader(t, 3, 'fig', IMAGE, d => got.push(d));
    await loader.update([400, 400, 500, 500], [800, 600], CHANNELS);
    expect(t.callsOf('image_region')).toEqual([
      { version: 3, figure: 'fig', region: '375,375,525,525', max_side: 1200, ranges: '0,100;5,50' }
    ]);
    expect(got).toHaveLength(1);
    expect(got[0].bounds).toEqual([375, 375, 525, 525]);
    // a small pan inside what arrived, or zoomed out to the overview: nothing new
    await loader.update([410, 410, 510, 510], [800, 600], CHANNELS);
    await loader.update([0, 0, 870.4, 870.4], [800, 600], CHANNELS);
    expect(t.callsOf('image_region')).toHaveLength(1);
    // panned away: a new region
    await loader.update([600, 600, 700, 700], [800, 600], CHANNELS);
    expect(t.callsOf('image_region')).toHaveLength(2);
    // the detail in the channels' colors: channel 0 blue where its plane is 255
    const rgba = DetailLoader.rgba(got[0], CHANNELS);
    expect([...rgba.subarray(0, 8)]).toEqual([0, 0, 0, 255, 0, 0, 255, 255]);
  });

  it('asks again when zoomed in past a coarser level, not past the finest', async () => {
    const coarse = transport(2);
    const loader = new DetailLoader(coarse, 1, 'fig', IMAGE, () => undefined);
    await loader.update([400, 400, 500, 500], [800, 600], CHANNELS);
    // 4 px over 150 units is coarser than the screen: zooming in inside it asks for more
    await loader.update([440, 440, 460, 460], [800, 600], CHANNELS);
    expect(coarse.callsOf('image_region')).toHaveLength(2);
    const fine = transport(0);
    const best = new DetailLoader(fine, 1, 'fig', IMAGE, () => undefined);
    await best.update([400, 400, 500, 500], [800, 600], CHANNELS);
    await best.update([440, 440, 460, 460], [800, 600], CHANNELS);
    expect(fine.callsOf('image_region')).toHaveLength(1);
  });

  it('drops a reply for a region the view has left, and reports a refusal', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>(r => (release = r));
    let first = true;
    const t = new FakeTransport().on('image_region', async params => {
      if (first) {
        first = false;
        await gate;
      }
      const b = String(params.region).split(',').map(Number) as [number, number, number, number];
      return { data: { level: 0, levels: 1, width: 1, height: 1, bounds: b, channels: 1 }, buffers: [new Uint8Array(1).buffer] };
    });
    const got: Detail[] = [];
    const loader = new DetailLoader(t, 1, 'fig', IMAGE, d => got.push(d));
    const slow = loader.update([100, 100, 200, 200], [800, 800], CHANNELS);
    await loader.update([600, 600, 700, 700], [800, 800], CHANNELS);
    release();
    await slow;
    expect(got.map(d => d.bounds[0])).toEqual([575]);
    const errors: string[] = [];
    const refused = new DetailLoader(
      new FakeTransport().on('image_region', () => {
        throw new Error('The region is larger than 2048 pixels; zoom in further.');
      }),
      1,
      'fig',
      IMAGE,
      () => undefined,
      m => errors.push(m)
    );
    await refused.update([400, 400, 500, 500], [800, 800], CHANNELS);
    expect(errors).toEqual(['The region is larger than 2048 pixels; zoom in further.']);
  });
});
