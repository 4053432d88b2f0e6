/**
 * "On the tissue": a result or a comparison shows its cells in the version's spatial view,
 * in place (the same panel), with a way back. The view is the version's first canvas
 * figure, recolored through its public `colorBy` (a gene, a group highlighted, or how a
 * column changed from another version).
 */

import { loadCanvas } from '../spatial/cellstore';
import { empty, errorBox, fill, h, loading } from '../shared/dom';
import { SpatialFigure, type ColorTarget } from './spatialfigure';
import { webglAvailable } from '../spatial/spatial';
import { TransportError, type Transport } from '../shared/transport';

/** Said where a version has no canvas figure (no cells placed on the tissue). */
export const NO_TISSUE =
  'This version has no spatial view: none of its figures places the cells on the tissue (a canvas figure).';

let paneIds = 0;

export class TissuePane {
  readonly node: HTMLElement;
  private readonly heading: HTMLElement;
  private readonly body: HTMLElement;
  private spatial: SpatialFigure | null = null;
  private figure: Promise<{ id: string; title: string } | null> | null = null;
  private token = 0;
  private back: HTMLElement | null = null;
  private readonly closeButton: HTMLElement;

  constructor(
    private readonly transport: Transport,
    private readonly version: number,
    backLabel = 'Back'
  ) {
    const id = `sds-tissue-${++paneIds}`;
    this.heading = h('h4', { class: 'sds-tissue-title', id });
    const close = h(
      'button',
      { class: 'sds-button sds-tissue-back', type: 'button', title: 'Close the tissue view and go back' },
      `← ${backLabel}`
    );
    close.addEventListener('click', () => this.close());
    this.closeButton = close;
    this.body = h('div', { class: 'sds-tissue-body' });
    this.node = h(
      'section',
      { class: 'sds-tissue', 'aria-labelledby': id, hidden: '' },
      h('header', { class: 'sds-tissue-head' }, this.heading, close),
      this.body
    );
    this.node.addEventListener('keydown', ev => {
      if (ev.key === 'Escape') {
        ev.stopPropagation();
        this.close();
      }
    });
  }

  /** The version's first drawable canvas figure (asked once). */
  private canvasFigure(): Promise<{ id: string; title: string } | null> {
    this.figure ??= this.transport.request('figures', { version: this.version }).then(({ data }) => {
      const fig = (data.figures ?? []).find(f => f.kind === 'canvas' && !f.reason);
      return fig ? { id: fig.id, title: fig.title || fig.id } : null;
    });
    this.figure.catch(() => {
      this.figure = null;
    });
    return this.figure;
  }

  /** Whether the version has a spatial view to show (a drawable canvas figure); false when that cannot be read. */
  available(): Promise<boolean> {
    return this.canvasFigure().then(
      fig => fig !== null,
      () => false
    );
  }

  /**
   * Show the cells colored by `target`, titled `what`; `from` (the control clicked) gets the
   * focus back on close. Resolves once drawn (or once the reason it cannot be is shown).
   */
  async show(target: ColorTarget, what: string, from?: HTMLElement): Promise<void> {
    const token = ++this.token;
    this.back = from ?? null;
    this.node.hidden = false;
    // the view is an overlay of the value clicked: the focus moves into it, so Escape closes it
    // at once (and Back, focused, says how); close() gives the focus back to `from`
    this.closeButton.focus({ preventScroll: true });
    this.heading.textContent = `On the tissue: ${what}`;
    this.node.dataset.showing = what;
    delete this.node.dataset.drawn;
    try {
      if (!this.spatial) {
        fill(this.body, loading('Loading the spatial view…'));
        const fig = await this.canvasFigure();
        if (token !== this.token) {
          return;
        }
        if (!fig) {
          fill(this.body, empty(NO_TISSUE));
          return;
        }
        const { payload, data } = await loadCanvas(this.transport, this.version, fig.id);
        if (token !== this.token) {
          return;
        }
        const spatial = new SpatialFigure(this.transport, this.version, fig.id, payload, data, webglAvailable());
        this.spatial = spatial;
        fill(this.body, h('p', { class: 'sds-muted sds-tissue-source' }, `In the figure “${fig.title}”`), spatial.node);
        spatial.start();
      }
      this.node.scrollIntoView?.({ block: 'nearest' });
      await this.spatial.colorBy(target);
      if (token === this.token) {
        this.node.dataset.drawn = what;
      }
    } catch (err) {
      if (token === this.token && !this.spatial) {
        const e = TransportError.from(err);
        fill(this.body, errorBox(e.message, e.kind));
      }
      // with a view on screen, colorBy has put its one-line reason in the view's status
    }
  }

  /** Hide the view (it stays loaded for the next click) and give the focus back. */
  close(): void {
    this.token++;
    this.node.hidden = true;
    delete this.node.dataset.showing;
    this.back?.focus();
  }

  dispose(): void {
    this.token++;
    this.spatial?.dispose();
    this.spatial = null;
  }
}
