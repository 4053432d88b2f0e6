/**
 * The base of the cell layers that draw every vertex of their data in one non-instanced draw
 * (disclayer.ts, outlinelayer.ts): one luma Model of the subclass's topology, made again when
 * a prop its shaders depend on changes, drawing as many vertices as the data has rows.
 *
 * Why not instances: under software WebGL each instance costs its vertex shader on the CPU
 * (benchmarks/bench_outlines.py); these layers expand their shapes on the CPU instead.
 */

import { Layer, type LayerProps, type UpdateParameters } from '@deck.gl/core';
import { Model } from '@luma.gl/engine';

type State = { model?: Model };

export abstract class VertexLayer<P extends LayerProps = LayerProps> extends Layer<P> {
  static layerName = 'VertexLayer';

  declare state: State;

  /** How the vertices join: pairs into lines, or triples into triangles. */
  protected abstract readonly topology: 'line-list' | 'triangle-list';

  /** Whether a change of props alters the shaders (their defines): the model is made again. */
  protected shadersChanged(_params: UpdateParameters<this>): boolean {
    return false;
  }

  updateState(params: UpdateParameters<this>): void {
    super.updateState(params);
    if (!this.state.model || params.changeFlags.extensionsChanged || this.shadersChanged(params)) {
      this.state.model?.destroy();
      this.setState({
        model: new Model(this.context.device, {
          ...this.getShaders({}),
          id: this.props.id,
          topology: this.topology,
          bufferLayout: this.getAttributeManager()?.getBufferLayouts() ?? [],
          vertexCount: 0
        })
      });
      this.getAttributeManager()?.invalidateAll();
    }
  }

  draw(): void {
    const model = this.state.model;
    if (model) {
      model.setVertexCount(this.getNumInstances());
      model.draw(this.context.renderPass);
    }
  }
}
