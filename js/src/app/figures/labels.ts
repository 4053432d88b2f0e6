/**
 * The labels (segmentation masks) of a canvas figure's version: a layer toggle, which element,
 * and fills with outlines or outlines alone.
 *
 * Offered when the version's store holds a labels element (`labels`); off by default unless the
 * figure draws no cells (then the mask is what there is to see). Turned on, the element's pyramid
 * is asked for once, then the tiles the view needs at its zoom (labeltiles.ts), which the stage
 * draws over the cells (labellayer.ts).
 */

import type { Region } from '../spatial/camera';
import { ShownWhenSeen, type LayerContext } from './layercontext';
import { LabelTiles, type LabelStyle } from '../spatial/labeltiles';
import type { CanvasLabels } from '../shared/types';
import { layerControls, layerMenu, layerSlider, openedOnce, percent, type LayerSlider } from './layercontrols';


export class LabelsLayer {
  /** The Layers menu's row: toggle, element, style. */
  readonly controls: HTMLElement;
  private readonly toggle: HTMLInputElement;
  private readonly status: HTMLElement;
  private readonly pick: HTMLSelectElement;
  private readonly styleMenu: HTMLSelectElement;
  private readonly opacitySlider: LayerSlider;
  private tiles: LabelTiles | null = null;
  private element: string;
  private style: LabelStyle = 'fill';
  private opacity = 1;
  private on = false;
  private region: Region | null = null;
  private readonly restored = new ShownWhenSeen(on => this.show(on));

  constructor(
    private readonly context: LayerContext,
    elements: string[]
  ) {
    this.element = elements[0];
    const pick = layerMenu('sds-labels-element', 'Labels element', elements.map(name => [name, name]), value => void this.reopen(value, this.style));
    pick.hidden = elements.length < 2;
    const style = layerMenu('sds-labels-style', 'Labels drawn as', [['fill', 'filled'], ['outline', 'outlines']], value => void this.reopen(this.element, value as LabelStyle));
    const opacity = layerSlider('sds-labels-opacity', 'Opacity', { min: 0, max: 1, step: 0.05, value: 1 }, percent, value => this.setOpacity(value));
    [this.pick, this.styleMenu, this.opacitySlider] = [pick, style, opacity];
    const parts = layerControls('Labels', 'labels', on => void this.show(on), [pick, style, opacity.node]);
    this.controls = parts.group;
    this.toggle = parts.toggle;
    this.status = parts.status;
  }

  /**
   * The layer a figure spec saved (`CanvasLabels`): its element (when the version has it), style and
   * opacity set now; shown once the figure is on screen when saved visible (onScreen).
   */
  restore(saved: CanvasLabels): void {
    if ([...this.pick.options].some(o => o.value === saved.element)) {
      this.element = this.pick.value = saved.element;
    }
    this.style = this.styleMenu.value = saved.style === 'outline' ? 'outline' : 'fill';
    this.setOpacity(saved.opacity);
    this.restored.restore(saved.visible);
  }

  /** The figure came on screen: a layer restored from its spec as shown is shown now, once. */
  onScreen(): void {
    this.restored.onScreen();
  }

  /** What a figure spec saves of this layer: the inverse of `restore`. */
  saved(): CanvasLabels {
    return { element: this.element, style: this.style, visible: this.on, opacity: this.opacity };
  }

  /** The layer's opacity, 0 to 1 (the stage redraws the tiles at it). */
  setOpacity(opacity: number): void {
    this.opacity = Math.max(0, Math.min(1, Number.isFinite(opacity) ? opacity : 1));
    this.opacitySlider.set(this.opacity);
    this.context.stage.labelsOpacity = this.opacity;
    this.draw();
  }

  /** Turn the layer on (the element's pyramid asked for once) or off. */
  async show(on: boolean): Promise<void> {
    this.on = on;
    this.toggle.checked = on;
    if (!on) {
      this.context.stage.setLabels(null);
      delete this.context.stage.node.dataset.labels;
      return;
    }
    if (!this.tiles) {
      const tiles = new LabelTiles(this.context, this.element, this.style, () => this.draw());
      this.tiles = await openedOnce(this.status, '', async () => {
        await tiles.open();
        return tiles;
      });
      if (!this.tiles) {
        return;
      }
    }
    this.draw();
  }

  private async reopen(element: string, style: LabelStyle): Promise<void> {
    this.element = element;
    this.style = style;
    this.tiles = null;
    if (this.on) {
      await this.show(true);
    }
  }

  /** The view moved: the tiles it needs drawn (held ones now, the rest as they arrive). */
  viewChanged(region: Region): void {
    this.region = region;
    this.draw();
  }

  private draw(): void {
    const tiles = this.tiles;
    const stage = this.context.stage;
    const region = this.region ?? stage.region();
    if (!this.on || !tiles || stage.offScreen) {
      return;
    }
    const width = stage.screen()[0] || 1;
    const drawn = tiles.frame(region, width / Math.max(region[2] - region[0], 1e-12));
    stage.setLabels(drawn);
    stage.node.dataset.labels = String(drawn.length);
  }
}
