/**
 * Print export of a canvas figure: a PNG at the figure's print width and 300 dpi, the title
 * above the drawing and the legend beside it, on white (print does not follow the theme),
 * with the pixel density written into the file (a pHYs chunk) so layout programs place it
 * at its real size.
 */

import { rangeTicks } from './format';
import type { CanvasColor, ImageChannel } from './types';

export const PRINT_DPI = 300;
/** Journal column widths (mm): single and double column. */
const COLUMN_MM: Record<string, number> = { single: 89, double: 183 };
const DEFAULT_MM = 89;
/** Categories listed in a print legend; the rest are counted. */
const MAX_LEGEND_ITEMS = 24;

/** A print width in mm from a figure's `print_width` (mm, "single", "double"; else a single column, as the Python export). */
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

/** The image channels a print legend lists under the coloring's, with their colors (names are data). */
export function channelEntries(channels: readonly ImageChannel[]): LegendEntry[] {
  return channels.slice(0, MAX_LEGEND_ITEMS).map(ch => ({ label: ch.name, color: ch.color }));
}

/** The heading of the channels' part of a print legend. */
export const CHANNELS_HEADING = 'Image channels';

/** Where a print page puts its parts, in the page's units (pixels at `dpi`, or points at 72). */
export type PrintLayout = {
  width: number;
  height: number;
  margin: number;
  titleSize: number;
  textSize: number;
  /** The drawing's box. */
  draw: { x: number; y: number; width: number; height: number };
  /** The legend's column (x, top, width), when the coloring has a legend. */
  legendBox: { x: number; y: number; width: number } | null;
  /** The colorbar's height (continuous colorings). */
  barHeight: number;
  /** One unit of type: a point at `dpi`. */
  pt: number;
};

/**
 * The print page's geometry, shared by the PNG (pixels at 300 dpi) and the SVG (points): the
 * title across the top, the drawing (`drawingWidth` x `drawingHeight`, scaled to fit) below it,
 * the legend of `color` and of the image `channels` shown to its right. `width` is the whole page.
 */
export function printLayout(
  drawingWidth: number,
  drawingHeight: number,
  color: CanvasColor | null,
  width: number,
  dpi = PRINT_DPI,
  channels: readonly ImageChannel[] = []
): PrintLayout {
  const pt = dpi / 72;
  const margin = Math.round(6 * pt);
  const titleSize = Math.round(9 * pt);
  const textSize = Math.round(7 * pt);
  const legend = Boolean((color && legendEntries(color)) || channels.length);
  const legendWidth = legend ? Math.round(Math.min(width * 0.3, 110 * pt)) : 0;
  const drawWidth = width - 2 * margin - (legend ? legendWidth + margin : 0);
  const drawHeight = Math.round((drawWidth * drawingHeight) / Math.max(1, drawingWidth));
  const top = margin + titleSize + margin;
  return {
    width,
    height: top + drawHeight + margin,
    margin,
    titleSize,
    textSize,
    draw: { x: margin, y: top, width: drawWidth, height: drawHeight },
    legendBox: legend ? { x: margin + drawWidth + margin, y: top, width: legendWidth } : null,
    barHeight: Math.max(textSize * 3, Math.min(drawHeight - 3 * textSize, Math.round(60 * pt))),
    pt
  };
}

/** The colorbar's ticks: [offset from the bar's top, label], from the maximum at the top down to the minimum. */
function barTicks(color: CanvasColor & { mode: 'continuous' }, barHeight: number): [number, string][] {
  const span = color.max - color.min;
  return rangeTicks(color.column, color.min, color.max).map(([v, label]) => [
    span > 0 ? ((color.max - v) / span) * barHeight : barHeight,
    label
  ]);
}

/**
 * The print page: `title` across the top, `drawing` (already at print resolution) below it,
 * the legend of `color` to its right (none for null: a chart carries its own), then the image
 * `channels` shown, each a swatch of its color and its name. `width` is the whole page in pixels.
 */
