import { describe, expect, it } from 'vitest';

import { dpiOf, legendEntries, printPixels, printWidthMm, withDpi } from '../app/print';

// the smallest valid PNG: 1x1 grey, as canvas.toBlob would give (signature, IHDR, IDAT, IEND)
const PNG_1X1 = Uint8Array.from(
  atob('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg=='),
  c => c.charCodeAt(0)
);

describe('print export', () => {
  it('a print width in mm: numbers as given, journal columns by name, else a double column', () => {
    expect(printWidthMm(120)).toBe(120);
    expect(printWidthMm('single')).toBe(89);
    expect(printWidthMm('double')).toBe(183);
    expect(printWidthMm(null)).toBe(183);
    expect(printWidthMm(-3)).toBe(183);
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
