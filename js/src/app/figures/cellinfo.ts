/**
 * What a figure tells of one cell: a tooltip while hovered (its number and colour-by value at
 * once, its ID when its row arrives) and a clicked cell's whole obs row, pinned. Text only:
 * names and values come from the dataset.
 */

import { h } from '../shared/dom';
import { rangeFormat, rowValue } from '../shared/format';
import { TransportError, type Transport } from '../shared/transport';
import type { CanvasColor, CellRow } from '../shared/types';
import type { CanvasData } from '../spatial/raster';
import type { SpatialStage } from '../spatial/spatial';

export type CellInfoHost = {
  readonly transport: Transport;
  readonly version: number | string;
  readonly figureId: string;
  stage(): SpatialStage | null;
  screenOf(i: number): [number, number] | null;
  /** The colouring shown now. */
  coloring(): { color: CanvasColor; value: CanvasData['value'] };
};

export class CellInfo {
  readonly tooltip = h('div', { class: 'sds-tooltip', role: 'status', 'aria-live': 'polite', hidden: '' });
  readonly pin = h('div', { class: 'sds-cell-pin', hidden: '' });
  private readonly rows = new Map<number, Promise<CellRow>>();
  private hoverIndex = -1;

  constructor(private readonly host: CellInfoHost) {}

  /** The color-by value of cell `i`, as text. */
  private valueOf(i: number): string | null {
    const { color: c, value: v } = this.host.coloring();
    if (!v || c.mode === 'none') {
      return null;
    }
    if (c.mode === 'categorical') {
      return `${c.column}: ${c.categories[v[i]] ?? 'NA'}`;
    }
    const x = v[i];
    return `${c.column}: ${Number.isFinite(x) ? rangeFormat(c.column, c.min, c.max)(x) : 'NA'}`;
  }

  /** Cell `index`'s obs row, asked once. */
  row(index: number): Promise<CellRow> {
    let p = this.rows.get(index);
    if (!p) {
      p = this.host.transport
        .request('cell', { version: this.host.version, figure: this.host.figureId, index })
        .then(r => r.data);
      this.rows.set(index, p);
      p.catch(() => this.rows.delete(index));
    }
    return p;
  }

  /** The tooltip of hovered cell `index` (-1: none): its number and value at once, its ID once its row is here. */
  hover(index: number): void {
    this.hoverIndex = index;
    if (index < 0) {
      this.tooltip.hidden = true;
      return;
    }
    this.tooltip.hidden = false;
    this.placeTooltip(index);
    const value = this.valueOf(index);
    this.tooltip.replaceChildren(h('div', { class: 'sds-tooltip-id' }, `cell #${index}`));
    if (value) {
      this.tooltip.append(h('div', { class: 'sds-tooltip-value' }, value));
    }
    this.row(index).then(
      row => {
        if (this.hoverIndex === index) {
          this.tooltip.firstElementChild!.textContent = `ID ${row.name}`;
          this.tooltip.dataset.cell = row.name;
        }
      },
      () => undefined
    );
  }

  private placeTooltip(index: number): void {
    const stage = this.host.stage();
    if (!stage?.viewState) {
      return;
    }
    const w = stage.node.clientWidth;
    const hgt = stage.node.clientHeight;
    const [sx, sy] = this.host.screenOf(index) ?? [w / 2, hgt / 2];
    this.tooltip.style.left = `${Math.round(Math.min(Math.max(sx + 12, 0), Math.max(0, w - 160)))}px`;
    this.tooltip.style.top = `${Math.round(Math.min(Math.max(sy + 12, 0), Math.max(0, hgt - 40)))}px`;
  }

  /** The clicked cell's whole obs row, pinned under the drawing until closed. */
  async showPin(index: number): Promise<void> {
    this.pin.hidden = false;
    this.pin.replaceChildren(h('div', { class: 'sds-muted' }, `cell #${index}…`));
    try {
      const row = await this.row(index);
      const close = h('button', { type: 'button', class: 'sds-button', 'aria-label': 'Close the cell row' }, '×');
      close.addEventListener('click', () => {
        this.pin.hidden = true;
        this.pin.replaceChildren();
      });
      this.pin.replaceChildren(
        h('div', { class: 'sds-cell-pin-head' }, h('strong', {}, `Cell ${row.name}`), h('span', { class: 'sds-muted' }, ` (row ${row.index})`), close),
        h(
          'table',
          { class: 'sds-table sds-cell-row' },
          h(
            'tbody',
            {},
            row.columns.map((col, i) =>
              h('tr', {}, h('th', { scope: 'row' }, col), h('td', {}, rowValue(row.values[i])))
            )
          )
        )
      );
    } catch (err) {
      const e = TransportError.from(err);
      this.pin.replaceChildren(h('div', { class: 'sds-error', role: 'alert' }, e.message));
    }
  }
}
