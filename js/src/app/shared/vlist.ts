/**
 * A fixed-row-height virtual list: only the rows in view (plus a few) are in
 * the DOM, so thousands of rows scroll and select without lag.
 */

export type VirtualListOptions = {
  rowHeight: number;
  renderRow: (index: number) => HTMLElement;
  /** Rows rendered beyond each edge of the view. */
  overscan?: number;
  /** Height assumed when the container has no layout yet (hidden, or tests). */
  fallbackHeight?: number;
};

let listIds = 0;

/**
 * Rows carry their place in the whole list (`aria-setsize`, `aria-posinset`),
 * since only some are in the DOM; and the list's `aria-activedescendant` names
 * the selected row (`aria-selected="true"`) only while that row is rendered, so
 * it never points at a row that scrolled away or was replaced by a refresh.
 */
export class VirtualList {
  readonly node: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly opts: Required<VirtualListOptions>;
  private count = 0;
  private first = -1;
  private last = -1;
  private raf = 0;
  private resize: ResizeObserver | null = null;
  private readonly rows = new Map<number, HTMLElement>();
  private readonly idPrefix = `sds-vrow-${++listIds}`;

  constructor(node: HTMLElement, opts: VirtualListOptions) {
    this.node = node;
    this.opts = { overscan: 4, fallbackHeight: 480, ...opts };
    this.node.classList.add('sds-vlist');
    this.spacer = document.createElement('div');
    this.spacer.className = 'sds-vlist-spacer';
    this.node.append(this.spacer);
    this.node.addEventListener('scroll', this.onScroll, { passive: true });
    // a taller view (panel resized, widget shown after being hidden) needs more rows
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
    this.spacer.style.height = `${count * this.opts.rowHeight}px`;
    this.refresh();
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
    const rh = this.opts.rowHeight;
    const height = this.viewHeight();
    const top = index * rh;
    if (top < this.node.scrollTop) {
      this.node.scrollTop = top;
    } else if (top + rh > this.node.scrollTop + height) {
      this.node.scrollTop = top + rh - height;
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

  update(): void {
    const { rowHeight: rh, overscan } = this.opts;
    const top = this.node.scrollTop;
    const first = Math.max(0, Math.floor(top / rh) - overscan);
    const last = Math.min(this.count - 1, Math.ceil((top + this.viewHeight()) / rh) + overscan);
    if (first === this.first && last === this.last) {
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
      row.style.top = `${i * rh}px`;
      row.style.height = `${rh}px`;
      row.style.left = '0';
      row.style.right = '0';
      row.dataset.index = String(i);
      row.setAttribute('aria-setsize', String(this.count));
      row.setAttribute('aria-posinset', String(i + 1));
      if (!row.id) {
        row.id = `${this.idPrefix}-${i}`;
      }
      this.rows.set(i, row);
      this.node.append(row);
    }
    this.syncActive();
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
