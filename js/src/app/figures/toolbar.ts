/**
 * A spatial figure's toolbar: the camera's buttons, Annotate, the Layers menu's button and the
 * colour-by choice (an obs column or genes). The first row of the Layers menu is what the stage
 * draws of its own (cells, their opacity, image); the other layers add theirs (layeroffers.ts).
 */

import { h } from '../shared/dom';
import type { CanvasPayload } from '../shared/types';
import type { SpatialStage } from '../spatial/spatial';
import type { AnnotatePanel } from './annotatepanel';
import type { LayersMenu } from './layersmenu';
import { SHOWN, type ColorTarget } from './coloring';
import { GeneBox } from './genebox';
import type { Camera } from './plot2d';
import { layerSlider, percent } from './layercontrols';

export type ToolbarParts = {
  /** The drawing's camera now (the stage, or the 2D drawing's after a fallback). */
  camera(): Camera;
  annotation: AnnotatePanel | null;
  payload: CanvasPayload;
  /** The table's genes, for the gene box. */
  genes: ConstructorParameters<typeof GeneBox>[0];
  colorBy(target: ColorTarget): Promise<void>;
  /** Where the colouring says what it is loading, or why it failed. */
  status: HTMLElement;
  /** The WebGL stage (its layers' toggles), or null for the 2D drawing. */
  stage: SpatialStage | null;
  /** The menu the layers' rows go in (with the stage), else null. */
  layers: LayersMenu | null;
  /** Told when the cells are turned on or off (the figure hides their legend with them). */
  cellsShown(on: boolean): void;
};

export function viewToolbar(o: ToolbarParts): HTMLElement {
  const bar = h('div', { class: 'sds-spatial-bar', role: 'toolbar', 'aria-label': 'View' });
  const btn = (label: string, title: string, run: () => void, cls = '') => {
    const b = h('button', { type: 'button', class: `sds-button ${cls}`.trim(), title, 'aria-label': title }, label);
    b.addEventListener('click', run);
    return b;
  };
  bar.append(
    btn('−', 'Zoom out', () => o.camera().zoom(-1), 'sds-zoom-out'),
    btn('+', 'Zoom in', () => o.camera().zoom(1), 'sds-zoom-in'),
    btn('Saved view', 'Show the region the figure was saved with', () => o.camera().showSaved(), 'sds-saved-view'),
    btn('Fit', 'Show all cells', () => o.camera().fit(), 'sds-fit')
  );
  if (o.annotation) {
    const panel = o.annotation;
    const toggle = btn('Annotate', 'Draw regions on the tissue and save them as an annotation', () => {
      panel.toggle();
      toggle.setAttribute('aria-pressed', String(!panel.node.hidden));
    }, 'sds-annotate-toggle');
    toggle.setAttribute('aria-pressed', 'false');
    bar.append(toggle);
  }
  if (o.layers) {
    bar.append(o.layers.button, o.layers.note);
  }
  // the columns worth colouring by (not a single value, not an ID), else every column
  const columns = o.payload.color_columns ?? o.payload.obs_columns ?? [];
  if (columns.length) {
    const own = o.payload.color.mode === 'none' ? '' : o.payload.color.column;
    const select = h(
      'select',
      { class: 'sds-select sds-color-by', 'aria-label': 'Color cells by obs column', title: 'Color cells by' },
      h('option', { value: '' }, own ? `${own} (saved)` : 'no color'),
      columns.map(c => h('option', { value: c }, c))
    ) as HTMLSelectElement;
    select.value = '';
    select.addEventListener('change', () => {
      if (select.value === SHOWN) {
        return;
      }
      genes.clear();
      o.colorBy(select.value ? { column: select.value } : {}).catch(() => undefined);
    });
    const genes = new GeneBox(
      o.genes,
      picked =>
        o.colorBy(picked.length ? { gene: picked.join(','), channels: genes.combine === 'channels' } : {}).catch(() => undefined)
    );
    bar.append(h('span', { class: 'sds-layer-group', role: 'group', 'aria-label': 'Color' }, select, genes.node, o.status));
  }
  if (o.stage && o.layers) {
    const stage = o.stage;
    const cells = checkbox('Cells', true, on => {
      stage.cellsVisible = on;
      stage.sync();
      o.cellsShown(on);
    });
    const opacity = layerSlider('sds-opacity', 'Cell opacity', { min: 0, max: 1, step: 0.05, value: 1 }, percent, value => {
      stage.cellsOpacity = value;
      stage.sync();
    });
    const image = o.payload.image
      ? checkbox('Image', true, on => {
          stage.imageVisible = on;
          stage.sync();
        })
      : null;
    o.layers.add(h('span', { class: 'sds-layer-group sds-cells-controls', role: 'group', 'aria-label': image ? 'Cells and image' : 'Cells' }, cells, opacity.node, image));
  }
  return bar;
}

function checkbox(label: string, checked: boolean, onChange: (on: boolean) => void): HTMLElement {
  const input = h('input', { type: 'checkbox' }) as HTMLInputElement;
  input.checked = checked;
  input.addEventListener('change', () => onChange(input.checked));
  return h('label', { class: 'sds-check' }, input, ` ${label}`);
}
