/**
 * "On the tissue": a result or a comparison shows its cells in the version's spatial view,
 * in place (the same panel), with a way back. The view is the version's first canvas
 * figure, recolored through its public `colorBy` (a gene, a group highlighted, or how a
 * column changed from another version).
 */

import { loadCanvas } from '../spatial/cellstore';
import { devicePixelWidth, empty, errorBox, fill, h, loading } from '../shared/dom';
import { SpatialFigure, type ColorTarget } from './spatialfigure';
import { OverlayPane, firstCanvasFigures, type CanvasFigure } from './overlay';
import { webglAvailable } from '../spatial/spatial';
import { TransportError, type Transport } from '../shared/transport';

/** Said where a version has no canvas figure (no cells placed on the tissue). */
export const NO_TISSUE =
  'This version has no spatial view: none of its figures places the cells on the tissue (a canvas figure).';

export class TissuePane {
  private readonly pane: OverlayPane;
  private readonly canvasFigure: () => Promise<CanvasFigure | null>;
  private spatial: SpatialFigure | null = null;
  private token = 0;

  constructor(
    private readonly transport: Transport,
    private readonly version: number,
    backLabel = 'Back'
  ) {
    this.pane = new OverlayPane({
      className: 'sds-tissue',
      bodyClass: 'sds-tissue-body',
      backLabel: `← ${backLabel}`,
      backTitle: 'Close the tissue view and go back',
      onClose: () => this.close()
    });
    const figures = firstCanvasFigures(transport);
    this.canvasFigure = () => figures(version);
  }

  get node(): HTMLElement {
    return this.pane.node;
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
    this.pane.open(`On the tissue: ${what}`, what, from);
    const body = this.pane.body;
    try {
      if (!this.spatial) {
        fill(body, loading('Loading the spatial view…'));
        const fig = await this.canvasFigure();
        if (token !== this.token) {
          return;
        }
        if (!fig) {
          fill(body, empty(NO_TISSUE));
          return;
        }
        const { payload, data } = await loadCanvas(this.transport, this.version, fig.id, devicePixelWidth(body));
        if (token !== this.token) {
          return;
        }
        const spatial = new SpatialFigure(this.transport, this.version, fig.id, payload, data, webglAvailable());
        this.spatial = spatial;
        fill(body, h('p', { class: 'sds-muted sds-tissue-source' }, `In the figure “${fig.title}”`), spatial.node);
        spatial.start();
      }
      this.node.scrollIntoView?.({ block: 'nearest' });
      await this.spatial.colorBy(target);
      if (token === this.token) {
        this.pane.drawn(what);
      }
    } catch (err) {
      if (token === this.token && !this.spatial) {
        const e = TransportError.from(err);
        fill(body, errorBox(e.message, e.kind));
      }
      // with a view on screen, colorBy has put its one-line reason in the view's status
    }
  }

  /** Hide the view (it stays loaded for the next click) and give the focus back. */
  close(): void {
    this.token++;
    this.pane.hide();
  }

  dispose(): void {
    this.token++;
    this.spatial?.dispose();
    this.spatial = null;
  }
}
