import { describe, expect, it } from 'vitest';

import { PRINT_CONFIG, printChart } from '../app/chart';
import { rangeFormat, rangeTicks } from '../app/format';
import { CHANNELS_HEADING, dpiOf, legendEntries, printPixels, printSVG, printWidthMm, svgSize, withDpi, xmlText } from '../app/print';
import type { CanvasColor } from '../app/types';

// the smallest valid PNG: 1x1 grey, as canvas.toBlob would give (signature, IHDR, IDAT, IEND)
const PNG_1X1 = Uint8Array.from(
  atob('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg=='),
  c => c.charCodeAt(0)
);

describe('print export', () => {
  it('a print width in mm: numbers as given, journal columns by name, else a single column (as in Python)', () => {
    expect(printWidthMm(120)).toBe(120);
    expect(printWidthMm('single')).toBe(89);
    expect(printWidthMm('double')).toBe(183);
    expect(printWidthMm(null)).toBe(89);
    expect(printWidthMm(-3)).toBe(89);
    expect(printPixels(183)).toBe(2161); // 183 mm at 300 dpi
  });

  it('writes 300 dpi into the PNG (pHYs after IHDR), which a reader finds again', () => {
    expect(dpiOf(PNG_1X1)).toBeNull();
    const out = withDpi(PNG_1X1, 300);
    expect(out.length).toBe(PNG_1X1.length + 21);
    expect(String.fromCharCode(...out.subarray(37, 41))).toBe('pHYs');
    expect(dpiOf(out)).toBe(300);
    // the chunk's CRC is the standard one: 11811 px/m both ways, unit metre
    const view = new DataView(out.buffer);
    expect(view.getUint32(41)).toBe(11811);
    expect(view.getUint32(50).toString(16)).toBe('78a53f76');
  });

  it('the legend lists visible categories only, and counts what it leaves out', () => {
    const categories = Array.from({ length: 30 }, (_, i) => `c${i}`);
    const colors = categories.map((_, i) => (i === 1 ? '#00000000' : '#123456'));
    const legend = legendEntries({ mode: 'categorical', column: 'cell_type', categories, colors });
    expect(legend?.title).toBe('cell_type');
    expect(legend?.entries.map(e => e.label).slice(0, 3)).toEqual(['c0', 'c2', 'c3']);
    expect(legend?.entries.length).toBe(24);
    expect(legend?.more).toBe(5);
    expect(legendEntries({ mode: 'none' })).toBeNull();
  });
});

/** An SVG file parsed as a reader would: null when it is not well-formed XML. */
function parseSVG(svg: string): Document | null {
  const doc = new DOMParser().parseFromString(svg, 'image/svg+xml');
  return doc.querySelector('parsererror') || doc.documentElement?.nodeName !== 'svg' ? null : doc;
}

const DRAWING = '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="200" viewBox="0 0 300 200"><circle cx="10" cy="10" r="2"/></svg>';

