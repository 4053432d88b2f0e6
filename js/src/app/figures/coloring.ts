/**
 * What a figure's cells are coloured by, and its legend: the figure's own colouring until
 * `colorBy` asks for another obs column, a gene (or 2-3 genes as added channels), a highlight
 * or a change against another version; categories hidden from the legend; a gene's limits.
 * The drawing is told to redraw; exports are asked with `exported()`, so they show the same.
 */

import { h } from '../shared/dom';
import { splitReply } from '../shared/buffers';
import { TransportError, type Transport } from '../shared/transport';
import type { CanvasColor, CanvasPayload } from '../shared/types';
import { legend } from '../spatial/canvasplot';
import { sharedColorValues } from '../spatial/cellstore';
import type { CanvasData } from '../spatial/raster';
import { clippedByDefault, colorLimitsControl, DEFAULT_PERCENTILES, withLimits } from './colorlimits';
import { additiveColoring, channelLegend, geneValues } from './genechannels';

/** What `colorBy` colors the cells by (see `color_values`); `{}` is the figure's own coloring. */
export type ColorTarget = {
  column?: string;
  gene?: string;
  layer?: string;
  highlight?: string;
  against?: number | string;
  /** How `against` is named to a person (its title and number); never sent to the service. */
  againstLabel?: string;
  /** With several genes (commas): one colour channel each, added, instead of their mean. */
  channels?: boolean;
};

/** The view's colouring as the export request takes it (image channels as JSON, hidden categories as codes). */
export type ExportColoring = Pick<ColorTarget, 'column' | 'gene' | 'layer' | 'highlight' | 'against'> & { hidden?: string; channels?: string; limits?: string };

/** What the colouring reads of its figure, and how it has it redraw. */
export type ColoringHost = {
  readonly transport: Transport;
  readonly version: number | string;
  readonly figureId: string;
  readonly payload: CanvasPayload;
  readonly data: CanvasData;
  readonly legendSlot: HTMLElement;
  node(): HTMLElement;
  /** Whether the image's channels have their own controls (then the legend does not list them). */
  hasChannels(): boolean;
  /** Draw the cells again in the colouring now. */
  redraw(): void;
};

export class FigureColoring {
  readonly status = h('span', { class: 'sds-color-status', role: 'status' });
  private readonly hidden = new Set<number>();
  /** What the cells are colored by now (`{}`: the figure's own coloring), for the exports. */
  private target: ColorTarget = {};
  /** What the cells are colored by now (the figure's own coloring until colorBy). */
  color: CanvasColor;
  value: CanvasData['value'];
  private colorToken = 0;
  /** The percentiles a gene's colors are clipped to (null: exact limits). */
  private percentiles: [number, number] | null = null;
  /** The legend of genes shown as added colour channels (null: the coloring's own legend). */
  private channelLegend: HTMLElement | null = null;

  constructor(private readonly host: ColoringHost) {
    this.color = host.payload.color;
    this.value = host.data.value;
  }

  /**
   * Color the cells by another obs column or by a gene's expression (values from X, or
   * `layer`, asked of the service); with `highlight`, the cells whose `column` holds that
   * value against grey; with `against` (another version), by how `column` changed from it,
   * unchanged cells grey. `{}` goes back to the figure's own coloring. Resolves once drawn;
   * rejects with the service's one-line reason (an unknown column or gene).
   */
  async colorBy(target: ColorTarget): Promise<void> {
    if (target.channels && target.gene?.includes(',')) {
      return this.colorByChannels(target, target.gene.split(','));
    }
    const { column, gene } = target;
    const own = { color: this.host.payload.color, value: this.host.data.value };
    const shown = await this.latest(gene ?? column, () => (column || gene ? this.values(target) : Promise.resolve(own)));
    if (!shown) {
      return;
    }
    this.channelLegend = null;
    this.color = gene && shown.value ? clippedByDefault(shown.color, shown.value) : shown.color;
    this.percentiles = gene ? DEFAULT_PERCENTILES : null;
    this.value = shown.value;
    this.shown(target, this.color.mode === 'none' ? '' : this.color.column);
  }

