/**
 * User Timing of one deck's frames, what the benchmarks and flows read: the first draw (from
 * `created`, or from when a kept stage came back) as `sds:canvas-draw` (split at its first draw
 * call into `sds:draw-ready` and `sds:first-frame`), then each frame's
 * interval as `sds:frame` and deck's own render of it (layers updated, draw calls issued; not
 * the GPU's work) as `sds:frame-work`.
 */

import { measure, now } from './tier';

export class FrameMeter {
  private frames = 0;
  private last: number;
  private rendering: number;

  constructor(
    private readonly created: number,
    private readonly nCells: number
  ) {
    this.last = created;
    this.rendering = created;
  }

  /**
   * Before a frame is drawn (deck has made its layers' attributes, no draw call issued yet): the
   * first frame's is measured as `sds:draw-ready` from `created`, the part of a first draw that
   * does not depend on the renderer's speed, and `sds:first-frame` from there to the frame's end.
   */
  before(): void {
    this.rendering = now();
    if (this.frames === 0) {
      measure('sds:draw-ready', this.created, this.rendering, { n_cells: this.nCells });
    }
  }

  /**
   * After a frame at `t`: `back` is when a kept stage came back (its draw counts from there),
   * `drawn` what a draw's measure adds (cells in view, canvas size). Returns the frames so far.
   */
  after(t: number, back: number | null, drawn: () => Record<string, unknown>): number {
    measure(this.frames > 0 ? 'sds:frame-work' : 'sds:first-frame', this.rendering, t, {});
    const detail: Record<string, unknown> = { n_cells: this.nCells, renderer: 'webgl' };
    if (this.frames === 0 || back !== null) {
      Object.assign(detail, drawn(), { again: back !== null });
      measure('sds:canvas-draw', back ?? this.created, t, detail);
    } else {
      measure('sds:frame', this.last, t, detail);
    }
    this.last = t;
    return ++this.frames;
  }
}
