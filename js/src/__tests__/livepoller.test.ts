/**
 * The live poll: a panel brought to the front asks at once whether the datasets folder moved,
 * instead of waiting for the next tick. Time is frozen (fake timers), so "at once" means
 * "before any tick", not a wall-clock bound.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { LivePoller } from '../app/history/tree';
import { FakeTransport } from './fixtures';

/** happy-dom lays nothing out; this stands in for the one browser callback the poller listens to. */
class ManualResizeObserver {
  static last: ManualResizeObserver | null = null;
  constructor(readonly callback: () => void) {
    ManualResizeObserver.last = this;
  }
  observe(): void {}
  disconnect(): void {}
}

describe('LivePoller', () => {
  const original = globalThis.ResizeObserver;
  beforeEach(() => {
    vi.useFakeTimers();
    (globalThis as { ResizeObserver: unknown }).ResizeObserver = ManualResizeObserver;
  });
  afterEach(() => {
    vi.useRealTimers();
    (globalThis as { ResizeObserver: unknown }).ResizeObserver = original;
  });

  it('asks nothing while hidden and asks at once when shown, before any tick', async () => {
    let fingerprint = 'a';
    const t = new FakeTransport().on('fingerprint', () => ({ fingerprint }));
    let visible = false;
    const changed = vi.fn();
    const poller = new LivePoller(t, () => visible, changed, 4000);
    poller.reset('a');
    poller.start();
    poller.observe(document.createElement('div'));
    await vi.advanceTimersByTimeAsync(12000);
    expect(t.callsOf('fingerprint')).toHaveLength(0);
    // a notebook saved meanwhile; the panel's tab is chosen again
    fingerprint = 'b';
    visible = true;
    ManualResizeObserver.last!.callback();
    await vi.advanceTimersByTimeAsync(0); // settle the reply; no tick is due at +0 ms
    expect(changed).toHaveBeenCalledTimes(1);
    expect(t.callsOf('fingerprint')).toHaveLength(1);
    // the tick still runs while shown, and says nothing when nothing moved
    await vi.advanceTimersByTimeAsync(4000);
    expect(t.callsOf('fingerprint')).toHaveLength(2);
    expect(changed).toHaveBeenCalledTimes(1);
    poller.stop();
  });
});
