import { afterEach, describe, expect, it } from 'vitest';
import { additiveColoring, CHANNEL_COLORS, LEVELS, NONE_COLOR } from '../app/figures/genechannels';
import type { CanvasData } from '../app/spatial/raster';
import { SpatialFigure } from '../app/figures/spatialfigure';
import type { CanvasPayload } from '../app/shared/types';
import { FakeTransport } from './fixtures';

describe('genes as added colour channels', () => {
  it('puts each gene in its own channel, clipped to its limits, and adds them', () => {
    const mix = additiveColoring(
      ['EPCAM', 'KRT8', 'CD3E'],
      [Float32Array.from([0, 10, 10, 0, 5]), Float32Array.from([0, 0, 4, 0, 2]), Float32Array.from([0, 0, 0, 1, NaN])],
      [
        { min: 0, max: 10 },
        { min: 0, max: 4 },
        { min: 0, max: 1 }
      ]
    );
    const top = LEVELS - 1;
    const colorOf = (i: number) => mix.color.colors[mix.codes[i]];
    expect(colorOf(0)).toBe(NONE_COLOR); // none expressed: a dark grey, far from white (all three)
    expect(colorOf(1)).toBe('#ff0000'); // EPCAM only: red
    expect(colorOf(2)).toBe('#ffff00'); // EPCAM + KRT8: red + green
    expect(colorOf(3)).toBe('#0000ff'); // CD3E only
    expect(mix.codes[4]).toBe((Math.round(top / 2) * LEVELS + Math.round(top / 2)) * LEVELS); // half, half, missing = 0
    expect(mix.color.categories[mix.codes[2]]).toBe('EPCAM 100% · KRT8 100% · CD3E 0%');
    expect(mix.color.colors).toHaveLength(LEVELS ** 3);
    expect(CHANNEL_COLORS).toHaveLength(3);
  });

  it('clips each gene to its own 1st–99th percentiles by default', () => {
    const hot = Float32Array.from({ length: 101 }, (_, i) => (i === 100 ? 1e6 : i));
    const mix = additiveColoring(['A'], [hot]);
    expect(mix.channels[0].limits.min).toBeCloseTo(1);
    expect(mix.channels[0].limits.max).toBeLessThan(1e6); // one outlier does not squeeze the rest to black
    expect(mix.color.colors[mix.codes[99]]).toBe('#ff0000');
    expect(() => additiveColoring(['A', 'B', 'C', 'D'], [hot, hot, hot, hot])).toThrow(/1 to 3 genes/);
  });
});

// ------------------------------------------------------------------ the gene box in the toolbar

const NAMES = ['EPCAM', 'EPAS1', 'KRT8', 'CD3E'];
const VALUES: Record<string, number[]> = {
  EPCAM: [0, 10, 10, 0, 5],
  EPAS1: [1, 1, 1, 1, 1],
  KRT8: [0, 0, 4, 0, 2],
  CD3E: [0, 0, 0, 1, 0]
};

function payload(): CanvasPayload {
  return {
    n_cells: 5,
    bounds: [0, 0, 100, 100],
    viewport: { target: [50, 50], zoom: 0, rotation: 0 },
    color: { mode: 'categorical', column: 'regions', categories: ['tumor', 'stroma'], colors: ['#ff0000', '#00ff00'] },
    point_size: 4,
    image: null,
    unit: 'micrometer',
    obs_columns: ['regions', 'score']
  };
}

function data(): CanvasData {
  return {
    x: Float32Array.from([50, 51, 10, 90, 20]),
    y: Float32Array.from([50, 49, 10, 90, 20]),
    value: Uint16Array.from([0, 1, 0, 1, 0]),
    image: null
  };
}

