/**
 * A virtual list: only the rows in view (plus a few) are in the DOM, so thousands of
 * rows scroll and select without lag.
 *
 * Rows are `rowHeight` tall until drawn; a drawn row taller than that (a long title
 * wrapped to more lines in a narrow panel) is measured and the rows below it move down,
 * so a row shows all of its text instead of cutting it. Heights are measured again when
 * the list's width changes, as jupyterlab-git's and VS Code's lists of variable rows do.
 */

export type VirtualListOptions = {
  /** A row's least (and, until it is drawn, assumed) height. */
  rowHeight: number;
  renderRow: (index: number) => HTMLElement;
  /** Rows rendered beyond each edge of the view. */
  overscan?: number;
  /** Height assumed when the container has no layout yet (hidden, or tests). */
  fallbackHeight?: number;
  /** Told the list's whole height when a measured row changed it (a host sizing the list to its rows). */
  onHeight?: (height: number) => void;
  /** The start of the rows' ids (`<idPrefix>-<list>-<index>`); `sds-vrow` unless given. */
  idPrefix?: string;
};

let listIds = 0;

/**
 * Rows carry their place in the whole list (`aria-setsize`, `aria-posinset`),
 * since only some are in the DOM; and the list's `aria-activedescendant` names
 * the selected row (`aria-selected="true"`) only while that row is rendered, so
 * it never points at a row that scrolled away or was replaced by a refresh.
 * A row's id is the list's and the row's index, the same at every redraw: a redraw
 * (the clock's tick, a refresh) puts back the row the attribute names, so a reader
 * who took the name just before it (a screen reader, a test) still finds the row.
 * A host gives its rows no id of its own.
 */
export class VirtualList {
  readonly node: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly opts: Required<Omit<VirtualListOptions, 'onHeight' | 'idPrefix'>> & Pick<VirtualListOptions, 'onHeight'>;
  private count = 0;
  private first = -1;
  private last = -1;
  private raf = 0;
  private resize: ResizeObserver | null = null;
  private width = -1;
  private readonly rows = new Map<number, HTMLElement>();
  private readonly idPrefix: string;
  /** Each row's height: measured once drawn, else `rowHeight`. */
  private heights: number[] = [];
  /** `tops[i]`: where row `i` starts; `tops[count]`: the whole height. */
  private tops: number[] = [0];

  constructor(node: HTMLElement, opts: VirtualListOptions) {
    this.node = node;
    this.opts = { overscan: 4, fallbackHeight: 480, ...opts };
    this.idPrefix = `${opts.idPrefix ?? 'sds-vrow'}-${++listIds}`;
    this.node.classList.add('sds-vlist');
    this.spacer = document.createElement('div');
    this.spacer.className = 'sds-vlist-spacer';
    this.node.append(this.spacer);
    this.node.addEventListener('scroll', this.onScroll, { passive: true });
    // a taller view (panel resized, widget shown after being hidden) needs more rows; a
    // narrower one wraps titles to more lines, so rows are measured again
    if (typeof ResizeObserver !== 'undefined') {
      this.resize = new ResizeObserver(() => this.onScroll());
      this.resize.observe(this.node);
    }
  }

  dispose(): void {
    this.resize?.disconnect();
    this.node.removeEventListener('scroll', this.onScroll);
    if (this.raf) {
      cancelAnimationFrame(this.raf);
    }
  }

  setCount(count: number): void {
    this.count = count;
    this.heights = new Array<number>(count).fill(this.opts.rowHeight);
    this.layout();
    this.refresh();
  }

  /** The list's whole height: measured rows at their height, the others at `rowHeight`. */
  totalHeight(): number {
    return this.tops[this.count];
  }

  /** Re-render the rows in view (e.g. after the selection changed). */
  refresh(): void {
    for (const row of this.rows.values()) {
      row.remove();
    }
    this.rows.clear();
    this.first = this.last = -1;
    this.update();
    this.syncActive();
  }

