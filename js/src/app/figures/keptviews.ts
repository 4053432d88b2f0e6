/**
 * Canvas views kept across visits: going back to a version shows its figures as they were left.
 *
 * Why: a view is expensive to make again (the cell index, the coloured raster, a WebGL context
 * and its first frame: most of a second for 100,000 cells under software WebGL, seconds for a
 * million) while nothing it shows can change (a version's figures never change). So a version's
 * views are parked when another version is shown: their nodes detached, their state kept, and
 * re-attached as they were on a revisit, with no request.
 *
 * Bounded three ways, least recently shown dropped first: by count and by bytes (the buffers a
 * view holds), and by live WebGL contexts: browsers keep about 16 a page and take the oldest
 * away past that, so only MAX_LIVE_KEPT parked views keep theirs; the others give it back and
 * make a new one when shown again (still without a request). A view dropped is disposed.
 */

import { Lru } from '../shared/lru';

/** Views kept, whichever versions they show. */
export const MAX_KEPT_VIEWS = 12;
/** Bytes of buffers the kept views may hold (a 100,000-cell view holds about 20 MB). */
export const MAX_KEPT_BYTES = 512 * 1024 * 1024;
/** Parked views that keep their WebGL context; the figures on screen need the rest of the ~16. */
export const MAX_LIVE_KEPT = 6;

/** What a kept view must offer: its node, its size, and parking. */
export interface Keepable {
  readonly node: HTMLElement;
  /** Bytes of the buffers it holds. */
  readonly bytes: number;
  /** Whether it holds a WebGL context now. */
  readonly live: boolean;
  /** Taken off the page: keep the context (if any) and stop asking for anything. */
  park(): void;
  /** Back on the page: draw again from what it kept. */
  unpark(): void;
  /** Give the WebGL context back (made again when shown). */
  releaseContext(): void;
  dispose(): void;
}

type Entry<V> = { view: V; owner: object };

export class KeptViews<V extends Keepable> {
  /** By key, least recently kept first; what the count and byte bounds drop is disposed. */
  private readonly entries: Lru<Entry<V>>;

  constructor(
    readonly maxViews = MAX_KEPT_VIEWS,
    readonly maxBytes = MAX_KEPT_BYTES,
    readonly maxLive = MAX_LIVE_KEPT
  ) {
    this.entries = new Lru({ maxEntries: maxViews, maxBytes, sizeOf: e => e.view.bytes, onDrop: (_, e) => e.view.dispose() });
  }

  get size(): number {
    return this.entries.size;
  }

  get bytes(): number {
    return this.entries.bytes;
  }

  /** Parked views holding a WebGL context. */
  get live(): number {
    return this.entries.entries().filter(([, e]) => e.view.live).length;
  }

  /** Park `view` under `key` (its owner's: only that owner takes it back), dropping what no longer fits. */
  keep(owner: object, key: string, view: V): void {
    const old = this.entries.peek(key);
    if (old && old.view !== view) {
      old.view.dispose();
    }
    this.entries.delete(key);
    view.park();
    this.entries.set(key, { view, owner });
    this.releaseOldContexts();
  }

  /** The view kept under `key` for `owner`, taken out of the cache (the caller shows it, then keeps it again). */
  take(owner: object, key: string): V | null {
    const found = this.entries.peek(key);
    if (!found || found.owner !== owner) {
      return null;
    }
    this.entries.delete(key);
    return found.view;
  }

  /** Dispose every view `owner` kept (a panel closed: its transport goes with it). */
  drop(owner: object): void {
    for (const [key, entry] of this.entries.entries()) {
      if (entry.owner === owner) {
        this.entries.delete(key);
        entry.view.dispose();
      }
    }
  }

  /** Past `maxLive` parked contexts, the least recently kept views give theirs back. */
  private releaseOldContexts(): void {
    let live = this.live;
    for (const [, { view }] of this.entries.entries()) {
      if (live <= this.maxLive) {
        break;
      }
      if (view.live) {
        view.releaseContext();
        live--;
      }
    }
  }
}
