/**
 * The stage a figure's view layers (labels, transcripts, other shapes elements) draw on, as their
 * tests fake it: a 100-unit square figure on a 200 px stage zoomed in once (no WebGL here), and
 * the layer context a figure hands its layers.
 */
import type { CanvasPayload } from '../app/shared/types';
import type { Transport } from '../app/shared/transport';
import type { LayerContext } from '../app/figures/layercontext';
import type { CanvasData } from '../app/spatial/raster';
import { SpatialStage } from '../app/spatial/spatial';

/** A stage of cells at `x`, `y` over [0, 100]², 200 px square, zoomed in once on its centre. */
export function layerStage(x: number[], y: number[]): SpatialStage {
  const payload = {
    n_cells: x.length,
    bounds: [0, 0, 100, 100],
    viewport: { target: [50, 50], zoom: 0, rotation: 0 },
    color: { mode: 'none' },
    point_size: 2,
    image: null
  } as unknown as CanvasPayload;
  const data: CanvasData = { x: Float32Array.from(x), y: Float32Array.from(y), value: null, image: null };
  const stage = new SpatialStage(payload, data);
  (stage as unknown as { size: [number, number] }).size = [200, 200];
  stage.apply({ target: [50, 50], zoom: 1 });
  return stage;
}

/** The layer context of version 3 of a figure in coordinate system `system` ("" the default) on `stage`. */
export function layerContext(transport: Transport, stage: SpatialStage, system = ''): LayerContext {
  return { transport, version: 3, system, stage };
}
