/**
 * The cells' outlines in one non-instanced draw: GL lines (a line list, two vertices an edge,
 * one device pixel wide) where a device pixel is a CSS pixel, else quads one CSS pixel wide
 * (six vertices an edge), so that a 2x screen does not show them half as thin.
 *
 * deck's PathLayer draws each segment as an instance of a mitred quad. Under software WebGL
 * (SwiftShader, what a browser without a GPU runs) its vertex shader runs on the CPU for
 * every instance: the outlines of 2,840 octagons on a 750 px canvas took 0.59 s a frame on
 * the 2-core machine, against 15 ms as this line list (benchmarks/bench_outlines.py), and a
 * zoom into a new region of the demo went from over 2 s to about 0.25 s (bench_tiles.py). A
 * cell's outline needs no mitred joints: square ends close the corners of the quads.
 */

import { project32, type DefaultProps, type LayerProps } from '@deck.gl/core';

import type { EdgeQuads } from '../geometry';
import { VertexLayer } from './vertexlayer';

const vs = `#version 300 es
#define SHADER_NAME cell-outline-layer-vertex-shader
in vec2 positions;
in vec4 colors;
out vec4 vColor;
void main(void) {
  vec3 position = vec3(positions, 0.0);
  geometry.worldPosition = position;
  gl_Position = project_position_to_clipspace(position, vec3(0.0), vec3(0.0), geometry.position);
  vColor = vec4(colors.rgb, colors.a * layer.opacity);
}
`;

const fs = `#version 300 es
#define SHADER_NAME cell-outline-layer-fragment-shader
precision highp float;
in vec4 vColor;
out vec4 fragColor;
void main(void) {
  fragColor = vColor;
}
`;

export type CellOutlineLayerProps = LayerProps;

/**
 * The line list's `data` in deck's binary form: one row a vertex, two an edge, from
 * `segments` (x0, y0, x1, y1 each) and `segmentColors` (RGBA bytes at each end), as polygonsOf makes them.
 */
export function outlineData(segments: Float32Array, segmentColors: Uint8Array): { length: number; attributes: Record<string, object> } {
  return {
    length: segments.length / 2,
    attributes: {
      getPosition: { value: segments, size: 2 },
      getColor: { value: segmentColors, size: 4, normalized: true }
    }
  };
}

/** Outlines one device pixel wide as GL lines, from `data` as outlineData makes it. */
export class CellOutlineLayer extends VertexLayer<CellOutlineLayerProps> {
  static layerName = 'CellOutlineLayer';
  static defaultProps: DefaultProps<CellOutlineLayerProps> = {};

  protected readonly topology = 'line-list';

  getShaders() {
    return super.getShaders({ vs, fs, modules: [project32] });
  }

  initializeState(): void {
    this.getAttributeManager()?.add({
      positions: { size: 2, type: 'float32', stepMode: 'vertex', accessor: 'getPosition' },
      colors: { size: 4, type: 'unorm8', stepMode: 'vertex', accessor: 'getColor', defaultValue: [0, 0, 0, 255] }
    });
  }
}

const edgeVs = `#version 300 es
#define SHADER_NAME cell-edge-layer-vertex-shader
in vec2 starts;
in vec2 ends;
in vec2 corners;
in vec4 colors;
out vec4 vColor;
void main(void) {
  vec3 start = vec3(starts, 0.0);
  vec3 end = vec3(ends, 0.0);
  vec4 a = project_position_to_clipspace(start, vec3(0.0), vec3(0.0), geometry.position);
  vec4 b = project_position_to_clipspace(end, vec3(0.0), vec3(0.0));
  geometry.worldPosition = mix(start, end, corners.x);
  // the edge's direction on screen (pixels are square there), its normal, and square ends
  vec2 along = (b.xy / b.w - a.xy / a.w) * project.viewportSize;
  vec2 dir = length(along) > 0.0 ? normalize(along) : vec2(1.0, 0.0);
  vec2 normal = vec2(-dir.y, dir.x);
  vec2 offset = (normal * corners.y + dir * (corners.x * 2.0 - 1.0)) * 0.5;
  gl_Position = mix(a, b, corners.x) + vec4(project_pixel_size_to_clipspace(offset), 0.0, 0.0);
  vColor = vec4(colors.rgb, colors.a * layer.opacity);
}
`;

/** The layer's `data` in deck's binary form: one row a vertex, six an edge (edgeQuads, geometry.ts). */
export function edgeData(q: EdgeQuads): { length: number; attributes: Record<string, object> } {
  return {
    length: q.corners.length / 2,
    attributes: {
      getStart: { value: q.starts, size: 2 },
      getEnd: { value: q.ends, size: 2 },
      getCorner: { value: q.corners, size: 2 },
      getColor: { value: q.colors, size: 4, normalized: true }
    }
  };
}

/** Outlines one CSS pixel wide as quads, from `data` as edgeData makes it (for screens of 1.5 device pixels a CSS pixel or more). */
export class CellEdgeLayer extends VertexLayer<CellOutlineLayerProps> {
  static layerName = 'CellEdgeLayer';
  static defaultProps: DefaultProps<CellOutlineLayerProps> = {};

  protected readonly topology = 'triangle-list';

  getShaders() {
    return super.getShaders({ vs: edgeVs, fs, modules: [project32] });
  }

  initializeState(): void {
    this.getAttributeManager()?.add({
      starts: { size: 2, type: 'float32', stepMode: 'vertex', accessor: 'getStart' },
      ends: { size: 2, type: 'float32', stepMode: 'vertex', accessor: 'getEnd' },
      corners: { size: 2, type: 'float32', stepMode: 'vertex', accessor: 'getCorner' },
      colors: { size: 4, type: 'unorm8', stepMode: 'vertex', accessor: 'getColor', defaultValue: [0, 0, 0, 255] }
    });
  }
}
