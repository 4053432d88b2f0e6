/**
 * Image channels blended in the browser: each channel arrives as a uint8 plane over its own
 * value range (the `channels` request), so turning one on or off, or changing its color or
 * contrast limits, is a local recomposite (a few ms per megapixel), no round trip.
 */

import { packColor } from './raster';
import type { ChannelInfo } from '../shared/types';

export type ChannelState = ChannelInfo;

/** A channel's contrast limits as 0-255 steps of its plane. */
export function limitsInSteps(ch: ChannelState): [number, number] {
  const [min, max] = ch.range;
  const span = max > min ? max - min : 1;
  const lo = ((ch.contrast_limits[0] - min) / span) * 255;
  const hi = ((ch.contrast_limits[1] - min) / span) * 255;
  return [lo, hi > lo ? hi : lo + 1e-3];
}

/** The visible channels added up in their colors, as RGBA (opaque), `width`×`height`. */
export function composite(planes: Uint8Array[], channels: ChannelState[], width: number, height: number): Uint8ClampedArray {
  const n = width * height;
  const acc = new Float32Array(n * 3);
  channels.forEach((ch, k) => {
    const plane = planes[k];
    if (!ch.visible || !plane || plane.length < n) {
      return;
    }
    const packed = packColor(ch.color, 0xffffffff);
    const rgb = [packed & 255, (packed >>> 8) & 255, (packed >>> 16) & 255].map(v => v / 255);
    const [lo, hi] = limitsInSteps(ch);
    const scale = 1 / (hi - lo);
    // one lookup table per channel: 256 entries instead of a division per pixel
    const lut = new Float32Array(256);
    for (let v = 0; v < 256; v++) {
      lut[v] = Math.min(1, Math.max(0, (v - lo) * scale));
    }
    for (let i = 0; i < n; i++) {
      const t = lut[plane[i]];
      if (t > 0) {
        acc[i * 3] += t * rgb[0];
        acc[i * 3 + 1] += t * rgb[1];
        acc[i * 3 + 2] += t * rgb[2];
      }
    }
  });
  const out = new Uint8ClampedArray(n * 4);
  for (let i = 0; i < n; i++) {
    out[i * 4] = acc[i * 3] * 255;
    out[i * 4 + 1] = acc[i * 3 + 1] * 255;
    out[i * 4 + 2] = acc[i * 3 + 2] * 255;
    out[i * 4 + 3] = 255;
  }
  return out;
}
