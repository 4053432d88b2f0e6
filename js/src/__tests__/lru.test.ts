import { describe, expect, it } from 'vitest';
import { Lru } from '../app/shared/lru';

describe('the page\'s one LRU', () => {
  it('drops the least recently used entry past its count; get refreshes, peek does not', () => {
    const c = new Lru<number>({ maxEntries: 2 });
    c.set('a', 1);
    c.set('b', 2);
    expect(c.get('a')).toBe(1); // a is fresh now
    c.set('c', 3);
    expect(c.keys()).toEqual(['a', 'c']);
    expect(c.peek('a')).toBe(1);
    c.set('d', 4);
    expect(c.keys()).toEqual(['c', 'd']); // peek did not refresh a
  });

  it('counts bytes as each entry is set, again when it is set again, and drops to fit', () => {
    const dropped: string[] = [];
    const c = new Lru<{ n: number }>({ maxBytes: 10, sizeOf: v => v.n, onDrop: key => dropped.push(key) });
    const a = { n: 0 };
    c.set('a', a); // a pending reply: no size yet
    c.set('b', { n: 4 });
    a.n = 5;
    c.set('a', a); // arrived: counted now, and the most recent
    expect(c.bytes).toBe(9);
    c.set('c', { n: 4 });
    expect(c.keys()).toEqual(['a', 'c']);
    expect(dropped).toEqual(['b']);
    expect(c.bytes).toBe(9);
  });

  it('keeps the newest alone over the bytes only when asked to, as lru.py does', () => {
    const plain = new Lru<number>({ maxBytes: 10, sizeOf: v => v });
    plain.set('small', 3);
    plain.set('huge', 11);
    expect(plain.keys()).toEqual([]); // nothing fits beside it and it does not fit alone
    const keeping = new Lru<number>({ maxBytes: 10, sizeOf: v => v, keepNewest: true });
    keeping.set('small', 3);
    keeping.set('huge', 11);
    expect(keeping.keys()).toEqual(['huge']);
    expect(keeping.bytes).toBe(11);
  });

  it('tells onDrop of what the bounds push out, not of what a caller deletes or clears', () => {
    const dropped: [string, number][] = [];
    const c = new Lru<number>({ maxEntries: 1, onDrop: (key, value) => dropped.push([key, value]) });
    c.set('a', 1);
    c.set('b', 2);
    expect(c.delete('b')).toBe(true);
    expect(c.delete('b')).toBe(false);
    c.set('c', 3);
    c.clear();
    expect(dropped).toEqual([['a', 1]]);
    expect([c.size, c.bytes, c.has('c')]).toEqual([0, 0, false]);
  });

  it('lists its entries least recently used first', () => {
    const c = new Lru<string>();
    c.set('x', 'X');
    c.set('y', 'Y');
    c.get('x');
    expect(c.entries()).toEqual([
      ['y', 'Y'],
      ['x', 'X']
    ]);
  });
});
