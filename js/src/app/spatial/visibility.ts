/**
 * Whether a stage is on screen, and its size: an IntersectionObserver and a ResizeObserver on its
 * node, and the parking of a stage kept off the page for a revisit (keptviews.ts). Why apart: a
 * figure out of sight holds no WebGL context and asks for no tile; the stage is told when that
 * changes and otherwise only asks `shown` / `offScreen`.
 */

export type VisibilityHandlers = {
  /** The stage came on screen (true) or left it (false; not told while parked). */
  changed(visible: boolean, parked: boolean): void;
  /** The node's size may have changed. */
  resized(): void;
};

export class Visibility {
  private observer: IntersectionObserver | null = null;
  private resize: ResizeObserver | null = null;
  /** Whether the stage is on screen as its observer last said; null: not known since it came back on the page. */
  shown: boolean | null = false;
  /** Whether start() watches visibility: before, the stage is taken as shown (a stage used alone). */
  private watched = false;
  /** Kept off the page for a revisit: leaving the screen then keeps the context. */
  parked = false;

  constructor(
    private readonly node: HTMLElement,
    private readonly handlers: VisibilityHandlers
  ) {}

  /** Start watching; false without IntersectionObserver (the stage is then taken as on screen, nothing told). */
  start(): boolean {
    if (typeof IntersectionObserver !== 'undefined') {
      this.watched = true;
      this.observer = new IntersectionObserver(entries => {
        const visible = entries.some(e => e.isIntersecting);
        if (visible !== this.shown) {
          this.shown = visible;
          this.handlers.changed(visible, this.parked);
        }
      });
      this.observer.observe(this.node);
    } else {
      this.shown = true;
    }
    if (typeof ResizeObserver !== 'undefined') {
      this.resize = new ResizeObserver(() => this.handlers.resized());
      this.resize.observe(this.node);
    }
    return this.watched;
  }

  /** Known to be off screen (scrolled away, its tab hidden, parked). */
  get offScreen(): boolean {
    return this.watched && this.shown !== true;
  }

  park(): void {
    this.parked = true;
    this.shown = false;
  }

  /**
   * Back on the page: where it now sits is not known until its observer says (a version's figures
   * lay out anew, and a park and unpark within one frame are never reported), so it is asked
   * again, which always answers once.
   */
  unpark(): void {
    this.parked = false;
    if (this.observer) {
      this.shown = null;
      this.observer.unobserve(this.node);
      this.observer.observe(this.node);
    }
  }

  stop(): void {
    this.observer?.disconnect();
    this.resize?.disconnect();
  }
}
