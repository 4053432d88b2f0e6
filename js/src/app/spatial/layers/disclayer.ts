/**
 * The cells as discs (points, Visium spots) in one non-instanced draw: each disc a quad of six
 * vertices the vertex shader opens to the disc's size, the fragment shader cutting the circle
 * and its outline.
 *
 * deck's ScatterplotLayer draws each disc as an instance. Under software WebGL (SwiftShader)
 * every instance costs its vertex shader on the CPU: 4,000 discs (the geometry budget) took
 * about 85 ms a frame on the 2-core machine, against 18 ms as these quads
 * (benchmarks/bench_outlines.py). Points (GL_POINTS) would be cheaper still, but a point whose
 * centre leaves the view is dropped whole, so discs at the view's edge would blink out.
 */

import { project32, type DefaultProps, type LayerProps, type UpdateParameters } from '@deck.gl/core';

import type { DiscVertices } from '../geometry';
import { VertexLayer } from './vertexlayer';

const vs = `#version 300 es
#define SHADER_NAME cell-disc-layer-vertex-shader
in vec2 positions;
in vec2 corners;
in float radii;
in vec4 fillColors;
in vec4 lineColors;
out vec4 vFill;
out vec4 vLine;
out vec2 vOffset;
out float vRadius;
void main(void) {
  vec3 position = vec3(positions, 0.0);
  geometry.worldPosition = position;
  vec4 centre = project_position_to_clipspace(position, vec3(0.0), vec3(0.0), geometry.position);
#if RADIUS_COMMON
  float radius = max(radii * project.scale, 0.5);
#else
  float radius = radii;
#endif
  // half a pixel beyond the radius: room for the antialiased edge
  vec2 offset = corners * (radius + 0.5);
  gl_Position = centre + vec4(project_pixel_size_to_clipspace(offset), 0.0, 0.0);
  vOffset = offset;
  vRadius = radius;
  vFill = vec4(fillColors.rgb, fillColors.a * layer.opacity);
  vLine = vec4(lineColors.rgb, lineColors.a * layer.opacity);
}
`;

const fs = `#version 300 es
#define SHADER_NAME cell-disc-layer-fragment-shader
precision highp float;
in vec4 vFill;
in vec4 vLine;
in vec2 vOffset;
in float vRadius;
out vec4 fragColor;
void main(void) {
  float distance = length(vOffset);
  float inside = clamp(vRadius - distance + 0.5, 0.0, 1.0);
  if (inside <= 0.0) {
    discard;
  }
  vec4 color = vFill;
#if STROKED
  // a one-pixel outline inside the edge, as deck's ScatterplotLayer strokes
  float onLine = smoothstep(vRadius - 1.5, vRadius - 0.5, distance);
  color = mix(vFill, vLine, onLine * step(1.5, vRadius));
#endif
  fragColor = vec4(color.rgb, color.a * inside);
}
`;

export type CellDiscLayerProps = LayerProps & {
  /** The radii are CSS pixels, or data units (circles such as Visium spots; at least half a pixel). */
  radiusUnits?: 'pixels' | 'common';
  /** A one-pixel outline in the line color. */
  stroked?: boolean;
};

/** The layer's `data` in deck's binary form: one row a vertex, six a disc (discVertices, geometry.ts). */
export function discData(v: DiscVertices): { length: number; attributes: Record<string, object> } {
  return {
    length: v.radii.length,
    attributes: {
      getPosition: { value: v.positions, size: 2 },
      getCorner: { value: v.corners, size: 2 },
      getRadius: { value: v.radii, size: 1 },
      getFillColor: { value: v.fills, size: 4, normalized: true },
      getLineColor: { value: v.lines, size: 4, normalized: true }
    }
  };
}

/** Discs from `data` as discData makes it. */
export class CellDiscLayer extends VertexLayer<CellDiscLayerProps> {
  static layerName = 'CellDiscLayer';
  static defaultProps: DefaultProps<CellDiscLayerProps> = { radiusUnits: 'pixels', stroked: false };

  protected readonly topology = 'triangle-list';

  getShaders() {
    const defines = { RADIUS_COMMON: this.props.radiusUnits === 'common' ? 1 : 0, STROKED: this.props.stroked ? 1 : 0 };
    return super.getShaders({ vs, fs, modules: [project32], defines });
  }

  protected shadersChanged({ props, oldProps }: UpdateParameters<this>): boolean {
    return props.radiusUnits !== oldProps.radiusUnits || props.stroked !== oldProps.stroked;
  }

  initializeState(): void {
    this.getAttributeManager()?.add({
      positions: { size: 2, type: 'float32', stepMode: 'vertex', accessor: 'getPosition' },
      corners: { size: 2, type: 'float32', stepMode: 'vertex', accessor: 'getCorner' },
      radii: { size: 1, type: 'float32', stepMode: 'vertex', accessor: 'getRadius', defaultValue: 1 },
      fillColors: { size: 4, type: 'unorm8', stepMode: 'vertex', accessor: 'getFillColor', defaultValue: [0, 0, 0, 255] },
      lineColors: { size: 4, type: 'unorm8', stepMode: 'vertex', accessor: 'getLineColor', defaultValue: [0, 0, 0, 255] }
    });
  }
}
