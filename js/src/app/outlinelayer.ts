/**
 * The cells' outlines as one draw of GL lines (a line list: two vertices a segment, one
 * device pixel wide).
 *
 * deck's PathLayer draws each segment as an instance of a mitred quad. Under software WebGL
 * (SwiftShader, what a browser without a GPU runs) its vertex shader runs on the CPU for
 * every instance: the outlines of 2,840 octagons on a 750 px canvas took 0.59 s a frame on
 * the 2-core machine, against 15 ms as this line list (benchmarks/bench_outlines.py), and a
 * zoom into a new region of the demo went from over 2 s to about 0.25 s (bench_tiles.py). A cell's outline needs no
 * joints or width: lines serve, on a GPU as well.
 */

import { project32, type DefaultProps, type LayerProps } from '@deck.gl/core';

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

/**
 * `data`: deck's binary form, `{ length, attributes: { getPosition, getColor } }` with
 * `length` the number of vertices (twice the segments): x, y floats and RGBA bytes per vertex.
 */
export type CellOutlineLayerProps = LayerProps;

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
