/**
 * What a figure's view layers (labels, transcripts, other shapes elements) share: where they ask
 * (the figure's version and coordinate system: spatial/layersource.ts) and the stage they draw on,
 * built once by the figure and handed to each layer, so a new field (or a new layer) does not
 * thread another constructor argument through them all; and how a layer a figure spec saved as
 * shown comes back.
 */

import type { LayerSource } from '../spatial/layersource';
import type { SpatialStage } from '../spatial/spatial';

/** A figure's layer context: where its layers ask, and the stage they draw on. */
export type LayerContext = LayerSource & { readonly stage: SpatialStage };

/**
 * A layer a figure spec saved as shown is shown when the figure first comes on screen, not when
 * the spec is read: an index asked for a figure nobody scrolled to would slow the ones in view.
 */
export class ShownWhenSeen {
  private pending = false;

  constructor(private readonly show: (on: boolean) => Promise<void>) {}

  /** The spec saved the layer shown (`visible`) or not: shown at the next `onScreen` if so. */
  restore(visible: boolean): void {
    this.pending = visible;
  }

  /** The figure came on screen: a layer restored as shown is shown now, once. */
  onScreen(): void {
    if (this.pending) {
      this.pending = false;
      this.show(true).catch(() => undefined);
    }
  }
}
