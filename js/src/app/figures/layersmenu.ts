/**
 * A figure's "Layers" menu: one toolbar button that opens a small panel holding every layer's
 * row (cells and image, transcripts, labels, shapes). Why a menu: laid out in the toolbar, the
 * rows wrapped into four or five lines above the drawing at a 760 px panel and pushed the tissue
 * below the fold; folded here, the toolbar stays one or two lines and the tissue is in view on
 * opening. The panel is a non-modal dialog over the top of the drawing: Escape, the button or a
 * press outside closes it, and a layer's row stays in it whether or not it is open (so its
 * controls keep their state and every layer adds its row the same way, `add`).
 *
 * What a row's status line says (indexing, "a sample at this zoom", why a layer failed) is also
 * said beside the button while the menu is closed: folded away, it would leave the drawing
 * saying less than it shows.
 */

import { h } from '../shared/dom';

/** Each menu's own id (the button's aria-controls names its panel). */
let made = 0;

export class LayersMenu {
  /** The toolbar's button. */
  readonly button: HTMLButtonElement;
  /** The panel under the toolbar (hidden while closed): place it right after the toolbar. */
  readonly node: HTMLElement;
  /** Where the layers' rows go, in the order added. */
  readonly body: HTMLElement;
  /** The rows' status lines while the menu is closed (place it after the button). */
  readonly note: HTMLElement;
  private readonly undo: () => void;

  constructor() {
    const id = `sds-layers-${++made}`;
    this.button = h(
      'button',
      { type: 'button', class: 'sds-button sds-layers-toggle', 'aria-expanded': 'false', 'aria-controls': id, title: 'Show or hide the layers drawn: cells, image, transcripts, labels' },
      'Layers ▾'
    ) as HTMLButtonElement;
    this.body = h('div', { class: 'sds-layers-body' });
    this.note = h('span', { class: 'sds-layers-note', 'aria-live': 'polite', hidden: '' });
    const statuses = typeof MutationObserver === 'undefined' ? null : new MutationObserver(() => this.sayStatus());
    statuses?.observe(this.body, { subtree: true, childList: true, characterData: true });
    const panel = h('div', { id, class: 'sds-layers-menu', role: 'dialog', 'aria-label': 'Layers', hidden: '' }, this.body);
    // a box of no height under the toolbar: the panel hangs from it over the drawing
    this.node = h('div', { class: 'sds-layers-anchor' }, panel);
    this.button.addEventListener('click', () => (this.isOpen ? this.close(true) : this.open()));
    const onKey = (ev: KeyboardEvent) => {
      if (ev.key === 'Escape' && this.isOpen) {
        // the menu's, not JupyterLab's (which would leave the notebook cell, say)
        ev.stopPropagation();
        ev.preventDefault();
        this.close(true);
      }
    };
    this.button.addEventListener('keydown', onKey);
    panel.addEventListener('keydown', onKey);
    const onPress = (ev: PointerEvent) => {
      const at = ev.target as Node | null;
      if (this.isOpen && at && !panel.contains(at) && !this.button.contains(at)) {
        this.close(false);
      }
    };
    document.addEventListener('pointerdown', onPress, true);
    this.undo = () => {
      document.removeEventListener('pointerdown', onPress, true);
      statuses?.disconnect();
    };
  }

  private get panel(): HTMLElement {
    return this.node.firstElementChild as HTMLElement;
  }

  get isOpen(): boolean {
    return !this.panel.hidden;
  }

  /** Add a layer's row (its `sds-layer-group`), after those added before. */
  add(row: HTMLElement): void {
    this.body.append(row);
    this.sayStatus();
  }

  /** Each row's status now, named by its row (`Transcripts: a sample at this zoom`), shown while closed. */
  sayStatus(): void {
    const said = [...this.body.querySelectorAll<HTMLElement>('.sds-layer-group')]
      .map(row => [row.getAttribute('aria-label') ?? '', row.querySelector('[role="status"]')?.textContent?.trim() ?? ''])
      .filter(([, text]) => text)
      .map(([name, text]) => `${name}: ${text}`)
      .join(' · ');
    this.note.textContent = said;
    this.note.hidden = !said || this.isOpen;
  }

  /** Open the panel, its first control focused (as a keyboard user expects of a dialog). */
  open(): void {
    this.panel.hidden = false;
    this.note.hidden = true;
    this.button.setAttribute('aria-expanded', 'true');
    this.panel.querySelector<HTMLElement>('input, select, button')?.focus();
  }

  /** Close the panel; `refocus`: the button takes the focus back (closed from the keyboard or the button). */
  close(refocus: boolean): void {
    this.panel.hidden = true;
    this.note.hidden = !this.note.textContent;
    this.button.setAttribute('aria-expanded', 'false');
    if (refocus) {
      this.button.focus();
    }
  }

  dispose(): void {
    this.undo();
  }
}