  /** The colours `target` asks for (a column's, a gene's, a highlight or a change), asked once per stored column. */
  private async values(target: ColorTarget): Promise<{ color: CanvasColor; value: CanvasData['value'] }> {
    const { column, gene } = target;
    const reply = await sharedColorValues(
      this.host.transport,
      {
        version: this.host.version,
        figure: this.host.figureId,
        ...(gene ? { gene, ...(target.layer ? { layer: target.layer } : {}) } : { column: column! }),
        ...(target.highlight !== undefined ? { highlight: target.highlight } : {}),
        ...(target.against !== undefined ? { against: target.against } : {})
      },
      this.host.payload.cells_key,
      this.ownColumn(),
      this.host.payload.color_keys
    );
    const { values } = splitReply('color_values', reply.data, reply.buffers);
    if (!values) {
      throw new TransportError('protocol', 'the color_values reply colors nothing');
    }
    return { color: reply.data, value: values };
  }

  /**
   * Run `load` as the latest colouring asked for: its failure is said in the status line (while
   * still the latest) and rethrown; null when a later ask overtook it. Why: a slow gene must not
   * repaint over a column picked after it.
   */
  private async latest<T>(what: string | undefined, load: () => Promise<T>): Promise<T | null> {
    const token = ++this.colorToken;
    if (what) {
      this.status.textContent = `Loading ${what}…`;
    }
    let out: T;
    try {
      out = await load();
    } catch (err) {
      if (token === this.colorToken) {
        this.status.textContent = TransportError.from(err).message;
      }
      throw err;
    }
    if (token !== this.colorToken) {
      return null;
    }
    this.status.textContent = '';
    return out;
  }

  /**
   * A new colouring is in place: say so (dropdown, caption, legend) and redraw. `exported`: what
   * exports are asked for from now on (null: unchanged; genes as channels are the view's own).
   */
  private shown(target: ColorTarget, column: string, exported: ColorTarget | null = target): void {
    this.hidden.clear();
    if (exported) {
      this.target = exported;
    }
    this.host.node().dataset.colorBy = column;
    this.showColorChoice(target);
    this.noteCaption(target);
    this.renderLegend();
    this.host.redraw();
  }

  /** The column the figure itself is colored by (its settings apply to that column only), if any. */
  private ownColumn(): string | null {
    return this.host.payload.color.mode === 'none' ? null : this.host.payload.color.column;
  }

  /** Color by 2–3 genes, one channel each, added (see `genechannels.ts`). */
  private async colorByChannels(target: ColorTarget, genes: string[]): Promise<void> {
    const where = {
      version: this.host.version,
      figure: this.host.figureId,
      ...(target.layer ? { layer: target.layer } : {}),
      cellsKey: this.host.payload.cells_key,
      ownColumn: this.ownColumn()
    };
    const mix = await this.latest(genes.join(', '), async () => {
      const found = await geneValues(this.host.transport, where, genes);
      return additiveColoring(found.genes, found.values);
    });
    if (!mix) {
      return;
    }
    [this.color, this.value, this.percentiles] = [mix.color, mix.codes, null];
    this.channelLegend = channelLegend(mix.channels);
    this.shown(target, mix.color.column, null);
  }

  /**
   * Make the toolbar's color dropdown say what the view shows: the column chosen, or (for a
   * gene, a highlight or a change against another version, which are not obs columns) one
   * extra option naming it, so it never reads "(saved)" over another coloring.
   */
  private showColorChoice(target: ColorTarget): void {
    const select = this.host.node().querySelector<HTMLSelectElement>('.sds-color-by');
    if (!select) {
      return;
    }
    select.querySelector('.sds-color-shown')?.remove();
    const label = shownLabel(target);
    if (label === null) {
      select.value = target.column ?? '';
      return;
    }
    const option = h('option', { class: 'sds-color-shown', value: SHOWN }, label) as HTMLOptionElement;
    select.append(option);
    select.value = SHOWN;
  }

  /**
   * The saved caption describes the saved coloring: while another one is shown, say so under it,
   * so the caption never contradicts the drawing (text only: names come from the dataset).
   */
  private noteCaption(target: ColorTarget): void {
    const caption = this.host.node().closest('figure')?.querySelector('.sds-caption');
    if (!caption) {
      return;
    }
    caption.querySelector('.sds-caption-now')?.remove();
    const saved = this.host.payload.color.mode === 'none' ? undefined : this.host.payload.color.column;
    const shown = shownLabel(target) ?? (target.column !== saved ? target.column : undefined);
    if (shown) {
      caption.append(h('span', { class: 'sds-caption-now' }, ` Shown now: colored by ${shown} (the caption is the saved view's).`));
    }
  }