describe('SVG export: the print page with a vector legend', () => {
  it('categories become swatches with their colors and labels; labels from data stay text', () => {
    const hostile = '<script>alert(1)</script> & "x"';
    const color: CanvasColor = {
      mode: 'categorical',
      column: 'cell<type>',
      categories: ['T cell', hostile, 'hidden', 'B\u0001cell'],
      colors: ['#ff0000', '#00ff00', '#00000000', '#0000ff']
    };
    const svg = printSVG(DRAWING, 'v3 Regions <b>bold</b>', color, 89);
    const doc = parseSVG(svg);
    expect(doc).not.toBeNull();
    expect(doc!.querySelector('script')).toBeNull();
    expect(doc!.querySelector('b')).toBeNull();
    expect(svg).not.toContain('<script');
    const root = doc!.documentElement;
    expect(root.getAttribute('width')).toBe('89mm');
    expect(doc!.querySelector('text.title')?.textContent).toBe('v3 Regions <b>bold</b>');
    expect(doc!.querySelector('.legend-title')?.textContent).toBe('cell<type>');
    const swatches = [...doc!.querySelectorAll('rect.swatch')].map(r => r.getAttribute('fill'));
    expect(swatches).toEqual(['#ff0000', '#00ff00', '#0000ff']); // the hidden category is left out
    const labels = [...doc!.querySelectorAll('text.label')].map(t => t.textContent);
    expect(labels[0]).toBe('T cell');
    expect(labels[1]).toContain('<script>'); // cut to the legend's width, still the text itself
    expect(labels[2]).toBe('B\ufffdcell'); // a control character XML forbids is replaced
    // the drawing is nested as vector, placed below the title
    const nested = root.querySelector('svg');
    expect(nested?.getAttribute('viewBox')).toBe('0 0 300 200');
    expect(Number(nested?.getAttribute('y'))).toBeGreaterThan(0);
    expect(nested?.querySelector('circle')).not.toBeNull();
  });

  it('a continuous coloring becomes a gradient colorbar with formatted ticks', () => {
    const lut = Array.from({ length: 256 }, (_, i) => `#${i.toString(16).padStart(2, '0')}0000`);
    const color: CanvasColor = { mode: 'continuous', column: 'total_counts', colormap: 'viridis', min: 0.00001424, max: 3.2, lut };
    const doc = parseSVG(printSVG(DRAWING, 'counts', color, 183))!;
    expect(doc).not.toBeNull();
    const stops = [...doc.querySelectorAll('linearGradient stop')];
    expect(stops.length).toBeGreaterThan(16);
    expect(stops[0].getAttribute('stop-color')).toBe('#000000');
    expect(stops[stops.length - 1].getAttribute('stop-color')).toBe('#ff0000');
    expect(doc.querySelector('rect.colorbar')?.getAttribute('fill')).toBe('url(#sds-colorbar)');
    const ticks = [...doc.querySelectorAll('text.tick')].map(t => t.textContent);
    expect(ticks).toEqual(['0.000', '1.600', '3.200']); // never "0.00001424"
    expect(doc.querySelector('.legend-title')?.textContent).toBe('total_counts (viridis)');
  });

  it('the image channels shown are listed under the coloring, as swatches with their names, as data', () => {
    const color: CanvasColor = { mode: 'categorical', column: 'region', categories: ['tumor'], colors: ['#ff0000'] };
    const channels = [
      { name: 'DAPI', color: '#0000ff' },
      { name: '<img src=x onerror=alert(1)> CD45', color: '#00ff00' }
    ];
    const svg = printSVG(DRAWING, 'regions', color, 89, channels);
    const doc = parseSVG(svg)!;
    expect(doc).not.toBeNull();
    expect(doc.querySelector('img')).toBeNull();
    expect(doc.querySelector('.channels-title')?.textContent).toBe(CHANNELS_HEADING);
    const names = [...doc.querySelectorAll('text.channel')].map(t => t.textContent);
    expect(names[0]).toBe('DAPI');
    expect(names[1]).toContain('<img'); // cut to the legend's width, still the text itself
    const swatches = [...doc.querySelectorAll('rect.swatch')].map(r => r.getAttribute('fill'));
    expect(swatches).toEqual(['#ff0000', '#0000ff', '#00ff00']);
    // below the categories, not over them
    const y = (sel: string) => Number(doc.querySelector(sel)?.getAttribute('y'));
    expect(y('.channels-title')).toBeGreaterThan(y('text.label'));
    // no coloring legend (an image alone): the channels still get the legend column
    const alone = parseSVG(printSVG(DRAWING, 'image', { mode: 'none' }, 89, channels))!;
    expect([...alone.querySelectorAll('text.channel')].length).toBe(2);
    expect(alone.querySelector('.legend-title')).toBeNull();
    // a continuous coloring: the channels come below its bar
    const lut = ['#000000', '#ffffff'];
    const bar = parseSVG(printSVG(DRAWING, 'c', { mode: 'continuous', column: 'n', colormap: 'gray', min: 0, max: 9, lut }, 89, channels))!;
    const barBottom = Number(bar.querySelector('rect.colorbar')?.getAttribute('y')) + Number(bar.querySelector('rect.colorbar')?.getAttribute('height'));
    expect(Number(bar.querySelector('.channels-title')?.getAttribute('y'))).toBeGreaterThan(barBottom);
  });

  it('escapes what markup would read, and reads a drawing size back', () => {
    expect(xmlText(`<a href="x">&'`)).toBe('&lt;a href=&quot;x&quot;&gt;&amp;&#39;');
    expect(svgSize(DRAWING)).toEqual([300, 200]);
    expect(svgSize('<svg/>')).toEqual([100, 100]);
  });

  it('a chart for print: vega draws it off screen at the page width, nested under the title', async () => {
    const spec = {
      data: { values: [{ group: '1', n: 3 }, { group: '10', n: 5 }, { group: '2', n: 4 }] },
      mark: 'bar',
      encoding: { x: { field: 'group', type: 'nominal' }, y: { field: 'n', type: 'quantitative' }, color: { field: 'group', type: 'nominal' } }
    };
    const drawn = await printChart(spec, 200);
    expect(drawn.width).toBeCloseTo(200, 0);
    const doc = parseSVG(printSVG(await drawn.toSVG(), 'v2 markers', null, 89));
    expect(doc).not.toBeNull();
    expect(doc!.querySelector('text.title')?.textContent).toBe('v2 markers');
    expect(doc!.querySelector('.legend')).toBeNull(); // a chart carries its own legend
    const texts = [...doc!.querySelectorAll('svg svg text')].map(t => t.textContent);
    expect(texts).toEqual(expect.arrayContaining(['group', '10']));
  });

  it("a chart's type for print stays below the page's 9 pt title: titles 8 pt, labels 7 pt", async () => {
    const spec = {
      data: { values: [{ group: 'a', n: 3 }, { group: 'b', n: 5 }] },
      mark: 'bar',
      encoding: { x: { field: 'group', type: 'nominal' }, y: { field: 'n', type: 'quantitative' }, color: { field: 'group', type: 'nominal' } }
    };
    const doc = parseSVG(printSVG(await (await printChart(spec, 200)).toSVG(), 'v2 markers', null, 89))!;
    const size = (t: Element) => Number((t.getAttribute('font-size') ?? '').replace('px', ''));
    const title = size(doc.querySelector('text.title')!);
    expect(title).toBe(9);
    const sizes = [...doc.querySelectorAll('svg svg text')].map(t => [t.textContent, size(t)] as const);
    expect(sizes.length).toBeGreaterThan(4);
    for (const [text, pt] of sizes) {
      expect(pt, `${text}: ${pt} pt`).toBeLessThan(title);
    }
    const of = (text: string) => sizes.filter(([t]) => t === text).map(([, pt]) => pt);
    expect(of('n')).toEqual([8]); // the y axis title
    expect(new Set(of('a'))).toEqual(new Set([7])); // an x axis label and a legend label
    expect(new Set(of('group'))).toEqual(new Set([8])); // the x axis and the legend titles
  });
});