export function composePrint(
  drawing: HTMLCanvasElement,
  title: string,
  color: CanvasColor | null,
  width: number,
  dpi = PRINT_DPI,
  channels: readonly ImageChannel[] = []
): HTMLCanvasElement {
  const L = printLayout(drawing.width, drawing.height, color, width, dpi, channels);
  const { pt, textSize } = L;
  const page = document.createElement('canvas');
  page.width = L.width;
  page.height = L.height;
  const ctx = page.getContext('2d');
  if (!ctx) {
    throw new Error('this browser gave no 2D canvas for the print export');
  }
  ctx.fillStyle = '#ffffff';
  ctx.fillRect(0, 0, page.width, page.height);
  ctx.fillStyle = '#000000';
  ctx.textBaseline = 'top';
  ctx.font = `600 ${L.titleSize}px sans-serif`;
  ctx.fillText(title, L.margin, L.margin, width - 2 * L.margin);
  ctx.imageSmoothingEnabled = true;
  ctx.drawImage(drawing, L.draw.x, L.draw.y, L.draw.width, L.draw.height);
  if (!L.legendBox) {
    return page;
  }
  const { x, width: legendWidth } = L.legendBox;
  const swatch = Math.round(textSize * 0.8);
  /** A heading, then each entry as a swatch and its label; answers the y below them. */
  const list = (heading: string, entries: LegendEntry[], more: number, top: number): number => {
    let y = top;
    ctx.fillStyle = '#000000';
    ctx.textBaseline = 'top';
    ctx.font = `600 ${textSize}px sans-serif`;
    ctx.fillText(heading, x, y, legendWidth);
    y += Math.round(textSize * 1.6);
    ctx.font = `${textSize}px sans-serif`;
    for (const entry of entries) {
      ctx.fillStyle = entry.color;
      ctx.fillRect(x, y + (textSize - swatch) / 2, swatch, swatch);
      ctx.fillStyle = '#000000';
      ctx.fillText(entry.label, x + swatch + Math.round(3 * pt), y, legendWidth - swatch - 3 * pt);
      y += Math.round(textSize * 1.35);
    }
    if (more) {
      ctx.fillText(`… and ${more} more`, x, y, legendWidth);
      y += Math.round(textSize * 1.35);
    }
    return y;
  };
  let y = L.legendBox.y;
  const legend = color ? legendEntries(color) : null;
  if (legend && color?.mode === 'continuous') {
    y = list(legend.title, [], 0, y);
    const barHeight = L.barHeight;
    const barWidth = Math.round(8 * pt);
    const lut = color.lut.length ? color.lut : ['#440154', '#fde725'];
    for (let i = 0; i < barHeight; i++) {
      ctx.fillStyle = lut[Math.round(((barHeight - 1 - i) / Math.max(1, barHeight - 1)) * (lut.length - 1))];
      ctx.fillRect(x, y + i, barWidth, 1);
    }
    ctx.fillStyle = '#000000';
    ctx.textBaseline = 'middle';
    for (const [at, label] of barTicks(color, barHeight)) {
      ctx.fillRect(x + barWidth, y + at - pt / 2, Math.round(2 * pt), Math.max(1, Math.round(pt / 2)));
      ctx.fillText(label, x + barWidth + Math.round(3 * pt), y + at, legendWidth - barWidth - 3 * pt);
    }
    y += barHeight + Math.round(textSize * 1.6);
  } else if (legend) {
    y = list(legend.title, legend.entries, legend.more, y);
  }
  if (channels.length) {
    list(CHANNELS_HEADING, channelEntries(channels), Math.max(0, channels.length - MAX_LEGEND_ITEMS), legend ? y + Math.round(textSize * 0.6) : y);
  }
  return page;
}

