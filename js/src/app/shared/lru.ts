/**
 * The page's one least-recently-used map, bounded by entries and/or bytes (as Python's
 * `sds_jupyter/lru.py` is the server's): image and label tiles, kept replies and parked views
 * all evict the same way, and it is tested once (lru.test.ts).
 *
 * Why both bounds: a tile is a known size, so a count is enough; replies and views range from
 * kilobytes to tens of megabytes, so they are bounded by the bytes they hold. An entry's size is
 * read when it is set (`set` again after it changes, as a reply that arrived). `onDrop` is told of
 * every entry the bounds push out, so an owner can free what the entry holds (a WebGL context).
 */

export type LruOptions<V> = {
  /** At most this many entries (none: unbounded by count). */
  maxEntries?: number;
  /** At most this many bytes, as `sizeOf` counts them (none: unbounded by size). */
  maxBytes?: number;
  sizeOf?: (value: V) => number;
  /**
   * Keep the entry just set even alone over the byte bound (a reply its caller is about to use);
   * without it, as in `sds_jupyter/lru.py`, a value larger than the whole bound is not kept.
   */
  keepNewest?: boolean;
  /** Told of each entry dropped to make room (not of `delete` or `clear`). */
  onDrop?: (key: string, value: V) => void;
};

export class Lru<V> {
  /** By key, least recently used first (a Map keeps insertion order). */
  private readonly map = new Map<string, { value: V; bytes: number }>();
  private total = 0;

  constructor(private readonly options: LruOptions<V> = {}) {}

  get size(): number {
    return this.map.size;
  }

  /** Bytes of the entries held, as `sizeOf` counted them when set. */
  get bytes(): number {
    return this.total;
  }

  has(key: string): boolean {
    return this.map.has(key);
  }

  /** The value under `key`, now the most recently used. */
  get(key: string): V | undefined {
    const found = this.map.get(key);
    if (found) {
      this.map.delete(key);
      this.map.set(key, found);
    }
    return found?.value;
  }

  /** The value under `key`, its recency left alone (a stand-in search must not keep every coarse tile alive). */
  peek(key: string): V | undefined {
    return this.map.get(key)?.value;
  }

  /**
   * Keep `value` under `key` as the most recently used, then drop the least recently used
   * until within bounds (the entry just set last, and never with `keepNewest`).
   */
  set(key: string, value: V): void {
    this.remove(key);
    const bytes = this.options.sizeOf?.(value) ?? 0;
    this.map.set(key, { value, bytes });
    this.total += bytes;
    this.trim(key);
  }

  /** Take `key` out without telling `onDrop` (its caller has the value); whether it was held. */
  delete(key: string): boolean {
    return this.remove(key) !== undefined;
  }

  keys(): string[] {
    return [...this.map.keys()];
  }

  /** The entries, least recently used first. */
  entries(): [string, V][] {
    return [...this.map].map(([key, { value }]) => [key, value]);
  }

  clear(): void {
    this.map.clear();
    this.total = 0;
  }

  private remove(key: string): V | undefined {
    const found = this.map.get(key);
    if (!found) {
      return undefined;
    }
    this.map.delete(key);
    this.total -= found.bytes;
    return found.value;
  }

  private over(): boolean {
    const { maxEntries, maxBytes } = this.options;
    return (maxEntries !== undefined && this.map.size > maxEntries) || (maxBytes !== undefined && this.total > maxBytes);
  }

  private trim(keep: string): void {
    for (const key of this.map.keys()) {
      // deleting the entry the iteration is at is safe for a Map
      if (!this.over()) {
        return;
      }
      if (key !== keep || !this.options.keepNewest) {
        const value = this.remove(key) as V;
        this.options.onDrop?.(key, value);
      }
    }
  }
}