/** The service's answers: genes found in any case; several genes (commas) colored by their mean. */
function transport(): FakeTransport {
  const find = (typed: string) => {
    const name = NAMES.find(n => n.toLowerCase() === typed.trim().toLowerCase());
    if (!name) {
      throw new Error(`Gene ${JSON.stringify(typed)} is not among the var names.`);
    }
    return name;
  };
  return new FakeTransport()
    .on('genes', () => ({ table: 'table', names: NAMES, symbol_column: null, symbols: null }))
    .on('color_values', p => {
      const names = String(p.gene).split(',').map(find);
      const values = Float32Array.from(VALUES[names[0]].map((_, i) => names.reduce((s, n) => s + VALUES[n][i], 0) / names.length));
      const column = names.length > 1 ? `mean of ${names.join(', ')}` : names[0];
      return {
        data: { mode: 'continuous', column, colormap: 'viridis', min: 0, max: 10, lut: ['#000000', '#ffffff'] },
        buffers: [new DataView(values.buffer)]
      } as never;
    });
}

const settle = () => new Promise(r => setTimeout(r, 30));
let figure: SpatialFigure | null = null;
afterEach(() => {
  figure?.dispose();
  figure?.node.remove();
  figure = null;
});

function mount(t: FakeTransport): SpatialFigure {
  figure = new SpatialFigure(t, 1, 'tissue', payload(), data(), false);
  document.body.append(figure.node);
  figure.start();
  return figure;
}

async function type(input: HTMLInputElement, text: string): Promise<void> {
  input.focus();
  input.value = text;
  input.dispatchEvent(new Event('input'));
  await settle();
}

function key(input: HTMLInputElement, k: string): void {
  input.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true }));
}