  /**
   * How the view colors its cells and image now, as the `export` request takes it: the
   * recoloring (`colorBy`'s target), the categories its legend hides and the image channels
   * as its controls set them, so an export shows the same.
   */
  exported(): ExportColoring {
    const out: ExportColoring = {};
    // only what the export request reads: a label for people and the gene-channel switch are the view's own
    for (const key of ['column', 'gene', 'layer', 'highlight', 'against'] as const) {
      const value = this.target[key];
      if (value !== undefined && value !== '') {
        (out as Record<string, unknown>)[key] = value;
      }
    }
    if (this.hidden.size) {
      out.hidden = [...this.hidden].sort((a, b) => a - b).join(',');
    }
    // numbers are drawn between the limits the view uses (percentiles or typed), not the data's own
    if (this.color.mode === 'continuous' && this.color.min < this.color.max) {
      out.limits = `${this.color.min},${this.color.max}`;
    }
    return out;
  }

  /** Each category's colour now (a categorical colouring), else null. */
  categoryColors(): Map<string, string> | null {
    const c = this.color;
    return c.mode === 'categorical' ? new Map(c.categories.map((name, i) => [name, c.colors[i]])) : null;
  }

  /**
   * Draw the named categories in the given colours, keeping the others' own unless a given
   * category took that colour (then the next of its palette nobody was given): the other version
   * of a side-by-side takes A's colours through the matching, so a renamed group keeps its colour.
   */
  recolorCategories(given: Map<string, string>): void {
    const c = this.color;
    if (c.mode !== 'categorical') {
      return;
    }
    const taken = new Set(given.values());
    const own = (i: number) => !given.has(c.categories[i]) && !taken.has(c.colors[i]);
    const kept = new Set(c.colors.filter((_, i) => own(i)));
    // the colours of this view's own palette nobody was given or keeps, in palette order
    const spare = c.colors.filter(col => !taken.has(col) && !kept.has(col));
    const colors = c.categories.map((name, i) => given.get(name) ?? (taken.has(c.colors[i]) ? (spare.shift() ?? c.colors[i]) : c.colors[i]));
    this.color = { ...c, colors };
    this.renderLegend();
    this.host.redraw();
  }

  /** The payload's coloring with hidden categories made transparent. */
  spec(): CanvasColor {
    const c = this.color;
    if (c.mode !== 'categorical' || !this.hidden.size) {
      return c;
    }
    return { ...c, colors: c.colors.map((col, i) => (this.hidden.has(i) ? '#00000000' : col)) };
  }

  renderLegend(): void {
    if (this.channelLegend) {
      this.host.legendSlot.replaceChildren(this.channelLegend);
      return;
    }
    const toggle = this.color.mode === 'categorical' ? (code: number) => this.toggleCategory(code) : undefined;
    // with channel controls, the channels are listed there instead
    const image = this.host.payload.image && this.host.hasChannels() ? { ...this.host.payload.image, channels: [] } : this.host.payload.image;
    this.host.legendSlot.replaceChildren(legend({ ...this.host.payload, color: this.color, image }, this.hidden, toggle));
    const c = this.color;
    if (c.mode === 'continuous' && this.value) {
      this.host.legendSlot.append(
        colorLimitsControl(this.value, c, this.percentiles, (limits, percentiles) => {
          [this.color, this.percentiles] = [withLimits(c, limits), percentiles];
          this.renderLegend();
          this.host.redraw();
        })
      );
    }
  }

  private toggleCategory(code: number): void {
    if (this.hidden.has(code)) {
      this.hidden.delete(code);
    } else {
      this.hidden.add(code);
    }
    this.renderLegend();
    this.host.redraw();
    (this.host.legendSlot.querySelectorAll('.sds-legend-toggle')[code] as HTMLElement | undefined)?.focus();
  }
}

/** The value of the color dropdown's option for a coloring that is not an obs column (no column name holds a NUL). */
export const SHOWN = '\u0000shown';

/** What a gene, highlight or comparison coloring is called in the color dropdown; null for a plain column or the saved one. */
export function shownLabel(target: ColorTarget): string | null {
  if (target.gene) {
    const genes = target.gene.split(',');
    const what = genes.length < 2 ? `gene ${target.gene}` : target.channels ? `genes ${genes.join(' + ')} (channels)` : `mean of ${genes.join(', ')}`;
    return `${what}${target.layer ? ` (${target.layer})` : ''}`;
  }
  if (target.column && target.highlight !== undefined) {
    return `${target.column}: ${target.highlight} highlighted`;
  }
  if (target.column && target.against !== undefined) {
    const other = target.againstLabel ?? (typeof target.against === 'number' ? `v${target.against}` : 'another version');
    return `${target.column}: changed since ${other}`;
  }
  return null;
}
