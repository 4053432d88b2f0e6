/**
 * The labels (segmentation masks) of a canvas figure's version: a layer toggle, which element,
 * and fills with outlines or outlines alone.
 *
 * Offered when the version's store holds a labels element (`labels`); off by default unless the
 * figure draws no cells (then the mask is what there is to see). Turned on, the element's pyramid
 * is asked for once, then the tiles the view needs at its zoom (labeltiles.ts), which the stage
 * draws over the cells (labellayer.ts).
 */

import { h } from '../shared/dom';
import type { Region } from '../spatial/camera';
import { LabelTiles, type LabelStyle } from '../spatial/labeltiles';
import type { SpatialStage } from '../spatial/spatial';
import { TransportError, type Transport } from '../shared/transport';

/** Each transport's answers to "which labels elements has this version", asked once per version. */
const listed = new WeakMap<Transport, Map<string, Promise<string[]>>>();

/** The version's labels elements (every figure of a version shares one ask; a failure is asked again). */
export function labelsElements(transport: Transport, version: number | string): Promise<string[]> {
  let known = listed.get(transport);
  if (!known) {
    listed.set(transport, (known = new Map()));
  }
  const key = String(version);
  let found = known.get(key);
  if (!found) {
    found = transport.request('labels', { version }).then(r => r.data.elements);
    known.set(key, found);
    found.catch(() => known.delete(key));
  }
  return found;
}

export class LabelsLayer {
  /** The toolbar group: toggle, element, style. */
  readonly controls: HTMLElement;
  private readonly status: HTMLElement;
  private tiles: LabelTiles | null = null;
  private element: string;
  private style: LabelStyle = 'fill';
  private on = false;
  private region: Region | null = null;

  constructor(
    private readonly transport: Transport,
    private readonly figureVersion: number | string,
    private readonly stage: SpatialStage,
    elements: string[]
  ) {
    this.element = elements[0];
    const toggle = h('input', { type: 'checkbox', class: 'sds-labels-toggle' }) as HTMLInputElement;
    toggle.addEventListener('change', () => void this.show(toggle.checked));
    const pick = h(
      'select',
      { class: 'sds-select sds-labels-element', 'aria-label': 'Labels element', title: 'Labels element' },
      elements.map(name => h('option', { value: name }, name))
    ) as HTMLSelectElement;
    pick.hidden = elements.length < 2;
    pick.addEventListener('change', () => void this.reopen(pick.value, this.style));
    const style = h(
      'select',
      { class: 'sds-select sds-labels-style', 'aria-label': 'Labels drawn as', title: 'Labels drawn as' },
      h('option', { value: 'fill' }, 'filled'),
      h('option', { value: 'outline' }, 'outlines')
    ) as HTMLSelectElement;
    style.addEventListener('change', () => void this.reopen(this.element, style.value as LabelStyle));
    this.status = h('span', { class: 'sds-labels-status', role: 'status' });
    this.controls = h('span', { class: 'sds-layer-group sds-labels-controls', role: 'group', 'aria-label': 'Labels' }, h('label', { class: 'sds-check' }, toggle, ' Labels'), pick, style, this.status);
  }

  /** Turn the layer on (the element's pyramid asked for once) or off. */
  async show(on: boolean): Promise<void> {
    this.on = on;
    const box = this.controls.querySelector<HTMLInputElement>('.sds-labels-toggle');
    if (box) {
      box.checked = on;
    }
    if (!on) {
      this.stage.setLabels(null);
      delete this.stage.node.dataset.labels;
      return;
    }
    if (!this.tiles) {
      const tiles = new LabelTiles(this.transport, this.figureVersion, this.element, this.style, () => this.draw());
      try {
        await tiles.open();
        this.status.textContent = '';
      } catch (err) {
        this.status.textContent = TransportError.from(err).message;
        return;
      }
      this.tiles = tiles;
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
    const region = this.region ?? this.stage.region();
    if (!this.on || !tiles || this.stage.offScreen) {
      return;
    }
    const width = this.stage.screen()[0] || 1;
    const drawn = tiles.frame(region, width / Math.max(region[2] - region[0], 1e-12));
    this.stage.setLabels(drawn);
    this.stage.node.dataset.labels = String(drawn.length);
  }
}
