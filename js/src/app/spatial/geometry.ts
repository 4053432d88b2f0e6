/**
 * The cells near the view as the arrays the WebGL layers draw (deck.ts): polygons with their
 * outlines' edges, discs as quads. Plain arrays, no deck.gl: made and tested without WebGL.
 */

import type { PolygonLayerData } from './celldata';

/**
 * The polygons of cells `picked` (indices into `starts`, `vertices`), flat in that order, with
 * each cell's color per vertex (deck's binary polygons take colors so), and their outlines as
 * segments, one per edge: a ring stored open gets its closing edge.
 */
export function polygonsOf(picked: number[], starts: Uint32Array, vertices: Float32Array, colors: Uint32Array, vertexCount: number): PolygonLayerData {
  const n = picked.length;
  const flatStarts = new Uint32Array(n + 1);
  const flat = new Float32Array(vertexCount * 2);
  const fills = new Uint32Array(vertexCount);
  const segments = new Float32Array(vertexCount * 4); // at most one edge a vertex
  const segmentColors = new Uint32Array(vertexCount * 2);
  let v = 0;
  let e = 0;
  for (let k = 0; k < n; k++) {
    const i = picked[k];
    const v0 = starts[i];
    const v1 = starts[i + 1];
    const m = v1 - v0;
    flatStarts[k] = v;
    flat.set(vertices.subarray(2 * v0, 2 * v1), 2 * v);
    fills.fill(colors[k], v, v + m);
    if (m >= 2) {
      const closed = vertices[2 * v0] === vertices[2 * v1 - 2] && vertices[2 * v0 + 1] === vertices[2 * v1 - 1];
      const edges = closed ? m - 1 : m;
      for (let j = 0; j < edges; j++) {
        const a = 2 * (v0 + j);
        const b = 2 * (v0 + ((j + 1) % m));
        segments[4 * e] = vertices[a];
        segments[4 * e + 1] = vertices[a + 1];
        segments[4 * e + 2] = vertices[b];
        segments[4 * e + 3] = vertices[b + 1];
        segmentColors[2 * e] = segmentColors[2 * e + 1] = colors[k];
        e++;
      }
    }
    v += m;
  }
  flatStarts[n] = v;
  return {
    starts: flatStarts,
    vertices: flat,
    fills: new Uint8Array(fills.buffer),
    segments: segments.slice(0, 4 * e),
    segmentColors: new Uint8Array(segmentColors.buffer).slice(0, 8 * e)
  };
}

/** The six corners of a disc's quad (two triangles), x, y in -1..1. */
const CORNERS = [-1, -1, 1, -1, 1, 1, -1, -1, 1, 1, -1, 1];

/** Per-vertex arrays for `n` discs: each disc's attributes repeated on its quad's six vertices. */
export type DiscVertices = {
  positions: Float32Array;
  corners: Float32Array;
  radii: Float32Array;
  fills: Uint8Array;
  lines: Uint8Array;
};

/**
 * The quads of `n` discs at `positions` (x, y each), of `radii` (one per disc) or all of
 * `radius`, in `fills` and `lines` (RGBA bytes per disc).
 */
export function discVertices(n: number, positions: Float32Array, radii: Float32Array | null, radius: number, fills: Uint8Array, lines: Uint8Array): DiscVertices {
  const out = {
    positions: new Float32Array(12 * n),
    corners: new Float32Array(12 * n),
    radii: new Float32Array(6 * n),
    fills: new Uint8Array(24 * n),
    lines: new Uint8Array(24 * n)
  };
  const fill32 = new Uint32Array(fills.buffer, fills.byteOffset, n);
  const line32 = new Uint32Array(lines.buffer, lines.byteOffset, n);
  const outFill = new Uint32Array(out.fills.buffer);
  const outLine = new Uint32Array(out.lines.buffer);
  for (let i = 0; i < n; i++) {
    const r = radii ? radii[i] : radius;
    for (let k = 0; k < 6; k++) {
      const v = 6 * i + k;
      out.positions[2 * v] = positions[2 * i];
      out.positions[2 * v + 1] = positions[2 * i + 1];
      out.corners[2 * v] = CORNERS[2 * k];
      out.corners[2 * v + 1] = CORNERS[2 * k + 1];
      out.radii[v] = r;
      outFill[v] = fill32[i];
      outLine[v] = line32[i];
    }
  }
  return out;
}

/** The corners of an edge's quad (two triangles): x 0 at its start, 1 at its end; y the side, -1 or 1. */
const EDGE_CORNERS = [0, -1, 1, -1, 1, 1, 0, -1, 1, 1, 0, 1];

/** Per-vertex arrays of outline edges drawn as quads of a width in pixels (six vertices an edge). */
export type EdgeQuads = { starts: Float32Array; ends: Float32Array; corners: Float32Array; colors: Uint8Array };

/**
 * The quads of the edges in `segments` (x0, y0, x1, y1 each) colored by `segmentColors` (RGBA
 * bytes at each end, as polygonsOf makes them): for outlines wider than one device pixel.
 */
export function edgeQuads(segments: Float32Array, segmentColors: Uint8Array): EdgeQuads {
  const n = segments.length / 4;
  const out = {
    starts: new Float32Array(12 * n),
    ends: new Float32Array(12 * n),
    corners: new Float32Array(12 * n),
    colors: new Uint8Array(24 * n)
  };
  const colorIn = new Uint32Array(segmentColors.buffer, segmentColors.byteOffset, 2 * n);
  const colorOut = new Uint32Array(out.colors.buffer);
  for (let e = 0; e < n; e++) {
    for (let k = 0; k < 6; k++) {
      const v = 6 * e + k;
      out.starts[2 * v] = segments[4 * e];
      out.starts[2 * v + 1] = segments[4 * e + 1];
      out.ends[2 * v] = segments[4 * e + 2];
      out.ends[2 * v + 1] = segments[4 * e + 3];
      out.corners[2 * v] = EDGE_CORNERS[2 * k];
      out.corners[2 * v + 1] = EDGE_CORNERS[2 * k + 1];
      colorOut[v] = colorIn[2 * e];
    }
  }
  return out;
}

/** A cell's outline (packed RGBA): black at alpha 190, over its fill. */
export const OUTLINE = 0xbe000000;

/** The outline's color per vertex: OUTLINE, transparent where the cell is hidden. */
export function outlineColors(fills: Uint8Array): Uint8Array {
  const n = fills.length / 4;
  const fill = new Uint32Array(fills.buffer, fills.byteOffset, n);
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    out[i] = fill[i] >>> 24 ? OUTLINE : 0;
  }
  return new Uint8Array(out.buffer);
}

/** Whether the rings repeat their first vertex at the end (then drawn as open paths, else as loops). */
export function ringsClosed(p: Pick<PolygonLayerData, 'starts' | 'vertices'>): boolean {
  const n = p.starts.length - 1;
  for (let k = 0; k < n; k++) {
    const a = p.starts[k];
    const b = p.starts[k + 1];
    if (b - a >= 2) {
      return p.vertices[2 * a] === p.vertices[2 * b - 2] && p.vertices[2 * a + 1] === p.vertices[2 * b - 1];
    }
  }
  return true;
}
