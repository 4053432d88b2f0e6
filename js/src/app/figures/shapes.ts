/**
 * Every shapes element of a canvas figure's coordinate system outlined beside its cells (nucleus
 * boundaries): one layer row each (toggle, colour, opacity), and a legend of the elements shown.
 *
 * The element the figure's table annotates is its cells (drawn and coloured as cells), so it gets
 * no row. An element's index is asked once when it is turned on, then the tiles its view touches
 * once zoomed in far enough to see its shapes (shapetiles.ts); the stage draws each element as
 * its own outline layer (layers/outlines.ts). A figure spec's `shapes` restores the rows.
 */

import type { Region } from '../spatial/camera';
import { ShapeTiles, type ShapesDrawing } from '../spatial/shapetiles';
import { h } from '../shared/dom';
import type { CanvasShapeLayer } from '../shared/types';
import { layerControls, layerSlider, openedOnce, percent, type LayerSlider } from './layercontrols';
import { ShownWhenSeen, type LayerContext } from './layercontext';


/** `#rrggbb` as RGB bytes (another form: white). */
export function rgbOf(color: string): [number, number, number] {
  const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})/i.exec(color);
  return m ? [parseInt(m[1], 16), parseInt(m[2], 16), parseInt(m[3], 16)] : [255, 255, 255];
}

/** One shapes element's row: its toggle, colour and opacity, its tiles once shown. */
export class ShapesRow {
  readonly controls: HTMLElement;
  private readonly toggle: HTMLInputElement;
  private readonly status: HTMLElement;
  private readonly colorInput: HTMLInputElement;
  private readonly opacitySlider: LayerSlider;
  private tiles: ShapeTiles | null = null;
  private on = false;
  private color: string;
  private opacity = 1;
  private region: Region | null = null;
  private readonly restored = new ShownWhenSeen(on => this.show(on));

  constructor(
    private readonly context: LayerContext,
    readonly element: string,
    color: string,
    private readonly changed: () => void
  ) {
    this.color = color;
    const picker = h('input', { type: 'color', value: color, class: 'sds-shapes-color', 'aria-label': `${element} outline colour`, title: `${element} outline colour` }) as HTMLInputElement;
    picker.addEventListener('input', () => this.setColor(picker.value));
    const opacity = layerSlider('sds-shapes-opacity', 'Opacity', { min: 0, max: 1, step: 0.05, value: 1 }, percent, value => this.setOpacity(value));
    [this.colorInput, this.opacitySlider] = [picker, opacity];
    const parts = layerControls(element, 'shapes', on => void this.show(on), [picker, opacity.node]);
    parts.group.dataset.element = element;
    this.controls = parts.group;
    this.toggle = parts.toggle;
    this.status = parts.status;
  }

  get shown(): boolean {
    return this.on;
  }

  get outlineColor(): string {
    return this.color;
  }

  /** The layer a figure spec saved: colour and opacity now; shown once the figure is on screen when saved visible. */
  restore(saved: CanvasShapeLayer): void {
    this.setColor(saved.color);
    this.setOpacity(saved.opacity);
    this.restored.restore(saved.visible);
  }

  /** The figure came on screen: a layer restored as shown is shown now, once. */
  onScreen(): void {
    this.restored.onScreen();
  }

  /** What a figure spec saves of this row: the inverse of `restore`. */
  saved(): CanvasShapeLayer {
    return { element: this.element, color: this.color, visible: this.on, opacity: this.opacity };
  }

  setColor(color: string): void {
    this.color = color;
    this.colorInput.value = color;
    this.draw();
    this.changed();
  }

  setOpacity(opacity: number): void {
    this.opacity = Math.max(0, Math.min(1, Number.isFinite(opacity) ? opacity : 1));
    this.opacitySlider.set(this.opacity);
    this.draw();
  }

  /** Turn the element's outlines on (its index asked once) or off. */
  async show(on: boolean): Promise<void> {
    this.on = on;
    this.toggle.checked = on;
    this.changed();
    if (!on) {
      this.context.stage.setShapes(this.element, null);
      return;
    }
    if (!this.tiles) {
      const tiles = new ShapeTiles(this.context, this.element, () => this.draw());
      // an element past MAX_SHAPES is indexed first (seconds to minutes)
      this.tiles = await openedOnce(this.status, 'Reading outlines…', async () => {
        await tiles.open();
        return tiles;
      });
      if (!this.tiles) {
        return;
      }
    }
    this.draw();
  }

  viewChanged(region: Region): void {
    this.region = region;
    this.draw();
  }

  private draw(): void {
    const tiles = this.tiles;
    const stage = this.context.stage;
    if (!this.on || !tiles || stage.offScreen) {
      return;
    }
    const region = this.region ?? stage.region();
    const width = stage.screen()[0] || 1;
    const rings = tiles.frame(region, width / Math.max(region[2] - region[0], 1e-12));
    // too far out to see the shapes: none drawn, and the row says how to see them
    this.status.textContent = rings ? '' : 'zoom in to see';
    const drawing: ShapesDrawing | null = rings ? { element: this.element, rings, color: rgbOf(this.color), opacity: this.opacity } : null;
    stage.setShapes(this.element, drawing);
  }
}

/** The figure's shapes rows and their legend (the elements shown, each its outline colour). */
export class ShapesLayers {
  readonly legend: HTMLElement = h('div', { class: 'sds-legend sds-shapes-legend', hidden: '' });
  readonly rows: ShapesRow[];

  constructor(context: LayerContext, elements: string[], colors: string[]) {
    this.rows = elements.map((element, i) => new ShapesRow(context, element, colors[i] ?? '#ffffff', () => this.renderLegend()));
  }

  /** A figure spec's `shapes`: each saved element's row restored (elements the version lacks are left). */
  restore(saved: CanvasShapeLayer[]): void {
    for (const layer of saved) {
      this.rows.find(row => row.element === layer.element)?.restore(layer);
    }
  }

  /** What a figure spec saves: every row, in order. */
  saved(): CanvasShapeLayer[] {
    return this.rows.map(row => row.saved());
  }

  onScreen(): void {
    this.rows.forEach(row => row.onScreen());
  }

  viewChanged(region: Region): void {
    this.rows.forEach(row => row.viewChanged(region));
  }

  private renderLegend(): void {
    const shown = this.rows.filter(row => row.shown);
    this.legend.hidden = !shown.length;
    this.legend.replaceChildren(
      h('div', { class: 'sds-legend-title' }, 'Outlines'),
      h(
        'ul',
        { class: 'sds-legend-cats', 'aria-label': 'Outlines' },
        shown.map(row => h('li', {}, h('span', { class: 'sds-swatch sds-swatch-outline', style: `border-color:${row.outlineColor}` }), h('span', { class: 'sds-legend-label' }, row.element)))
      )
    );
  }
}
