/**
 * The cells' geometry as the GPU layers take it: a leaf module (no imports), so the
 * geometry builders (geometry.ts, layers/cells.ts) and the stage (spatial.ts) share these
 * types without importing one another.
 */

/** The cells in view (and a margin) as geometry: `n` of them, their arrays in the subset's order. */
export type CellLayerData = {
  n: number;
  /** x, y per cell. */
  positions: Float32Array;
  /** RGBA bytes per cell. */
  colors: Uint8Array;
  /** RGBA bytes per cell of the outline (transparent where the cell is hidden). */
  lines: Uint8Array;
  /** Circles of each cell's radius in data units (Visium spots), else null: discs of `radius` px. */
  radii: Float32Array | null;
  polygons: PolygonLayerData | null;
  /** Which cell each of the `n` is (an index into the figure's cells): what a GPU pick maps back through. */
  ids?: Uint32Array;
};

/** The cells' polygons, flat (cell i: vertices starts[i] to starts[i + 1]), colors per vertex. */
export type PolygonLayerData = {
  starts: Uint32Array;
  vertices: Float32Array;
  /** RGBA bytes per vertex: the cell's fill. */
  fills: Uint8Array;
  /** The outlines as segments: x, y of both ends (4 floats a segment), RGBA bytes per end. */
  segments: Float32Array;
  segmentColors: Uint8Array;
};

/** Every cell of a figure in storage order (cell i is instance i, so a pick is the cell's index). */
export type GpuCells = {
  n: number;
  /** x, y per cell (NaN-free: a cell without a position is transparent at 0, 0). */
  positions: Float32Array;
  /** RGBA bytes per cell (alpha 0: hidden). */
  colors: Uint8Array;
  /** RGBA bytes per cell of the disc's outline (transparent where the cell is hidden). */
  lines: Uint8Array;
  /** Circles' radii in data units (Visium spots), else null. */
  radii: Float32Array | null;
  /** Polygon cells drawn as points: a disc of this radius in data units (half a typical cell), else 0. */
  cellRadius: number;
  /** The coloring these colors are of (deck re-uploads the colors when it changes). */
  version: number;
};
