/**
 * The tissue drawing fits the panel's height (issue 29): a drawing as wide as a wide panel
 * is as tall as it is wide, taller than the window, and its scale bar (at its bottom) is off
 * screen. The drawing keeps its aspect: it is made narrower, never squashed.
 */

/** The least height the drawing is fitted to (a very short panel scrolls instead). */
export const MIN_FIT_HEIGHT = 240;
/** Room kept below the drawing (CSS px): the line under it stays in sight too. */
const BELOW = 8;

/**
 * The widest the drawing may be (CSS px) so that it is at most `room` px tall, for a drawing
 * `aspect` (height over width) tall a px of width; null when the room is unknown (hidden).
 */
export function fitWidth(room: number, aspect: number): number | null {
  if (!(room > 0) || !(aspect > 0) || !Number.isFinite(room)) {
    return null;
  }
  return Math.floor(Math.max(room, MIN_FIT_HEIGHT) / aspect);
}

/**
 * The height the drawing may take: what the scrolling panel shows (and the window), less what
 * its figure puts above the drawing (title, toolbar) and `below` it (the count line).
 */
export function roomFor(visible: number, above: number, below: number): number {
  return visible - above - below - BELOW;
}

/** The element that scrolls the drawing (the panel's content), or null (the page itself). */
function scrollerOf(el: HTMLElement): HTMLElement | null {
  for (let p = el.parentElement; p; p = p.parentElement) {
    // the first ancestor that scrolls up and down and is no taller than it shows
    const style = getComputedStyle(p);
    if (/(auto|scroll)/.test(style.overflowY) && p.clientHeight > 0 && p.scrollHeight > p.clientHeight + 1) {
      return p;
    }
    if (p.classList.contains('sds-panels')) {
      return p;
    }
  }
  return null;
}

/** Where a figure starts (its title): the figure card, the tissue overlay, else the view itself. */
const FIGURE = '.sds-figure, .sds-sidebyside-pane, .sds-tissue';

/**
 * Keep `drawing` within the visible height of the panel that scrolls it, through the CSS
 * variable `--sds-fit-width` (its max-width), redone when the panel or the view resizes.
 * `view`: the spatial view (watched; its figure is found from it once it is on the page);
 * `below`: what follows the drawing. Returns the undo.
 */
export function fitToPanel(drawing: HTMLElement, view: HTMLElement, below: HTMLElement | null, aspect: number): () => void {
  let frame = 0;
  let last = '';
  let panels: Element | null = null;
  const observer = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(() => schedule());
  const apply = () => {
    frame = 0;
    if (!drawing.isConnected) {
      return;
    }
    const found = drawing.closest('.sds-panels');
    if (found && found !== panels) {
      panels = found;
      observer?.observe(found); // the panel's height: a resized tab or window
    }
    const figure = view.closest<HTMLElement>(FIGURE) ?? view;
    const scroller = scrollerOf(drawing);
    const visible = Math.min(scroller?.clientHeight ?? Infinity, window.innerHeight || Infinity);
    const above = drawing.getBoundingClientRect().top - figure.getBoundingClientRect().top;
    const width = fitWidth(roomFor(visible, Math.max(0, above), below?.offsetHeight ?? 0), aspect);
    const value = width === null ? '' : `${width}px`;
    if (value !== last) {
      last = value;
      if (value) {
        drawing.style.setProperty('--sds-fit-width', value);
      } else {
        drawing.style.removeProperty('--sds-fit-width');
      }
    }
  };
  function schedule(): void {
    if (!frame) {
      frame = typeof requestAnimationFrame === 'undefined' ? (apply(), 0) : requestAnimationFrame(apply);
    }
  }
  window.addEventListener('resize', schedule);
  observer?.observe(view); // laid out, shown again, or its toolbar wrapped
  schedule();
  return () => {
    window.removeEventListener('resize', schedule);
    observer?.disconnect();
    if (frame && typeof cancelAnimationFrame !== 'undefined') {
      cancelAnimationFrame(frame);
    }
  };
}
