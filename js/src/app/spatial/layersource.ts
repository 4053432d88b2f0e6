/**
 * Where a view layer's tiles are asked (labels, transcripts, other shapes elements): every
 * request names the figure's version and coordinate system, so they travel together with the
 * transport, built once by the figure (figures/layercontext.ts adds the stage they draw on).
 */

import type { Transport } from '../shared/transport';

/** The transport, the figure's version and its coordinate system ("" the default). */
export type LayerSource = {
  readonly transport: Transport;
  readonly version: number | string;
  readonly system: string;
};
