import { describe, expect, it } from 'vitest';

import { LabelsLayer } from '../app/figures/labels';
import type { CanvasLabels, ImageLevel, LabelsTileData } from '../app/shared/types';
import { FakeTransport, settle } from './fixtures';
import { layerContext, layerStage } from './layerkit';

/** One 64 px level over 100 units: a single tile. */
const LEVELS: ImageLevel[] = [{ width: 64, height: 64, tile: 512, bounds: [0, 0, 100, 100] }];

function transport(): FakeTransport {
  return new FakeTransport()
    .on('labels', () => ({ elements: ['cells', 'nuclei'], element: 'nuclei', levels: LEVELS }))
    .on('labels_tile', p => {
      const data: LabelsTileData = { element: p.element ?? '', level: 0, x: 0, y: 0, width: 64, height: 64, bounds: [0, 0, 100, 100], style: p.style ?? 'fill' };
      return { data, buffers: [new Uint8Array(64 * 64 * 4).buffer] };
    });
}

describe('the labels layer of a figure spec', () => {
  it('restores the saved element, style and opacity, shows itself once on screen, and saves the same back', async () => {
    const s = layerStage([10, 90, 10, 90], [10, 10, 90, 90]);
    const fake = transport();
    const layer = new LabelsLayer(layerContext(fake, s, 'aligned'), ['cells', 'nuclei']);
    const saved: CanvasLabels = { element: 'nuclei', style: 'outline', visible: true, opacity: 0.4 };
    layer.restore(saved);
    const menus = [...layer.controls.querySelectorAll('select')].map(m => m.value);
    expect(menus).toEqual(['nuclei', 'outline']);
    const slider = layer.controls.querySelector<HTMLInputElement>('.sds-labels-opacity')!;
    expect(slider.value).toBe('0.4');
    // the restored value is written beside the slider as a screen reader reads it, under a visible name
    const name = layer.controls.querySelector<HTMLLabelElement>('.sds-slider-name')!;
    expect([name.htmlFor === slider.id, name.textContent, slider.getAttribute('aria-valuetext'), layer.controls.querySelector('.sds-slider-value')!.textContent]).toEqual([true, 'Opacity', '40%', '40%']);
    expect(fake.callsOf('labels')).toEqual([]); // nothing asked before the figure is seen
    layer.onScreen();
    await settle();
    // in the figure's coordinate system, as its export draws them
    expect(fake.callsOf('labels')).toEqual([{ version: 3, element: 'nuclei', coordinate_system: 'aligned' }]);
    expect((fake.callsOf('labels_tile') as { element: string; style: string; coordinate_system: string }[]).map(c => [c.element, c.style, c.coordinate_system])).toEqual([['nuclei', 'outline', 'aligned']]);
    expect(layer.controls.querySelector<HTMLInputElement>('.sds-labels-toggle')!.checked).toBe(true);
    expect(s.labelsOpacity).toBe(0.4);
    expect(layer.saved()).toEqual(saved);
    layer.onScreen(); // once only
    expect(fake.callsOf('labels')).toHaveLength(1);
    s.dispose();
  });

  it('saved hidden, it stays off and asks for nothing; an unknown element keeps the first', () => {
    const s = layerStage([10, 90, 10, 90], [10, 10, 90, 90]);
    const fake = transport();
    const layer = new LabelsLayer(layerContext(fake, s), ['cells', 'nuclei']);
    layer.restore({ element: 'gone', style: 'fill', visible: false, opacity: 1 });
    layer.onScreen();
    expect(fake.calls).toEqual([]);
    expect(layer.saved()).toEqual({ element: 'cells', style: 'fill', visible: false, opacity: 1 });
    s.dispose();
  });
});