describe('the gene box', () => {
  it('finds a gene in any case as a combobox: arrows move, Enter picks, Escape closes', async () => {
    const t = transport();
    const f = mount(t);
    const input = f.node.querySelector<HTMLInputElement>('input.sds-gene')!;
    const list = f.node.querySelector<HTMLElement>('.sds-gene-list')!;
    expect(input.getAttribute('role')).toBe('combobox');
    expect(input.getAttribute('aria-controls')).toBe(list.querySelector('[role=listbox]')!.id);
    await type(input, 'ep');
    expect(input.getAttribute('aria-expanded')).toBe('true');
    expect([...list.querySelectorAll('[role=option]')].map(o => o.textContent)).toEqual(['EPCAM', 'EPAS1']);
    key(input, 'ArrowDown');
    key(input, 'ArrowDown');
    expect(input.getAttribute('aria-activedescendant')).toBe(list.querySelectorAll('[role=option]')[1].id);
    key(input, 'Escape');
    expect(list.hidden).toBe(true);
    expect(input.getAttribute('aria-expanded')).toBe('false');
    for (const typed of ['Epcam', 'epcam', 'EPCAM']) {
      f.node.querySelector<HTMLButtonElement>('.sds-gene-chip')?.click(); // start again from no gene
      await settle();
      await type(input, typed);
      key(input, 'Enter');
      await settle();
      expect(t.callsOf('color_values').slice(-1)[0]).toEqual({ version: 1, figure: 'tissue', gene: 'EPCAM' });
      expect(f.node.dataset.colorBy).toBe('EPCAM');
    }
  });

  it('answers a wrong name with the nearest ones in the popup, not an error in the toolbar', async () => {
    const t = transport();
    const f = mount(t);
    const input = f.node.querySelector<HTMLInputElement>('input.sds-gene')!;
    const status = f.node.querySelector<HTMLElement>('.sds-color-status')!;
    await type(input, 'Epcm');
    key(input, 'Enter');
    await settle();
    const list = f.node.querySelector<HTMLElement>('.sds-gene-list')!;
    expect(list.hidden).toBe(false);
    expect(list.querySelector('.sds-gene-note')?.textContent).toBe('No gene “Epcm”. Nearest:');
    expect(list.querySelector('[role=option]')?.textContent).toBe('EPCAM');
    expect(t.callsOf('color_values')).toEqual([]);
    expect(status.textContent).toBe('');
    // the nearest name is one arrow and Enter away
    key(input, 'ArrowDown');
    key(input, 'Enter');
    await settle();
    expect(t.callsOf('color_values')).toEqual([{ version: 1, figure: 'tissue', gene: 'EPCAM' }]);
  });

  it('colors by a gene within percentile limits, with a colour bar and a limits control', async () => {
    const f = mount(transport());
    await f.colorBy({ gene: 'EPCAM' });
    const range = () => [...f.node.querySelectorAll('.sds-gradient-range span')].map(s => Number(s.getAttribute('title')));
    // numpy.percentile([0, 0, 5, 10, 10], [1, 99]) == [0, 10]; the bar shows the limits in use
    expect(range()).toEqual([0, 10]);
    const limits = f.node.querySelector('.sds-color-limits')!;
    const [pLo, pHi, vMin] = [...limits.querySelectorAll<HTMLInputElement>('input')];
    expect([pLo.value, pHi.value]).toEqual(['1', '99']);
    pHi.value = '50';
    pHi.dispatchEvent(new Event('change'));
    expect(range()).toEqual([0, 5]);
    const again = f.node.querySelector('.sds-color-limits')!.querySelectorAll<HTMLInputElement>('input');
    again[2].value = '2';
    again[3].value = '8';
    again[3].dispatchEvent(new Event('change'));
    expect(range()).toEqual([2, 8]);
    expect(vMin).not.toBe(again[2]); // the control is rebuilt with the limits it shows
    expect(again[2].value).toBe('2');
  });

  it('shows up to three genes as added channels, or their mean score', async () => {
    const t = transport();
    const f = mount(t);
    const input = f.node.querySelector<HTMLInputElement>('input.sds-gene')!;
    for (const g of ['epcam', 'krt8', 'cd3e']) {
      await type(input, g);
      key(input, 'Enter');
      await settle();
    }
    const calls = t.callsOf('color_values') as { gene: string }[];
    // one gene, then two and three as channels: each gene asked on its own
    expect(calls.slice(-3).map(c => c.gene)).toEqual(['EPCAM', 'KRT8', 'CD3E']);
    const legend = f.node.querySelector('.sds-gene-channels')!;
    expect([...legend.querySelectorAll('li')].map(li => li.getAttribute('data-channel'))).toEqual(['red', 'green', 'blue']);
    expect(legend.textContent).toContain('EPCAM');
    expect(f.node.dataset.colorBy).toBe('EPCAM + KRT8 + CD3E');
    expect(f.node.querySelector<HTMLSelectElement>('.sds-color-by')!.selectedOptions[0].textContent).toBe('genes EPCAM + KRT8 + CD3E (channels)');
    const combine = f.node.querySelector<HTMLSelectElement>('.sds-gene-combine')!;
    expect(combine.hidden).toBe(false);
    combine.value = 'mean';
    combine.dispatchEvent(new Event('change'));
    await settle();
    expect(t.callsOf('color_values').slice(-1)[0]).toEqual({ version: 1, figure: 'tissue', gene: 'EPCAM,KRT8,CD3E' });
    expect(f.node.dataset.colorBy).toBe('mean of EPCAM, KRT8, CD3E');
    expect(f.node.querySelector('.sds-gene-channels')).toBeNull();
    expect(f.node.querySelector('.sds-gradient')).not.toBeNull();
  });
});

describe('percentiles of values with infinities', () => {
  it('leaves out what is not finite, wherever it sorts', async () => {
    const { percentileLimits } = await import('../app/figures/colorlimits');
    const values = Float32Array.from([Infinity, 3, NaN, -Infinity, 1, 2]);
    expect(percentileLimits(values, 0, 100)).toEqual({ min: 1, max: 3 });
    expect(percentileLimits(values, 50, 50)).toEqual({ min: 2, max: 2 });
  });
});

