/**
 * Print export of a canvas figure: a PNG at the figure's print width and 300 dpi, the title
 * above the drawing and the legend beside it, on white (print does not follow the theme),
 * with the pixel density written into the file (a pHYs chunk) so layout programs place it
 * at its real size.
 */

import type { CanvasColor } from './types';

export const PRINT_DPI = 300;
/** Journal column widths (mm): single and double column. */
const COLUMN_MM: Record<string, number> = { single: 89, double: 183 };
const DEFAULT_MM = 183;
/** Categories listed in a print legend; the rest are counted. */
const MAX_LEGEND_ITEMS = 24;

/** A print width in mm from a figure's `print_width` (mm, "single", "double"; else a double column). */
export function printWidthMm(w: number | string | null | undefined): number {
  if (typeof w === 'number' && Number.isFinite(w) && w > 0) {
    return w;
  }
  return (typeof w === 'string' && COLUMN_MM[w]) || DEFAULT_MM;
}

/** Pixels across `mm` at `dpi`. */
export function printPixels(mm: number, dpi = PRINT_DPI): number {
  return Math.round((mm / 25.4) * dpi);
}

let crcTable: Uint32Array | null = null;
function crc32(bytes: Uint8Array): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) {
        c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      }
      crcTable[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (const b of bytes) {
    c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  }
  return (c ^ 0xffffffff) >>> 0;
}

/** `png` with a pHYs chunk saying `dpi` (PNG stores pixels per metre), right after IHDR. */
export function withDpi(png: Uint8Array, dpi = PRINT_DPI): Uint8Array {
  const afterHeader = 8 + 25; // signature, then IHDR: length 4 + type 4 + 13 data + crc 4
  const chunk = new Uint8Array(21);
  const view = new DataView(chunk.buffer);
  const perMetre = Math.round(dpi / 0.0254);
  view.setUint32(0, 9);
  chunk.set([0x70, 0x48, 0x59, 0x73], 4); // "pHYs"
  view.setUint32(8, perMetre);
  view.setUint32(12, perMetre);
  chunk[16] = 1; // unit: metre
  view.setUint32(17, crc32(chunk.subarray(4, 17)));
  const out = new Uint8Array(png.length + chunk.length);
  out.set(png.subarray(0, afterHeader));
  out.set(chunk, afterHeader);
  out.set(png.subarray(afterHeader), afterHeader + chunk.length);
  return out;
}

/** The dpi a PNG's pHYs chunk says, or null without one. */
export function dpiOf(png: Uint8Array): number | null {
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  for (let at = 8; at + 12 <= png.length; ) {
    const length = view.getUint32(at);
    const type = String.fromCharCode(...png.subarray(at + 4, at + 8));
    if (type === 'pHYs' && png[at + 16] === 1) {
      return Math.round(view.getUint32(at + 8) * 0.0254);
    }
    at += 12 + length;
  }
  return null;
}

type LegendEntry = { label: string; color: string };

/** What the print legend lists: the visible categories (hidden ones are transparent), or the colormap. */
export function legendEntries(color: CanvasColor): { title: string; entries: LegendEntry[]; more: number } | null {
  if (color.mode === 'categorical') {
    const shown = color.categories
      .map((label, i) => ({ label, color: color.colors[i] ?? '#cccccc' }))
      .filter(e => !/^#[0-9a-f]{6}00$/i.test(e.color));
    return { title: color.column, entries: shown.slice(0, MAX_LEGEND_ITEMS), more: Math.max(0, shown.length - MAX_LEGEND_ITEMS) };
  }
  if (color.mode === 'continuous') {
    return { title: `${color.column} (${color.colormap})`, entries: [], more: 0 };
  }
  return null;
}

/**
 * The print page: `title` across the top, `drawing` (already at print resolution) below it,
 * the legend of `color` to its right. `width` is the whole page in pixels.
 */
export function composePrint(drawing: HTMLCanvasElement, title: string, color: CanvasColor, width: number, dpi = PRINT_DPI): HTMLCanvasElement {
  const pt = dpi / 72;
  const margin = Math.round(6 * pt);
  const titleSize = Math.round(9 * pt);
  const textSize = Math.round(7 * pt);
  const legend = legendEntries(color);
  const legendWidth = legend ? Math.round(Math.min(width * 0.3, 110 * pt)) : 0;
  const drawWidth = width - 2 * margin - (legend ? legendWidth + margin : 0);
  const drawHeight = Math.round((drawWidth * drawing.height) / Math.max(1, drawing.width));
  const top = margin + titleSize + margin;
  const page = document.createElement('canvas');
  page.width = width;
  page.height = top + drawHeight + margin;
  const ctx = page.getContext('2d');
  if (!ctx) {
    throw new Error('this browser gave no 2D canvas for the print export');
  }
  ctx.fillStyle = '#ffffff';
  ctx.fillRect(0, 0, page.width, page.height);
  ctx.fillStyle = '#000000';
  ctx.textBaseline = 'top';
  ctx.font = `600 ${titleSize}px sans-serif`;
  ctx.fillText(title, margin, margin, width - 2 * margin);
  ctx.imageSmoothingEnabled = true;
  ctx.drawImage(drawing, margin, top, drawWidth, drawHeight);
  if (legend) {
    const x = margin + drawWidth + margin;
    let y = top;
    ctx.font = `600 ${textSize}px sans-serif`;
    ctx.fillText(legend.title, x, y, legendWidth);
    y += Math.round(textSize * 1.6);
    ctx.font = `${textSize}px sans-serif`;
    if (color.mode === 'continuous') {
      const barHeight = Math.min(drawHeight - 3 * textSize, Math.round(60 * pt));
      const lut = color.lut;
      for (let i = 0; i < barHeight; i++) {
        ctx.fillStyle = lut[Math.round(((barHeight - 1 - i) / Math.max(1, barHeight - 1)) * (lut.length - 1))];
        ctx.fillRect(x, y + i, Math.round(8 * pt), 1);
      }
      ctx.fillStyle = '#000000';
      ctx.fillText(formatNumber(color.max), x + Math.round(11 * pt), y, legendWidth);
      ctx.fillText(formatNumber(color.min), x + Math.round(11 * pt), y + barHeight - textSize, legendWidth);
    } else {
      const swatch = Math.round(textSize * 0.8);
      for (const entry of legend.entries) {
        ctx.fillStyle = entry.color;
        ctx.fillRect(x, y + (textSize - swatch) / 2, swatch, swatch);
        ctx.fillStyle = '#000000';
        ctx.fillText(entry.label, x + swatch + Math.round(3 * pt), y, legendWidth - swatch - 3 * pt);
        y += Math.round(textSize * 1.35);
      }
      if (legend.more) {
        ctx.fillText(`… and ${legend.more} more`, x, y, legendWidth);
      }
    }
  }
  return page;
}

function formatNumber(v: number): string {
  return Math.abs(v) >= 1000 || (Math.abs(v) < 0.01 && v !== 0) ? v.toExponential(2) : String(Number(v.toPrecision(3)));
}

/** A canvas as PNG bytes with its dpi written in. */
export async function printBlob(page: HTMLCanvasElement, dpi = PRINT_DPI): Promise<Blob> {
  const blob = await new Promise<Blob>((resolve, reject) =>
    page.toBlob(b => (b ? resolve(b) : reject(new Error('the canvas gave no PNG'))), 'image/png')
  );
  const bytes = withDpi(new Uint8Array(await blob.arrayBuffer()), dpi);
  return new Blob([bytes as BlobPart], { type: 'image/png' });
}
