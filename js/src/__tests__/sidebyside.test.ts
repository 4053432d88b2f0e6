import { afterEach, describe, expect, it } from 'vitest';
import { mountApp, type AppHandle } from '../app';
import type { ViewState } from '../app/spatial/camera';
import { linkCameras, type Linkable } from '../app/compare/sidebyside';
import type { SpatialFigure } from '../app/figures/spatialfigure';
import { FakeTransport, NOW, fakeCharts, settle, text } from './fixtures';
import type { Comparison } from '../app/shared/types';
import { comparison, tissueTransport } from './tissuekit';

let app: AppHandle | null = null;
afterEach(() => {
  app?.dispose();
  app = null;
  document.body.replaceChildren();
});

const transport = tissueTransport;

function mount(t: FakeTransport, charts = fakeCharts()): HTMLElement {
  const el = document.createElement('div');
  document.body.append(el);
  app = mountApp(el, t, { now: () => NOW, renderChart: charts.render, initialTab: 'compare' });
  return el;
}


/** A view whose camera is a plain value, to check the linking alone. */
class Camera implements Linkable {
  onCamera: ((vs: ViewState) => void) | null = null;
  moves = 0;
  constructor(public vs: ViewState | null = null) {}
  cameraState(): ViewState | null {
    return this.vs;
  }
  setCamera(vs: ViewState): void {
    this.moves++;
    this.vs = vs;
    this.onCamera?.(vs); // a real view reports the moves it is told to make too
  }
  /** A person pans this view. */
  pan(vs: ViewState): void {
    this.vs = vs;
    this.onCamera?.(vs);
  }
}

describe('one camera for A and B', () => {
  it('a move in either view moves the other once, and unlinking stops it', () => {
    const a = new Camera();
    const b = new Camera();
    const unlink = linkCameras([a, b]);
    a.pan({ target: [3, 4], zoom: 2 });
    expect(b.vs).toEqual({ target: [3, 4], zoom: 2 });
    expect([a.moves, b.moves]).toEqual([0, 1]);
    b.pan({ target: [1, 1], zoom: -1 });
    expect(a.vs).toEqual({ target: [1, 1], zoom: -1 });
    expect([a.moves, b.moves]).toEqual([1, 1]);
    // the same place again: nothing to do
    a.pan({ target: [1, 1], zoom: -1 });
    expect(b.moves).toBe(1);
    unlink();
    a.pan({ target: [9, 9], zoom: 0 });
    expect(b.vs).toEqual({ target: [1, 1], zoom: -1 });
  });
});

const TREE = {
  current: 'ds-2',
  base: null,
  notes: [],
  nodes: [
    { dataset_id: 'ds-2', parent: 'ds-1', depth: 2, title: 'Version 2', folder: 'v2', created_at: null, created_by: null },
    { dataset_id: 'ds-1', parent: null, depth: 1, title: 'Version 1', folder: 'v1', created_at: null, created_by: null },
    { dataset_id: 'side-9', parent: 'ds-1', depth: 2, title: 'Side', folder: 'side', created_at: null, created_by: null }
  ]
};