describe('colorbar numbers', () => {
  it('format as the column does in a table: integers, decimals for the range, p-values in scientific', () => {
    expect(rangeFormat('x', 0.00001424, 3.2)(0.00001424)).toBe('0.000');
    expect(rangeFormat('x', 0, 255)(255)).toBe('255');
    expect(rangeFormat('pvals_adj', 0.00001424, 0.5)(0.00001424)).toBe('1.42e-5');
    expect(rangeTicks('x', 0, 20).map(t => t[1])).toEqual(['0', '10', '20']);
    expect(rangeTicks('x', 0, 2).map(t => t[1])).toEqual(['0.000', '1.000', '2.000']); // a small range is not counts
    expect(rangeTicks('x', 5, 5).map(t => t[1])).toEqual(['5']);
  });
});

describe('the same names and numbers as the Python export', () => {
  it('answers the shared cases (fixtures/exports.json) as studio/export.py does', async () => {
    const { exportName } = await import('../app/figures');
    const cases = (await import('./fixtures/exports.json')).default as {
      names: { depth: number; title: string | null; figure: string; name: string }[];
      ticks: { column: string; min: number; max: number; labels: string[] }[];
    };
    for (const c of cases.names) {
      // the label the app passes: index.ts labelOf, "v<depth> <title>"
      expect(exportName(`v${c.depth}${c.title ? ` ${c.title}` : ''}`, c.figure)).toBe(c.name);
    }
    for (const c of cases.ticks) {
      expect(rangeTicks(c.column, c.min, c.max).map(t => t[1])).toEqual(c.labels);
    }
    const shared = (await import('./fixtures/exports.json')).default as { print_config: unknown; channels_heading: string };
    expect(PRINT_CONFIG).toEqual(shared.print_config);
    expect(CHANNELS_HEADING).toBe(shared.channels_heading);
  });
});
