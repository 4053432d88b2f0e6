import { describe, expect, it } from 'vitest';
import { VirtualList } from '../app/shared/vlist';

/**
 * jsdom lays nothing out, so a row's height is given as the browser would measure it
 * (`offsetHeight`); the list's own arithmetic is what is tested. A real JupyterLab checks
 * the wrapped rows themselves (ui-tests, issue 41 items 1 and 2).
 */
function rowOf(height: number): HTMLElement {
  const row = document.createElement('div');
  Object.defineProperty(row, 'offsetHeight', { value: height });
  return row;
}

function listOf(heights: number[], onHeight?: (h: number) => void): { node: HTMLElement; list: VirtualList } {
  const node = document.createElement('div');
  document.body.append(node);
  const list = new VirtualList(node, { rowHeight: 28, renderRow: i => rowOf(heights[i]), fallbackHeight: 1000, onHeight });
  list.setCount(heights.length);
  return { node, list };
}

const tops = (node: HTMLElement) =>
  [...node.querySelectorAll<HTMLElement>('[data-index]')].map(r => [Number(r.dataset.index), parseFloat(r.style.top)]);

describe('a virtual list of rows of different heights', () => {
  it('puts each row below the measured height of the ones above, and tells the whole height', () => {
    const told: number[] = [];
    const { node, list } = listOf([28, 68, 28, 48], h => told.push(h));
    expect(tops(node)).toEqual([
      [0, 0],
      [1, 28],
      [2, 96],
      [3, 124]
    ]);
    expect(list.totalHeight()).toBe(172);
    expect(node.querySelector<HTMLElement>('.sds-vlist-spacer')!.style.height).toBe('172px');
    expect(told[told.length - 1]).toBe(172);
    // a row is never squeezed below one line
    expect(node.querySelector<HTMLElement>('[data-index="1"]')!.style.minHeight).toBe('28px');
  });

  it('scrolls a tall row wholly into view', () => {
    const heights = Array.from({ length: 100 }, (_, i) => (i === 60 ? 100 : 28));
    const { node, list } = listOf(heights);
    Object.defineProperty(node, 'clientHeight', { value: 200 });
    list.scrollToIndex(60);
    list.scrollToIndex(61);
    // rows 0-59 are not all drawn yet: the list goes by what it measured, 28 px for the rest
    const top61 = parseFloat(node.querySelector<HTMLElement>('[data-index="61"]')!.style.top);
    expect(node.scrollTop).toBeGreaterThanOrEqual(top61 + 28 - 200);
    expect(parseFloat(node.querySelector<HTMLElement>('[data-index="61"]')!.style.top)).toBe(
      parseFloat(node.querySelector<HTMLElement>('[data-index="60"]')!.style.top) + 100
    );
  });
});

describe('row ids', () => {
  it('are the same after a redraw and differ between lists, whatever id the host gave', () => {
    const render = () => {
      const row = rowOf(28);
      row.id = 'the-host-s-own'; // a host's id would change or clash: the list names its rows
      return row;
    };
    const a = document.createElement('div');
    const b = document.createElement('div');
    document.body.append(a, b);
    const first = new VirtualList(a, { rowHeight: 28, renderRow: render, fallbackHeight: 200, idPrefix: 'sds-tree' });
    const second = new VirtualList(b, { rowHeight: 28, renderRow: render, fallbackHeight: 200, idPrefix: 'sds-tree' });
    first.setCount(3);
    second.setCount(3);
    const ids = (node: HTMLElement) => [...node.querySelectorAll<HTMLElement>('[data-index]')].map(r => r.id);
    const before = ids(a);
    expect(before[0]).toMatch(/^sds-tree-\d+-0$/);
    first.refresh();
    expect(ids(a)).toEqual(before);
    expect(new Set([...before, ...ids(b)]).size).toBe(6);
  });
});
