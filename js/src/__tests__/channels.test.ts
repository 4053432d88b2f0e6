import { describe, expect, it } from 'vitest';

import { composite, limitsInSteps, type ChannelState } from '../app/spatial/channels';

const ch = (extra: Partial<ChannelState>): ChannelState => ({
  name: 'c',
  color: '#ff0000',
  visible: true,
  contrast_limits: [0, 100],
  range: [0, 100],
  ...extra
});

describe('channels blended in the browser', () => {
  it('maps raw contrast limits onto the plane steps', () => {
    expect(limitsInSteps(ch({ contrast_limits: [25, 75] }))).toEqual([63.75, 191.25]);
    const [lo, hi] = limitsInSteps(ch({ contrast_limits: [50, 50] }));
    expect(hi).toBeGreaterThan(lo); // never a zero span
  });

  it('adds visible channels in their colors, clipped at the limits; hidden ones count for nothing', () => {
    const planes = [Uint8Array.from([0, 128, 255]), Uint8Array.from([255, 255, 0])];
    const red = ch({ name: 'dapi' });
    const green = ch({ name: 'cd3', color: '#00ff00' });
    const out = composite(planes, [red, green], 3, 1);
    expect([...out]).toEqual([0, 255, 0, 255, 128, 255, 0, 255, 255, 0, 0, 255]);
    green.visible = false;
    expect([...composite(planes, [red, green], 3, 1)]).toEqual([0, 0, 0, 255, 128, 0, 0, 255, 255, 0, 0, 255]);
    // a narrower window saturates sooner
    red.contrast_limits = [0, 50];
    expect(composite(planes, [red, green], 3, 1)[4]).toBe(255);
  });
});