describe('the gene box over IDs with symbols', () => {
  it('finds a gene by its symbol in any case, names its chip by the symbol and asks for the ID', async () => {
    const { GeneBox } = await import('../app/figures/genebox');
    const picks: string[][] = [];
    const box = new GeneBox(
      async () => ({ table: 'table', names: ['ENSG01', 'ENSG02'], symbol_column: 'gene_symbols', symbols: ['EPCAM', 'KRT8'] }),
      genes => picks.push(genes)
    );
    document.body.append(box.node);
    await type(box.input, 'epcam');
    expect([...box.node.querySelectorAll('[role=option]')].map(o => o.textContent)).toEqual(['EPCAM (ENSG01)']);
    key(box.input, 'Enter');
    await settle();
    expect(picks).toEqual([['ENSG01']]);
    expect(box.node.querySelector('.sds-gene-chip')?.textContent).toBe('EPCAM ×');
    box.node.remove();
  });
});

describe('the gene box says what it does (issue 40, item 5)', () => {
  /** Relative luminance (sRGB), 0 black to 1 white. */
  const luminance = (hex: string) => {
    const [r, g, b] = [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16) / 255).map(c => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };

  it('"none of them" reads far from white (all three), and apart from a light or dark page', () => {
    const mix = additiveColoring(['A', 'B', 'C'], [Float32Array.from([0, 1]), Float32Array.from([0, 1]), Float32Array.from([0, 1])], [
      { min: 0, max: 1 },
      { min: 0, max: 1 },
      { min: 0, max: 1 }
    ]);
    const all = mix.color.colors[mix.codes[1]];
    expect(all).toBe('#ffffff');
    expect(mix.color.colors[mix.codes[0]]).toBe(NONE_COLOR);
    // WCAG contrast of "none" against "all three" (white) and against a dark page (#111111)
    const contrast = (a: number, b: number) => (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    expect(contrast(luminance(NONE_COLOR), luminance(all))).toBeGreaterThan(4.5);
    expect(contrast(luminance(NONE_COLOR), luminance('#111111'))).toBeGreaterThan(1.8);
  });

  it('refuses a 4th gene, saying how to make room, and keeps the three and their colours', async () => {
    const { GeneBox } = await import('../app/figures/genebox');
    const picks: string[][] = [];
    const box = new GeneBox(
      async () => ({ table: 'table', names: ['EPCAM', 'KRT8', 'CD3E', 'PTPRC'], symbol_column: null, symbols: null }),
      genes => picks.push(genes)
    );
    document.body.append(box.node);
    for (const g of ['epcam', 'krt8', 'cd3e', 'ptprc']) {
      await type(box.input, g);
      key(box.input, 'Enter');
      await settle();
    }
    expect(picks).toEqual([['EPCAM'], ['EPCAM', 'KRT8'], ['EPCAM', 'KRT8', 'CD3E']]);
    expect(box.picked).toEqual(['EPCAM', 'KRT8', 'CD3E']);
    expect(box.node.querySelector('.sds-gene-note')?.textContent).toBe('Up to 3 genes at once (EPCAM, KRT8, CD3E): remove one (×) to add PTPRC.');
    expect((box.node.querySelector('.sds-gene-list') as HTMLElement).hidden).toBe(false);
    // room made: the 4th goes in
    box.node.querySelector<HTMLButtonElement>('.sds-gene-chip')!.click();
    await type(box.input, 'ptprc');
    key(box.input, 'Enter');
    await settle();
    expect(box.picked).toEqual(['KRT8', 'CD3E', 'PTPRC']);
    box.node.remove();
  });

  it('offers the nearest names while typing, before Enter', async () => {
    const { GeneBox } = await import('../app/figures/genebox');
    const box = new GeneBox(
      async () => ({ table: 'table', names: ['EPCAM', 'KRT8', 'CD3E'], symbol_column: null, symbols: null }),
      () => undefined
    );
    document.body.append(box.node);
    await type(box.input, 'Epcm');
    await settle();
    expect(box.node.querySelector('.sds-gene-note')?.textContent).toBe('No gene “Epcm”. Nearest:');
    expect(box.node.querySelector('[role=option]')?.textContent).toBe('EPCAM');
    box.node.remove();
  });
});