describe('compare: A and B side by side', () => {
  it('draws both tissues, each colored by its own version, named by title and number, panning together', async () => {
    const t = transport()
      .on('compare', p => comparison(p.a, p.b as number))
      .on('tree', () => TREE)
      .on('fingerprint', () => ({ fingerprint: 'x' }));
    const el = mount(t);
    await settle(10);
    const selectB = el.querySelector<HTMLSelectElement>('select[aria-label^="Version B"]')!;
    selectB.value = 'side-9';
    selectB.dispatchEvent(new Event('change'));
    await settle(10);
    const button = el.querySelector<HTMLButtonElement>('.sds-obs-change[data-column="regions"] .sds-show-sides')!;
    expect(button.hidden).toBe(false);
    button.click();
    await settle(10);
    const view = el.querySelector<HTMLElement>('.sds-sidebyside')!;
    expect(view.hidden).toBe(false);
    expect(view.dataset.drawn).toBe('regions');
    expect([...view.querySelectorAll('.sds-sidebyside-name')].map(n => text(n))).toEqual(['A: v2 Version 2', 'B: Side (branch, v2)']);
    expect(t.callsOf('canvas')).toEqual([
      { version: 2, figure: 'tissue' },
      { version: 'side-9', figure: 'tissue' }
    ]);
    expect(t.callsOf('color_values')).toEqual([
      { version: 2, figure: 'tissue', column: 'regions' },
      { version: 'side-9', figure: 'tissue', column: 'regions' }
    ]);
    const [a, b] = [...view.querySelectorAll('.sds-spatial')].map(n => (n as HTMLElement & { sdsSpatial: SpatialFigure }).sdsSpatial);
    a.setCamera({ target: [2, 3], zoom: 1.5 });
    expect(b.cameraState()).toEqual(a.cameraState());
    b.setCamera({ target: [7, 1], zoom: 0.5 });
    expect(a.cameraState()).toEqual(b.cameraState());
    expect(a.cameraState()?.target).toEqual([7, 1]);
    // Back drops both views and gives the focus back
    view.querySelector<HTMLButtonElement>('.sds-tissue-back')!.click();
    expect(view.hidden).toBe(true);
    expect(document.activeElement).toBe(button);
  });

  it("colours B's groups through the matching: a renamed group keeps A's colour (issue 40, item 7)", async () => {
    // A (v2) calls the groups "T cells" and "B cells"; B (side-9) called them "3" and "0", plus a group "7" that no A group matches
    const own: Record<string, { categories: string[]; colors: string[] }> = {
      '2': { categories: ['T cells', 'B cells'], colors: ['#ff0000', '#00ff00'] },
      'side-9': { categories: ['0', '3', '7'], colors: ['#ff0000', '#00ff00', '#0000ff'] }
    };
    const renamed = (a: number | string, b: number): Comparison => {
      const c = comparison(a, b);
      c.obs.changed[0] = {
        ...c.obs.changed[0],
        agreement: {
          ari: 1,
          nmi: 1,
          n_moved: 0,
          matched: [
            { a: '3', b: 'T cells', count: 2 },
            { a: '0', b: 'B cells', count: 1 }
          ]
        }
      };
      return c;
    };
    const t = transport()
      .on('compare', p => renamed(p.a, p.b as number))
      .on('tree', () => TREE)
      .on('fingerprint', () => ({ fingerprint: 'x' }))
      .on('color_values', p => {
        const codes = Uint16Array.from([0, 1, 0]);
        return { data: { mode: 'categorical', column: 'regions', ...own[String(p.version)] }, buffers: [new DataView(codes.buffer)] } as never;
      });
    const el = mount(t);
    await settle(10);
    const selectB = el.querySelector<HTMLSelectElement>('select[aria-label^="Version B"]')!;
    selectB.value = 'side-9';
    selectB.dispatchEvent(new Event('change'));
    await settle(10);
    const button = el.querySelector<HTMLButtonElement>('.sds-obs-change[data-column="regions"] .sds-show-sides')!;
    expect(button.title).toMatch(/in the colours of the A groups they match/);
    button.click();
    await settle(10);
    const view = el.querySelector<HTMLElement>('.sds-sidebyside')!;
    expect(view.dataset.drawn).toBe('regions');
    const [a, b] = [...view.querySelectorAll('.sds-spatial')].map(n => (n as HTMLElement & { sdsSpatial: SpatialFigure }).sdsSpatial);
    const colorsA = a.categoryColors()!;
    const colorsB = b.categoryColors()!;
    expect(colorsB.get('3')).toBe(colorsA.get('T cells'));
    expect(colorsB.get('0')).toBe(colorsA.get('B cells'));
    // the unmatched group keeps a colour of its own, none of A's matched ones
    expect(colorsB.get('7')).toBe('#0000ff');
    // and B's legend says so: its swatch for "3" is A's "T cells" red
    const swatch = [...view.querySelectorAll('.sds-sidebyside-pane[data-side="B"] .sds-legend li, .sds-sidebyside-pane[data-side="B"] .sds-legend-toggle')].find(n =>
      text(n).includes('3')
    );
    expect(swatch?.innerHTML).toMatch(/#ff0000|rgb\(255, 0, 0\)/);
  });

  it('names the other version by title in the tissue view, never by its ID', async () => {
    const t = transport()
      .on('compare', p => comparison(p.a, p.b as number))
      .on('tree', () => TREE)
      .on('fingerprint', () => ({ fingerprint: 'x' }));
    const el = mount(t);
    await settle(10);
    const selectB = el.querySelector<HTMLSelectElement>('select[aria-label^="Version B"]')!;
    selectB.value = 'side-9';
    selectB.dispatchEvent(new Event('change'));
    await settle(10);
    el.querySelector<HTMLButtonElement>('.sds-show-tissue')!.click();
    await settle(10);
    const select = el.querySelector<HTMLSelectElement>('.sds-tissue:not(.sds-sidebyside) .sds-spatial select')!;
    const shown = text(select.selectedOptions[0]);
    expect(shown).toBe('regions: changed since Side (branch, v2)');
    expect(shown).not.toContain('side-9');
  });
});

describe('compare: a clustering on the tissue', () => {
  it('shows the cells that moved, and leads with how many', async () => {
    const clustered = (a: number | string, b: number): Comparison => {
      const c = comparison(a, b);
      c.obs.changed[0] = {
        ...c.obs.changed[0],
        agreement: { ari: 0.5, nmi: 0.6, matched: [{ a: '0', b: '1', count: 1 }], n_moved: 0 },
        contingency: { a: ['0'], b: ['1'], counts: [[1]] }
      };
      return c;
    };
    const t = transport().on('compare', p => clustered(p.a, p.b as number));
    const el = mount(t);
    await settle(10);
    expect(text(el.querySelector('.sds-headline li'))).toBe('regions: same partition, renamed');
    // one story: the column's heading and its paragraph say the same, no "cells changed" beside it
    const section = el.querySelector('.sds-obs-change[data-column="regions"]')!;
    expect(text(section.querySelector('h4'))).toBe('regions categorical: same partition, renamed');
    expect(text(section.querySelector('.sds-agreement'))).toMatch(/^Same partition, renamed\. Every cell stays with the same cells; one group has a new name: 0 → 1\./);
    expect(text(section)).not.toMatch(/cells? changed|different label/);
    const show = el.querySelector<HTMLButtonElement>('.sds-obs-change[data-column="regions"] .sds-show-tissue')!;
    expect(show.title).toMatch(/moved to another group/);
    show.click();
    await settle(10);
    expect(text(el.querySelector('.sds-tissue-title'))).toBe('On the tissue: regions, the cells that moved (A: v2)');
  });
});

describe('Escape closes A | B side by side (issue 29)', () => {
  it('at once after it opened: the focus moved into it, and goes back to the button', async () => {
    const t = transport()
      .on('compare', p => comparison(p.a, p.b as number))
      .on('tree', () => TREE)
      .on('fingerprint', () => ({ fingerprint: 'x' }));
    const el = mount(t);
    await settle(10);
    const selectB = el.querySelector<HTMLSelectElement>('select[aria-label^="Version B"]')!;
    selectB.value = 'side-9';
    selectB.dispatchEvent(new Event('change'));
    await settle(10);
    const button = el.querySelector<HTMLButtonElement>('.sds-obs-change[data-column="regions"] .sds-show-sides')!;
    button.focus();
    button.click();
    await settle(10);
    const view = el.querySelector<HTMLElement>('.sds-sidebyside')!;
    expect(view.hidden).toBe(false);
    expect(view.contains(document.activeElement)).toBe(true);
    // Escape where the focus is, as a person presses it
    document.activeElement!.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    expect(view.hidden).toBe(true);
    expect(document.activeElement).toBe(button);
  });
});