/** Characters XML 1.0 forbids (C0 controls but tab and newlines, U+FFFE, U+FFFF). */
// eslint-disable-next-line no-control-regex
const NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g;

/** Text or an attribute value of an SVG file: markup characters escaped, characters XML forbids replaced. */
export function xmlText(text: string): string {
  return text
    .replace(NOT_XML, '\ufffd')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** `text` cut to about `room` units of width at `size` (an average glyph is ~0.55 em), with an ellipsis. */
function fitText(text: string, room: number, size: number): string {
  const chars = Math.max(4, Math.floor(room / (0.55 * size)));
  return text.length > chars ? `${text.slice(0, chars - 1)}…` : text;
}

const n2 = (v: number): string => String(Math.round(v * 100) / 100);

/**
 * The legend of `color` as SVG elements in the box `L.legendBox` (points): categories as
 * swatches with their labels, a continuous coloring as a gradient bar with its formatted ticks;
 * then the image `channels` shown, as swatches with their names.
 * Every label is data: it is escaped, never markup.
 */
export function svgLegend(color: CanvasColor | null, L: PrintLayout, channels: readonly ImageChannel[] = []): string {
  const legend = color ? legendEntries(color) : null;
  if ((!legend && !channels.length) || !L.legendBox) {
    return '';
  }
  const { x, width } = L.legendBox;
  const { pt, textSize } = L;
  let y = L.legendBox.y;
  const text = (tx: number, ty: number, label: string, room: number, extra = '') => {
    const shown = fitText(label, room, textSize);
    const tip = shown === label ? '' : `<title>${xmlText(label)}</title>`;
    const baseline = extra.includes('dominant-baseline') ? '' : ' dominant-baseline="hanging"';
    return `<text x="${n2(tx)}" y="${n2(ty)}"${baseline}${extra}>${tip}${xmlText(shown)}</text>`;
  };
  const swatch = textSize * 0.8;
  /** A heading, then each entry as a swatch and its label. */
  const list = (heading: string, entries: LegendEntry[], more: number, headingClass: string, itemClass: string): void => {
    out.push(text(x, y, heading, width, ` font-weight="600" class="${headingClass}"`));
    y += textSize * 1.6;
    for (const entry of entries) {
      out.push(
        `<rect class="swatch" x="${n2(x)}" y="${n2(y + (textSize - swatch) / 2)}" width="${n2(swatch)}" height="${n2(swatch)}" fill="${xmlText(entry.color)}"/>`,
        text(x + swatch + 3 * pt, y, entry.label, width - swatch - 3 * pt, ` class="${itemClass}"`)
      );
      y += textSize * 1.35;
    }
    if (more) {
      out.push(text(x, y, `… and ${more} more`, width));
      y += textSize * 1.35;
    }
  };
  const out = [`<g class="legend" font-family="sans-serif" font-size="${n2(textSize)}" fill="#000000">`];
  if (legend && color?.mode === 'continuous') {
    out.push(text(x, y, legend.title, width, ' font-weight="600" class="legend-title"'));
    y += textSize * 1.6;
    const lut = color.lut.length ? color.lut : ['#440154', '#fde725'];
    const step = Math.max(1, Math.ceil(lut.length / 64));
    const stops = lut
      .map((c, i) => [c, i] as const)
      .filter(([, i]) => i % step === 0 || i === lut.length - 1)
      .map(([c, i]) => `<stop offset="${n2((i / Math.max(1, lut.length - 1)) * 100)}%" stop-color="${xmlText(c)}"/>`);
    const barWidth = 8 * pt;
    out.push(
      `<defs><linearGradient id="sds-colorbar" x1="0" y1="1" x2="0" y2="0">${stops.join('')}</linearGradient></defs>`,
      `<rect class="colorbar" x="${n2(x)}" y="${n2(y)}" width="${n2(barWidth)}" height="${n2(L.barHeight)}" fill="url(#sds-colorbar)"/>`
    );
    for (const [at, label] of barTicks(color, L.barHeight)) {
      const ty = y + at;
      out.push(
        `<line x1="${n2(x + barWidth)}" y1="${n2(ty)}" x2="${n2(x + barWidth + 2 * pt)}" y2="${n2(ty)}" stroke="#000000" stroke-width="${n2(pt / 2)}"/>`,
        text(x + barWidth + 3 * pt, ty, label, width - barWidth - 3 * pt, ' class="tick" dominant-baseline="middle"')
      );
    }
    y += L.barHeight + textSize * 1.6;
  } else if (legend) {
    list(legend.title, legend.entries, legend.more, 'legend-title', 'label');
  }
  if (channels.length) {
    y += legend ? textSize * 0.6 : 0;
    list(CHANNELS_HEADING, channelEntries(channels), Math.max(0, channels.length - MAX_LEGEND_ITEMS), 'channels-title', 'channel');
  }
  out.push('</g>');
  return out.join('');
}

/** The width and height an SVG document's root element says (user units), or 100 x 100. */
export function svgSize(svg: string): [number, number] {
  const root = /<svg\b[^>]*>/.exec(svg)?.[0] ?? '';
  const attr = (name: string) => Number(new RegExp(`\\s${name}="([\\d.]+)`).exec(root)?.[1]);
  const w = attr('width');
  const hgt = attr('height');
  return [w > 0 ? w : 100, hgt > 0 ? hgt : 100];
}

/**
 * The print page as SVG: `drawing` (an SVG document of its own) nested under `title`, the
 * legend of `color` and of the image `channels` shown beside it as vector shapes and text (none
 * for null and no channels: a chart carries its own), on white, `widthMm` wide (laid out in
 * points as the PNG is in pixels at 300 dpi).
 */
export function printSVG(
  drawing: string,
  title: string,
  color: CanvasColor | null,
  widthMm: number,
  channels: readonly ImageChannel[] = []
): string {
  const [drawingWidth, drawingHeight] = svgSize(drawing);
  const widthPt = (widthMm / 25.4) * 72;
  const L = printLayout(drawingWidth, drawingHeight, color, widthPt, 72, channels);
  const { x, y, width, height } = L.draw;
  const nested = drawing.replace(/^\s*(<\?xml[^>]*>\s*)?<svg\b([^>]*)>/, (_m, _decl, attrs: string) => {
    const rest = attrs.replace(/\s(x|y|width|height)="[^"]*"/g, '');
    const box = /\sviewBox=/.test(rest) ? '' : ` viewBox="0 0 ${n2(drawingWidth)} ${n2(drawingHeight)}"`;
    return `<svg x="${n2(x)}" y="${n2(y)}" width="${n2(width)}" height="${n2(height)}"${box}${rest}>`;
  });
  const heightMm = (L.height / 72) * 25.4;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" `,
    `width="${n2(widthMm)}mm" height="${n2(heightMm)}mm" viewBox="0 0 ${n2(L.width)} ${n2(L.height)}">`,
    `<title>${xmlText(title)}</title>`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text class="title" x="${n2(L.margin)}" y="${n2(L.margin)}" font-family="sans-serif" font-size="${n2(L.titleSize)}" font-weight="600" dominant-baseline="hanging">${xmlText(title)}</text>`,
    nested,
    svgLegend(color, L, channels),
    '</svg>'
  ].join('');
}

/** A canvas as PNG bytes with its dpi written in. */
export async function printBlob(page: HTMLCanvasElement, dpi = PRINT_DPI): Promise<Blob> {
  const blob = await new Promise<Blob>((resolve, reject) =>
    page.toBlob(b => (b ? resolve(b) : reject(new Error('the canvas gave no PNG'))), 'image/png')
  );
  const bytes = withDpi(new Uint8Array(await blob.arrayBuffer()), dpi);
  return new Blob([bytes as BlobPart], { type: 'image/png' });
}