  /** Scroll the least distance that brings row `index` fully into view. */
  scrollToIndex(index: number): void {
    const height = this.viewHeight();
    const top = this.tops[index] ?? 0;
    const bottom = this.tops[index + 1] ?? top + this.opts.rowHeight;
    if (top < this.node.scrollTop) {
      this.node.scrollTop = top;
    } else if (bottom > this.node.scrollTop + height) {
      this.node.scrollTop = bottom - height;
    }
    this.update();
  }

  /** Rows per page, for PageUp/PageDown. */
  pageSize(): number {
    return Math.max(1, Math.floor(this.viewHeight() / this.opts.rowHeight));
  }

  /** Index range currently rendered (inclusive), for tests. */
  renderedRange(): [number, number] {
    return [this.first, this.last];
  }

  private viewHeight(): number {
    return this.node.clientHeight || this.opts.fallbackHeight;
  }

  private onScroll = (): void => {
    if (this.raf) {
      return;
    }
    if (typeof requestAnimationFrame === 'undefined') {
      this.update();
      return;
    }
    this.raf = requestAnimationFrame(() => {
      this.raf = 0;
      this.update();
    });
  };

  /** The row at height `y` (binary search over the row tops). */
  private indexAt(y: number): number {
    let lo = 0;
    let hi = this.count - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.tops[mid] <= y) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return Math.max(0, lo);
  }

  private layout(): void {
    const tops = new Array<number>(this.count + 1);
    tops[0] = 0;
    for (let i = 0; i < this.count; i++) {
      tops[i + 1] = tops[i] + this.heights[i];
    }
    this.tops = tops;
    this.spacer.style.height = `${tops[this.count]}px`;
  }

  update(): void {
    const { overscan } = this.opts;
    const top = this.node.scrollTop;
    const first = Math.max(0, this.indexAt(top) - overscan);
    const last = Math.min(this.count - 1, this.indexAt(top + this.viewHeight()) + overscan);
    const width = this.node.clientWidth;
    if (first === this.first && last === this.last && width === this.width) {
      this.syncActive();
      return;
    }
    this.first = first;
    this.last = last;
    // keep the rows still in view, drop the rest, render only the newcomers
    for (const [i, row] of this.rows) {
      if (i < first || i > last) {
        row.remove();
        this.rows.delete(i);
      }
    }
    for (let i = first; i <= last; i++) {
      if (this.rows.has(i)) {
        continue;
      }
      const row = this.opts.renderRow(i);
      row.style.position = 'absolute';
      row.style.top = `${this.tops[i]}px`;
      row.style.minHeight = `${this.opts.rowHeight}px`;
      row.style.left = '0';
      row.style.right = '0';
      row.dataset.index = String(i);
      row.setAttribute('aria-setsize', String(this.count));
      row.setAttribute('aria-posinset', String(i + 1));
      row.id = `${this.idPrefix}-${i}`;
      this.rows.set(i, row);
      this.node.append(row);
    }
    this.width = width;
    this.measure();
    this.syncActive();
  }

  /** Take the drawn rows' heights; when one changed, move the rows below it and tell the host. */
  private measure(): void {
    let changed = false;
    for (const [i, row] of this.rows) {
      const height = row.offsetHeight; // 0 without layout (hidden, or tests): keep the assumed height
      if (height > 0 && Math.abs(height - this.heights[i]) > 0.5) {
        this.heights[i] = height;
        changed = true;
      }
    }
    if (!changed) {
      return;
    }
    this.layout();
    for (const [i, row] of this.rows) {
      row.style.top = `${this.tops[i]}px`;
    }
    this.opts.onHeight?.(this.totalHeight());
    // taller rows may have pushed rows out of (or shorter ones pulled rows into) the view
    this.onScroll();
  }

  /** Point `aria-activedescendant` at the rendered selected row, or drop it. */
  syncActive(): void {
    let active: HTMLElement | null = null;
    for (const row of this.rows.values()) {
      if (row.getAttribute('aria-selected') === 'true') {
        active = row;
        break;
      }
    }
    if (active) {
      this.node.setAttribute('aria-activedescendant', active.id);
    } else {
      this.node.removeAttribute('aria-activedescendant');
    }
  }
}
