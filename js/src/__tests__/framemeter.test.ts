import { describe, expect, it } from 'vitest';
import { FrameMeter } from '../app/spatial/framemeter';

/** The measures named `name` made since `from` (performance.now()), oldest first. */
function since(name: string, from: number): PerformanceEntry[] {
  return performance.getEntriesByName(name, 'measure').filter(e => e.startTime >= from);
}

describe('a first draw split at its first draw call', () => {
  it('measures the part before the first draw call and the first frame, which together are the draw', () => {
    const created = performance.now();
    const meter = new FrameMeter(created, 1000);
    meter.before();
    const mid = performance.now();
    while (performance.now() - mid < 2) {
      // the frame's own work: a little time between the draw call and the frame's end
    }
    const end = performance.now();
    expect(meter.after(end, null, () => ({ drawn: 1000 }))).toBe(1);
    const [ready] = since('sds:draw-ready', created);
    const [frame] = since('sds:first-frame', created);
    const [draw] = since('sds:canvas-draw', created);
    expect(ready.startTime).toBe(created);
    expect(frame.startTime).toBeCloseTo(ready.startTime + ready.duration, 6); // the first frame starts where the part before ends
    expect(frame.startTime + frame.duration).toBeCloseTo(end, 6);
    expect(draw.startTime).toBe(created);
    expect(draw.duration).toBeCloseTo(end - created, 6);
    expect(frame.duration).toBeGreaterThan(0);
    // later frames are frames, not first draws
    meter.before();
    meter.after(performance.now(), null, () => ({}));
    expect(since('sds:draw-ready', created)).toHaveLength(1);
    expect(since('sds:first-frame', created)).toHaveLength(1);
    expect(since('sds:frame-work', created)).toHaveLength(1);
    expect(since('sds:frame', created)).toHaveLength(1);
  });
});
