/**
 * The pane a result or a comparison opens over itself to show cells on the tissue ("On the
 * tissue", "Side by side"): a heading, a way back, a body; and where its spatial view comes
 * from, a version's first drawable canvas figure.
 *
 * Why one: both panes are overlays of the control clicked, so they move the focus into
 * themselves (Escape then closes at once, and the focused Back says how) and give it back
 * on close; keeping that in one place keeps the two alike for keyboard and screen-reader users.
 */

import { h } from '../shared/dom';
import type { Transport } from '../shared/transport';

/** A version's canvas figure as a pane names it. */
export type CanvasFigure = { id: string; title: string };

let paneIds = 0;

export type OverlayOptions = {
  /** Classes of the section (`sds-tissue` and the pane's own). */
  className: string;
  /** Class of the body the pane fills. */
  bodyClass: string;
  /** The Back button's words and title. */
  backLabel: string;
  backTitle: string;
  /** Called by Back and by Escape: the owner drops what it shows, then calls `hide`. */
  onClose: () => void;
};

export class OverlayPane {
  readonly node: HTMLElement;
  readonly body: HTMLElement;
  private readonly heading: HTMLElement;
  private readonly closeButton: HTMLElement;
  private back: HTMLElement | null = null;

  constructor(options: OverlayOptions) {
    const id = `sds-overlay-${++paneIds}`;
    this.heading = h('h4', { class: 'sds-tissue-title', id });
    this.closeButton = h('button', { class: 'sds-button sds-tissue-back', type: 'button', title: options.backTitle }, options.backLabel);
    this.closeButton.addEventListener('click', () => options.onClose());
    this.body = h('div', { class: options.bodyClass });
    this.node = h(
      'section',
      { class: options.className, 'aria-labelledby': id, hidden: '' },
      h('header', { class: 'sds-tissue-head' }, this.heading, this.closeButton),
      this.body
    );
    this.node.addEventListener('keydown', ev => {
      if (ev.key === 'Escape') {
        ev.stopPropagation();
        options.onClose();
      }
    });
  }

  /**
   * Show the pane titled `title`, about `showing` (its `data-showing`, `data-drawn` cleared until
   * `drawn`); the focus moves to Back, and `from` (the control clicked) gets it back on `hide`.
   */
  open(title: string, showing: string, from?: HTMLElement): void {
    this.back = from ?? null;
    this.node.hidden = false;
    this.closeButton.focus({ preventScroll: true });
    this.heading.textContent = title;
    this.node.dataset.showing = showing;
    delete this.node.dataset.drawn;
  }

  /** Say what is drawn now (flows and tests wait for it). */
  drawn(what: string): void {
    this.node.dataset.drawn = what;
  }

  /** Hide the pane and give the focus back to the control that opened it. */
  hide(): void {
    this.node.hidden = true;
    delete this.node.dataset.showing;
    this.back?.focus();
  }
}

/**
 * A version's first drawable canvas figure (null when it has none), asked once per version
 * through the returned function; a failure is not kept, so the next call asks again.
 */
export function firstCanvasFigures(transport: Transport): (version: number | string) => Promise<CanvasFigure | null> {
  const asked = new Map<string, Promise<CanvasFigure | null>>();
  return version => {
    const key = String(version);
    let found = asked.get(key);
    if (!found) {
      found = transport.request('figures', { version }).then(({ data }) => {
        const fig = (data.figures ?? []).find(f => f.kind === 'canvas' && !f.reason);
        return fig ? { id: fig.id, title: fig.title || fig.id } : null;
      });
      found.catch(() => asked.delete(key));
      asked.set(key, found);
    }
    return found;
  };
}
