/**
 * The cells' geometry as the GPU layers take it: a leaf module (no imports), so the
 * geometry builders (geometry.ts, gpulayers.ts) and the deck view (deck.ts) share these
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
