/**
 * Up to three genes at once, each in its own colour channel (red, green, blue) and
 * added: a cell expressing the first two reads yellow, all three white. Where the
 * genes mark different cell types this shows them apart on one tissue, which a mean
 * score cannot. Each gene is clipped to its own 1st–99th percentiles (as one gene
 * alone is) and its brightness quantised to 16 steps, so the mix is an ordinary
 * categorical coloring (4,096 codes) that every drawing of the cells already knows;
 * the legend names each gene's channel and limits instead of the codes.
 */

import { DEFAULT_PERCENTILES, percentileLimits, type Limits } from './colorlimits';
import { h } from '../shared/dom';
import { rangeFormat } from '../shared/format';
import { splitReply } from '../shared/buffers';
import { sharedColorValues } from '../spatial/cellstore';
import { TransportError, type Transport } from '../shared/transport';
import type { CanvasColor } from '../shared/types';

/** The channels' colours, in the order the genes were picked. */
export const CHANNEL_COLORS = ['#ff0000', '#00ff00', '#0000ff'] as const;
const CHANNEL_NAMES = ['red', 'green', 'blue'];
/** Brightness steps per channel. */
export const LEVELS = 16;
/**
 * Cells that express none of the genes (all channels at 0). The channels add up towards white
 * (all three), so "none" sits at the dark end: a mid-dark grey, far from white, still seen on
 * a dark page and without the hue of any channel.
 */
export const NONE_COLOR = '#505050';

export type Channel = { gene: string; limits: Limits };
export type Additive = { color: Extract<CanvasColor, { mode: 'categorical' }>; codes: Uint16Array; channels: Channel[] };

function hex2(n: number): string {
  return n.toString(16).padStart(2, '0');
}

/** A channel's step (0..LEVELS-1) for each cell: its value clipped to `limits`, scaled. */
function steps(values: ArrayLike<number>, limits: Limits): Uint8Array {
  const out = new Uint8Array(values.length);
  const span = limits.max - limits.min;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    const t = Number.isFinite(v) && span > 0 ? (v - limits.min) / span : Number.isFinite(v) && v > limits.min ? 1 : 0;
    out[i] = Math.round(Math.min(1, Math.max(0, t)) * (LEVELS - 1));
  }
  return out;
}

/**
 * The additive coloring of 1–3 genes' values (same cell order). Code = (r·16 + g)·16 + b;
 * the palette holds every mix, so a cell's colour is the sum of its channels.
 */
export function additiveColoring(genes: string[], values: ArrayLike<number>[], limits?: Limits[]): Additive {
  if (!genes.length || genes.length > CHANNEL_COLORS.length || genes.length !== values.length) {
    throw new Error(`additive channels take 1 to ${CHANNEL_COLORS.length} genes, each with its values`);
  }
  const channels = genes.map((gene, k) => ({
    gene,
    limits: limits?.[k] ?? percentileLimits(values[k], ...DEFAULT_PERCENTILES) ?? { min: 0, max: 1 }
  }));
  const perChannel = channels.map((c, k) => steps(values[k], c.limits));
  const n = values[0].length;
  const codes = new Uint16Array(n);
  for (let i = 0; i < n; i++) {
    codes[i] = ((perChannel[0]?.[i] ?? 0) * LEVELS + (perChannel[1]?.[i] ?? 0)) * LEVELS + (perChannel[2]?.[i] ?? 0);
  }
  const colors: string[] = [];
  const categories: string[] = [];
  const scale = 255 / (LEVELS - 1);
  for (let code = 0; code < LEVELS ** 3; code++) {
    const rgb = [Math.floor(code / LEVELS / LEVELS), Math.floor(code / LEVELS) % LEVELS, code % LEVELS];
    colors.push(code === 0 ? NONE_COLOR : `#${rgb.map(s => hex2(Math.round(s * scale))).join('')}`);
    categories.push(channels.map((c, k) => `${c.gene} ${Math.round((rgb[k] / (LEVELS - 1)) * 100)}%`).join(' · '));
  }
  return { color: { mode: 'categorical', column: genes.join(' + '), categories, colors }, codes, channels };
}

/** Each picked gene's values, asked of the service one by one (each found in any case, as the gene box offers it). */
export async function geneValues(
  transport: Transport,
  where: { version: number | string; figure: string; layer?: string; cellsKey?: string; ownColumn?: string | null },
  genes: string[]
): Promise<{ genes: string[]; values: Float32Array[] }> {
  const replies = await Promise.all(
    genes.map(gene =>
      sharedColorValues(
        transport,
        { version: where.version, figure: where.figure, gene, ...(where.layer ? { layer: where.layer } : {}) },
        where.cellsKey,
        where.ownColumn ?? null
      )
    )
  );
  const values = replies.map(r => {
    const { values } = splitReply('color_values', r.data, r.buffers);
    if (!(values instanceof Float32Array)) {
      throw new TransportError('protocol', 'a gene\'s color_values reply has no float32 values');
    }
    return values;
  });
  return { genes: replies.map(r => (r.data.mode === 'none' ? '' : r.data.column)), values };
}

/** The legend of an additive coloring: each gene's channel colour and the values its brightness spans. */
export function channelLegend(channels: Channel[]): HTMLElement {
  return h(
    'div',
    { class: 'sds-legend sds-gene-channels' },
    h('div', { class: 'sds-legend-title' }, 'Genes (colours add)'),
    h(
      'ul',
      { class: 'sds-legend-cats' },
      channels.map((c, k) => {
        const format = rangeFormat(c.gene, c.limits.min, c.limits.max);
        return h(
          'li',
          { 'data-channel': CHANNEL_NAMES[k] },
          h('span', { class: 'sds-swatch', style: `background:${CHANNEL_COLORS[k]}` }),
          ` ${c.gene} `,
          h('span', { class: 'sds-muted' }, `(${CHANNEL_NAMES[k]}, ${format(c.limits.min)} – ${format(c.limits.max)}, clipped to p${DEFAULT_PERCENTILES[0]}–p${DEFAULT_PERCENTILES[1]})`)
        );
      })
    ),
    h('div', { class: 'sds-muted' }, h('span', { class: 'sds-swatch', style: `background:${NONE_COLOR}` }), ' none of them')
  );
}
