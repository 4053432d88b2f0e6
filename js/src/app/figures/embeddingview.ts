/**
 * The embedding panel beside the tissue (issue 27): the cells as points of an obsm embedding,
 * in the tissue figure's colours (its legend serves both), a Canvas 2D drawing fitted to the
 * panel. Hovering a point tells the figure (which marks the cell on the tissue); the figure
 * marks here the cell hovered there. Regions are drawn on it with the Annotate tools, as a
 * `Surface` of the annotate panel, so a selection on either panel shows on both.
 */

import type { Projection, Surface } from './annotatepanel';
import { h } from '../shared/dom';
import { PointGrid, fitProjection, paintEmbedding, type EmbeddingCoords } from './embedding';
import { colorFn, packColor } from '../spatial/raster';
import type { CanvasColor } from '../shared/types';
import type { CanvasData } from '../spatial/raster';

/** How far from a point (CSS px) the pointer still hovers it. */
const HOVER_PX = 8;

export type EmbeddingColors = { color: CanvasColor; value: CanvasData['value']; none: string };

export class EmbeddingView {
  readonly node: HTMLElement;
  readonly stage: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly mark: HTMLElement;
  private readonly grid: PointGrid;
  private readonly resize: ResizeObserver | null;
  private marked = -1;

  constructor(
    readonly coords: EmbeddingCoords,
    private readonly colors: () => EmbeddingColors,
    private readonly onHover: (index: number) => void
  ) {
    const n = coords.x.length.toLocaleString();
    this.canvas = h('canvas', {
      class: 'sds-embedding-canvas',
      role: 'img',
      'aria-label': `${n} cells on the embedding ${coords.key} (its first two columns), in the tissue's colours`
    }) as HTMLCanvasElement;
    this.mark = h('div', { class: 'sds-link-mark', hidden: '' });
    this.stage = h('div', { class: 'sds-embedding-stage' }, this.canvas, this.mark);
    const caption = coords.columns > 2 ? `${coords.key} (components 1 and 2 of ${coords.columns})` : coords.key;
    this.node = h(
      'div',
      { class: 'sds-embedding', role: 'group', 'aria-label': `Embedding ${coords.key}`, 'data-key': coords.key },
      h('div', { class: 'sds-embedding-title' }, caption),
      this.stage
    );
    this.grid = new PointGrid(coords.x, coords.y, coords.bounds);
    this.stage.addEventListener('pointermove', ev => this.pointer(ev));
    this.stage.addEventListener('pointerleave', () => {
      this.highlight(-1);
      this.onHover(-1);
    });
    this.resize = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(() => this.draw());
    this.resize?.observe(this.stage);
  }

  /** Where the panel draws each point now (CSS px of its stage). */
  projection(): Projection | null {
    const w = this.stage.clientWidth;
    const hgt = this.stage.clientHeight;
    return w > 0 && hgt > 0 ? fitProjection(this.coords.bounds, w, hgt) : null;
  }

  /** The panel as the annotate tools draw on it. */
  surface(onResize?: () => void): Surface {
    this.onResize = onResize ?? null;
    return { node: this.stage, x: this.coords.x, y: this.coords.y, projection: () => this.projection() };
  }

  private onResize: (() => void) | null = null;

  /** Paint the points in the figure's colours now. */
  draw(): void {
    const view = this.projection();
    if (!view) {
      return;
    }
    const w = this.stage.clientWidth;
    const hgt = this.stage.clientHeight;
    this.canvas.width = w;
    this.canvas.height = hgt;
    const ctx = this.canvas.getContext('2d');
    if (!ctx) {
      return;
    }
    const { color, value, none } = this.colors();
    const image = ctx.createImageData(w, hgt);
    const drawn = paintEmbedding(image.data, w, hgt, view, this.coords.x, this.coords.y, colorFn(color, value, packColor(none)));
    ctx.putImageData(image, 0, 0);
    this.node.dataset.drawn = String(drawn);
    this.highlight(this.marked);
    this.onResize?.();
  }

  /** Mark cell `index` (hovered on the tissue); -1 clears the mark. */
  highlight(index: number): void {
    this.marked = index;
    const view = this.projection();
    const at = index >= 0 && view ? view.toScreen(this.coords.x[index], this.coords.y[index]) : null;
    if (!at || !Number.isFinite(at[0]) || !Number.isFinite(at[1])) {
      this.mark.hidden = true;
      delete this.node.dataset.hover;
      return;
    }
    this.mark.hidden = false;
    this.mark.style.left = `${Math.round(at[0])}px`;
    this.mark.style.top = `${Math.round(at[1])}px`;
    this.node.dataset.hover = String(index);
  }

  private pointer(ev: PointerEvent): void {
    const view = this.projection();
    if (!view) {
      return;
    }
    const r = this.stage.getBoundingClientRect();
    const sx = ev.clientX - r.left;
    const sy = ev.clientY - r.top;
    const [x, y] = view.toData(sx, sy);
    const [ex] = view.toData(sx + HOVER_PX, sy);
    const index = this.grid.nearest(x, y, Math.abs(ex - x));
    this.highlight(index);
    this.onHover(index);
  }

  dispose(): void {
    this.resize?.disconnect();
    this.node.remove();
  }
}
