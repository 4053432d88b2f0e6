import { afterEach, describe, expect, it } from 'vitest';

import { SpatialFigure } from '../app/figures/spatialfigure';
import type { CanvasPayload } from '../app/shared/types';
import type { CanvasData } from '../app/spatial/raster';
import { FakeTransport } from './fixtures';

function payload(): CanvasPayload {
  return {
    n_cells: 3,
    bounds: [0, 0, 100, 100],
    viewport: { target: [50, 50], zoom: 0, rotation: 0 },
    color: { mode: 'none' },
    point_size: 4,
    image: { width: 64, height: 64, bounds: [0, 0, 100, 100] },
    obs_columns: ['regions']
  } as unknown as CanvasPayload;
}

function data(): CanvasData {
  return { x: Float32Array.of(10, 50, 90), y: Float32Array.of(10, 50, 90), value: null, image: null };
}

let figure: SpatialFigure | null = null;

afterEach(() => {
  figure?.dispose();
  figure?.node.remove();
  figure = null;
});

/** A WebGL figure (its stage made, never started) whose version lists a labels and a points element. */
async function mounted(): Promise<SpatialFigure> {
  const t = new FakeTransport()
    .on('labels', () => ({ elements: ['blobs_labels'], element: 'blobs_labels', levels: [] }))
    .on('points', () => ({ elements: ['transcripts'], index: null }))
    .on('embedding', () => ({ keys: [], key: null, name: null, n_cells: 3, columns: 0, bounds: null }));
  figure = new SpatialFigure(t, 1, 'tissue', payload(), data(), true);
  document.body.append(figure.node);
  const menu = figure.node.querySelector('.sds-layers-body')!;
  for (let i = 0; i < 20 && menu.children.length < 3; i++) {
    await new Promise(r => setTimeout(r, 0));
  }
  return figure;
}

describe('the figure\'s Layers menu', () => {
  it('holds every layer\'s row, none of them in the toolbar', async () => {
    const f = await mounted();
    const bar = f.node.querySelector('.sds-spatial-bar')!;
    expect(bar.querySelector('.sds-layers-toggle')?.textContent).toContain('Layers');
    expect(bar.querySelector('.sds-layer-group input[type="checkbox"]')).toBeNull();
    const rows = [...f.node.querySelectorAll('.sds-layers-body > .sds-layer-group')].map(g => g.getAttribute('aria-label'));
    expect(rows).toEqual(['Cells and image', 'Transcripts', 'Labels']);
    const labels = [...f.node.querySelectorAll('.sds-layers-body .sds-check')].map(l => l.textContent!.trim());
    expect(labels).toEqual(['Cells', 'Image', 'Transcripts', 'Labels']);
  });

  it('opens from its button, says so, and closes on Escape with the focus back on the button', async () => {
    const f = await mounted();
    const button = f.node.querySelector<HTMLButtonElement>('.sds-layers-toggle')!;
    const panel = f.node.querySelector<HTMLElement>('.sds-layers-menu')!;
    expect(panel.getAttribute('role')).toBe('dialog');
    expect(panel.getAttribute('aria-label')).toBe('Layers');
    expect(button.getAttribute('aria-controls')).toBe(panel.id);
    expect(panel.hidden).toBe(true);
    expect(button.getAttribute('aria-expanded')).toBe('false');
    button.click();
    expect(panel.hidden).toBe(false);
    expect(button.getAttribute('aria-expanded')).toBe('true');
    expect(document.activeElement).toBe(panel.querySelector('input')); // the Cells checkbox
    const escape = new KeyboardEvent('keydown', { key: 'Escape', bubbles: true, cancelable: true });
    let outside = 0;
    const count = () => outside++;
    document.addEventListener('keydown', count);
    (document.activeElement as HTMLElement).dispatchEvent(escape);
    document.removeEventListener('keydown', count);
    expect(panel.hidden).toBe(true);
    expect(outside).toBe(0); // the menu's Escape, not the page's
    expect(button.getAttribute('aria-expanded')).toBe('false');
    expect(document.activeElement).toBe(button);
  });

  it('a toggle inside keeps it open; a press outside closes it; the layer rows keep their state closed', async () => {
    const f = await mounted();
    const button = f.node.querySelector<HTMLButtonElement>('.sds-layers-toggle')!;
    const panel = f.node.querySelector<HTMLElement>('.sds-layers-menu')!;
    button.click();
    const cells = panel.querySelector<HTMLInputElement>('input[type="checkbox"]')!;
    cells.dispatchEvent(new PointerEvent('pointerdown', { bubbles: true }));
    cells.click();
    expect(panel.hidden).toBe(false);
    expect(f.stage!.cellsVisible).toBe(false);
    document.body.dispatchEvent(new PointerEvent('pointerdown', { bubbles: true }));
    expect(panel.hidden).toBe(true);
    expect(cells.checked).toBe(false);
    expect(f.stage!.cellsVisible).toBe(false);
    button.click();
    button.click();
    expect(panel.hidden).toBe(true);
  });
});

describe('what a folded Layers menu leaves said', () => {
  it('a row\'s status is said beside the button while the menu is closed, and only there', async () => {
    const f = await mounted();
    const button = f.node.querySelector<HTMLButtonElement>('.sds-layers-toggle')!;
    const note = f.node.querySelector<HTMLElement>('.sds-spatial-bar .sds-layers-note')!;
    expect(note.hidden).toBe(true);
    f.node.querySelector('.sds-points-status')!.textContent = 'a sample at this zoom';
    await new Promise(r => setTimeout(r, 0)); // the observer's turn
    expect(note.textContent).toBe('Transcripts: a sample at this zoom');
    expect(note.hidden).toBe(false);
    button.click();
    expect(note.hidden).toBe(true); // the row says it itself now
    button.click();
    expect(note.hidden).toBe(false);
    f.node.querySelector('.sds-points-status')!.textContent = '';
    await new Promise(r => setTimeout(r, 0));
    expect(note.hidden).toBe(true);
  });

  it('cells turned off: a line above the legend says so; on again, it goes', async () => {
    const f = await mounted();
    const cells = f.node.querySelector<HTMLInputElement>('.sds-cells-controls input[type="checkbox"]')!;
    const said = f.node.querySelector<HTMLElement>('.sds-legend-note')!;
    expect(said.hidden).toBe(true);
    cells.click();
    expect(f.stage!.cellsVisible).toBe(false);
    expect(said.hidden).toBe(false);
    expect(said.textContent).toContain('Cells hidden');
    cells.click();
    expect(said.hidden).toBe(true);
  });
});
