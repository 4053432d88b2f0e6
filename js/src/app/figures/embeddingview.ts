/**
 * The embedding panel beside the tissue (issue 27): the cells as points of an obsm embedding,
 * in the tissue figure's colours (its legend serves both), a Canvas 2D drawing fitted to the
 * panel. Hovering a point tells the figure (which marks the cell on the tissue); the figure
 * marks here the cell hovered there. Regions are drawn on it with the Annotate tools, as a
 * `Surface` of the annotate panel, so a selection on either panel shows on both.
 */

import type { Projection, Surface } from './annotatepanel';
import { h } from '../shared/dom';
import { FITTED, PointGrid, fitProjection, paintEmbedding, panEmbedding, zoomEmbedding, type EmbeddingCamera, type EmbeddingCoords } from './embedding';
import { colorFn, packColor } from '../spatial/raster';
import type { CanvasColor } from '../shared/types';
import type { CanvasData } from '../spatial/raster';

/** A point's side on the panel (CSS px), as `paintEmbedding` paints it. */
const POINT_PX = 3;
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
  /** Zoom and pan from the fit: the wheel zooms about the pointer, a drag pans, Fit goes back. */
  private camera: EmbeddingCamera = FITTED;
  private drag: { x: number; y: number; id: number } | null = null;
  private redrawQueued = false;

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
    this.stage = h('div', { class: 'sds-embedding-stage', title: 'Wheel to zoom, drag to pan' }, this.canvas, this.mark);
    const caption = coords.columns > 2 ? `${coords.key} (components 1 and 2 of ${coords.columns})` : coords.key;
    const fit = h('button', { type: 'button', class: 'sds-button sds-embedding-fit', title: 'Show the whole embedding again' }, 'Fit');
    fit.addEventListener('click', () => this.setCamera(FITTED));
    this.node = h(
      'div',
      { class: 'sds-embedding', role: 'group', 'aria-label': `Embedding ${coords.key}`, 'data-key': coords.key },
      h('div', { class: 'sds-embedding-title' }, caption, ' ', fit),
      this.stage
    );
    this.listenCamera();
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
    return w > 0 && hgt > 0 ? fitProjection(this.coords.bounds, w, hgt, 12, this.camera) : null;
  }

  /** Zoom and pan as they stand (1, 0, 0: fitted). */
  cameraState(): EmbeddingCamera {
    return this.camera;
  }

  /** Move the camera and redraw once a frame (a wheel sends many events a frame). */
  setCamera(camera: EmbeddingCamera): void {
    this.camera = camera;
    this.node.dataset.zoom = camera.zoom.toFixed(3);
    if (this.redrawQueued) {
      return;
    }
    this.redrawQueued = true;
    const run = () => {
      this.redrawQueued = false;
      this.draw();
    };
    if (typeof requestAnimationFrame === 'function') {
      requestAnimationFrame(run);
    } else {
      run();
    }
  }

  /** Wheel zooms about the pointer; a drag pans (not while drawing a region: the overlay takes those). */
  private listenCamera(): void {
    const drawing = (ev: Event) => (ev.target as Element | null)?.closest?.('.sds-annotate-overlay') != null;
    this.stage.addEventListener(
      'wheel',
      ev => {
        ev.preventDefault();
        const r = this.stage.getBoundingClientRect();
        const factor = Math.pow(2, -ev.deltaY / (ev.deltaMode === 1 ? 8 : 240));
        this.setCamera(zoomEmbedding(this.camera, factor, ev.clientX - r.left, ev.clientY - r.top, this.stage.clientWidth, this.stage.clientHeight));
        this.pointer(ev as unknown as PointerEvent);
      },
      { passive: false }
    );
    this.stage.addEventListener('pointerdown', ev => {
      if (drawing(ev) || ev.button !== 0) {
        return;
      }
      this.drag = { x: ev.clientX, y: ev.clientY, id: ev.pointerId };
      this.stage.setPointerCapture?.(ev.pointerId);
    });
    this.stage.addEventListener('pointermove', ev => {
      const d = this.drag;
      if (!d || d.id !== ev.pointerId) {
        return;
      }
      this.setCamera(panEmbedding(this.camera, ev.clientX - d.x, ev.clientY - d.y, this.stage.clientWidth, this.stage.clientHeight));
      this.drag = { x: ev.clientX, y: ev.clientY, id: d.id };
    });
    const end = (ev: PointerEvent) => {
      if (this.drag?.id === ev.pointerId) {
        this.drag = null;
      }
    };
    this.stage.addEventListener('pointerup', end);
    this.stage.addEventListener('pointercancel', end);
  }

  /** The panel as the annotate tools draw on it. */
  surface(onResize?: () => void): Surface {
    this.onResize = onResize ?? null;
    return { node: this.stage, x: this.coords.x, y: this.coords.y, projection: () => this.projection(), radius: () => POINT_PX / 2 + 0.5 };
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
