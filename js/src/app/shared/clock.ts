/**
 * One reading of "now" for every relative time a page shows ("4 minutes ago").
 *
 * Each view used to read `Date.now()` when it drew and redraw on its own timer, so the tree and the
 * history could name the same version "5 minutes ago" and "4 minutes ago" when their draws fell on
 * either side of a minute. Views read the clock's instant instead and redraw together when it moves:
 * on the tick, and whenever new rows arrive (`advance`), so what one view says the other says too.
 */

import { RELATIVE_TIME_TICK } from './format';

export class Clock {
  private instant: number;
  private readonly listeners = new Set<() => void>();
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly source: () => number = Date.now,
    tick: number = RELATIVE_TIME_TICK
  ) {
    this.instant = source();
    this.timer = setInterval(() => this.advance(), tick);
  }

  /** The instant every view draws from (bound: pass it where a `() => number` is wanted). */
  readonly now = (): number => this.instant;

  /** Read the time again and have every view redraw from it. */
  advance(): void {
    this.instant = this.source();
    for (const redraw of [...this.listeners]) {
      redraw();
    }
  }

  /** Call `redraw` whenever the instant moves; returns the unsubscribe. */
  onTick(redraw: () => void): () => void {
    this.listeners.add(redraw);
    return () => this.listeners.delete(redraw);
  }

  dispose(): void {
    clearInterval(this.timer);
    this.listeners.clear();
  }
}

let page: Clock | null = null;

/** The page's clock, shared by the panels and the sidebar so they agree with each other too. */
export function pageClock(): Clock {
  page ??= new Clock();
  return page;
}
