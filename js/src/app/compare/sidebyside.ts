/**
 * A and B side by side: the two versions' tissues next to each other, each colored
 * by its own values of one obs column, with one camera. For a clustering, B's groups take
 * the colours of the A groups they match (the compare's matching), so a renamed group keeps
 * its colour and only cells that moved change colour. Comparing a clustering by
 * eye needs the same spot of tissue in both drawings, so a pan or zoom in either
 * moves the other to the same place (the versions share their coordinates).
 */

import type { ViewState } from '../spatial/camera';
import { devicePixelWidth, empty, errorBox, fill, h, loading } from '../shared/dom';
import { loadCanvas } from '../spatial/cellstore';
import { webglAvailable } from '../spatial/spatial';
import { SpatialFigure } from '../figures/spatialfigure';
import { NO_TISSUE } from '../figures/tissue';
import { OverlayPane, firstCanvasFigures, type CanvasFigure } from '../figures/overlay';
import { TransportError, type Transport } from '../shared/transport';
import type { MatchedPair } from '../shared/types';

/** What linking needs of a view: its camera, a way to set it, and word of its moves. */
export type Linkable = {
  onCamera: ((vs: ViewState) => void) | null;
  cameraState(): ViewState | null;
  setCamera(vs: ViewState): void;
};

function same(a: ViewState | null, b: ViewState): boolean {
  return !!a && a.zoom === b.zoom && a.target[0] === b.target[0] && a.target[1] === b.target[1];
}

/**
 * One camera for all `views`: a move in one is applied to the others (once: the moves
 * this causes are not passed on again). Returns the unlinking.
 */
export function linkCameras(views: Linkable[]): () => void {
  let following = false;
  for (const view of views) {
    view.onCamera = vs => {
      if (following) {
        return;
      }
      following = true;
      try {
        for (const other of views) {
          if (other !== view && !same(other.cameraState(), vs)) {
            other.setCamera(vs);
          }
        }
      } finally {
        following = false;
      }
    };
  }
  return () => {
    for (const view of views) {
      view.onCamera = null;
    }
  };
}

/** A side of the comparison: the version as the service knows it (depth or dataset ID) and as a person does. */
export type Side = { pick: number | string; label: string };

export class SideBySide {
  private readonly pane: OverlayPane;
  private readonly figure: (pick: number | string) => Promise<CanvasFigure | null>;
  private views: SpatialFigure[] = [];
  private unlink: (() => void) | null = null;
  private token = 0;

  constructor(
    private readonly transport: Transport,
    private readonly a: Side,
    private readonly b: Side
  ) {
    this.pane = new OverlayPane({
      className: 'sds-tissue sds-sidebyside',
      bodyClass: 'sds-sidebyside-body',
      backLabel: '← Back to the comparison',
      backTitle: 'Close the side-by-side view',
      onClose: () => this.close()
    });
    this.figure = firstCanvasFigures(transport);
  }

  get node(): HTMLElement {
    return this.pane.node;
  }

  /** Whether both versions have a spatial view (false when that cannot be read). */
  available(): Promise<boolean> {
    return Promise.all([this.figure(this.a.pick), this.figure(this.b.pick)]).then(
      ([fa, fb]) => fa !== null && fb !== null,
      () => false
    );
  }

  /**
   * Draw A and B colored by their own `column`, B's labels through `matched` (pairs of B's label
   * `a` and A's label `b`) when given; resolves once both are drawn (or the reason they cannot be is shown).
   */
  async show(column: string, from?: HTMLElement, matched?: MatchedPair[]): Promise<void> {
    const token = ++this.token;
    this.pane.open(`Side by side: ${column} in A and in B`, column, from);
    this.drop();
    const body = this.pane.body;
    fill(body, loading('Loading both spatial views…'));
    try {
      const views = await Promise.all([this.a, this.b].map(side => this.view(side)));
      if (token !== this.token) {
        views.forEach(v => v?.dispose());
        return;
      }
      if (views.some(v => v === null)) {
        views.forEach(v => v?.dispose());
        fill(body, empty(NO_TISSUE));
        return;
      }
      this.views = views as SpatialFigure[];
      fill(
        body,
        this.views.map((v, i) => {
          const side = i === 0 ? this.a : this.b;
          return h('div', { class: 'sds-sidebyside-pane', 'data-side': i === 0 ? 'A' : 'B' }, h('p', { class: 'sds-sidebyside-name' }, `${i === 0 ? 'A' : 'B'}: ${side.label}`), v.node);
        })
      );
      this.views.forEach(v => v.start());
      this.unlink = linkCameras(this.views);
      this.node.scrollIntoView?.({ block: 'nearest' });
      await Promise.all(this.views.map(v => v.colorBy({ column })));
      if (token === this.token && matched) {
        this.colorThroughMatching(matched);
      }
      if (token === this.token) {
        this.pane.drawn(column);
      }
    } catch (err) {
      if (token === this.token) {
        const e = TransportError.from(err);
        fill(body, errorBox(e.message, e.kind));
      }
    }
  }

  /** B's matched labels in the colours of their A partners. */
  private colorThroughMatching(matched: MatchedPair[]): void {
    const [a, b] = this.views;
    const colorsA = a.categoryColors();
    if (!colorsA) {
      return;
    }
    const given = new Map<string, string>();
    for (const pair of matched) {
      const color = pair.b !== null ? colorsA.get(pair.b) : undefined;
      if (pair.a !== null && color) {
        given.set(pair.a, color);
      }
    }
    b.recolorCategories(given);
  }

  private async view(side: Side): Promise<SpatialFigure | null> {
    const fig = await this.figure(side.pick);
    if (!fig) {
      return null;
    }
    // through the page's cell store: the cells (and image) both sides share are sent once
    const { payload, data } = await loadCanvas(this.transport, side.pick, fig.id, devicePixelWidth(this.pane.body) / 2); // two panes side by side
    return new SpatialFigure(this.transport, side.pick, fig.id, payload, data, webglAvailable());
  }

  private drop(): void {
    this.unlink?.();
    this.unlink = null;
    for (const v of this.views.splice(0)) {
      v.dispose();
    }
  }

  /** Hide the views and give the focus back (they are dropped: two WebGL contexts are not kept idle). */
  close(): void {
    this.token++;
    this.drop();
    this.pane.hide();
  }

  dispose(): void {
    this.token++;
    this.drop();
  }
}
