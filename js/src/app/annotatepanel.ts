/**
 * The spatial view's "Annotate" panel (issue 27): draw regions over the tissue, see their
 * cells, save them as an obs column of a new version. The rules live in `annotate.ts`; this
 * is the DOM: an SVG overlay over the stage (outlines, the outline in progress, the selected
 * cells) and a panel of tools, regions, selection and the save form.
 *
 * Keyboard: with the overlay focused, arrow keys move a crosshair (Shift: further), Space
 * adds a point there, Enter closes the outline, Backspace or Ctrl+Z undoes, Escape drops
 * the outline in progress. The mouse: click adds a point, double-click closes; a rectangle
 * is two corners; a lasso is a drag.
 */

import { Drawing, cellList, regionCodes, regionCounts, saveAnnotation, selectedCells, type Point, type Tool } from './annotate';
import { h } from './dom';
import { TransportError, type Transport } from './transport';
import type { AnnotateData } from './types';

const SVG = 'http://www.w3.org/2000/svg';
/** Selected cells marked on the overlay at most (beyond, the count and list still hold them all). */
const MAX_MARKED = 5000;
/** IDs listed under the selection. */
const LISTED = 5;
/** A lasso takes a point each time the pointer moved this far (CSS px). */
const LASSO_STEP = 4;

export type AnnotateHost = {
  transport: Transport;
  version: number | string;
  figure: string;
  x: Float32Array;
  y: Float32Array;
  /** The stage's element: the overlay is laid over it. */
  stageNode: HTMLElement;
  /** The camera: data units per CSS px and the data point at the view's centre; null before the first frame. */
  camera(): { target: [number, number]; zoom: number } | null;
  /** The obs columns of the figure's table (offered as existing columns). */
  columns: string[];
  /** A cell's ID (its obs name). */
  cellName(index: number): Promise<string>;
  /** Show the saved version (the host opens it). */
  onSaved?: (saved: AnnotateData) => Promise<void> | void;
  /** Told the selected cells (table positions) each time the regions change (the widget binds them). */
  onSelection?: (cells: number[]) => void;
};

export class AnnotatePanel {
  readonly node: HTMLElement;
  readonly drawing = new Drawing();
  /** Per cell, the region it falls in (-1 none), for the regions drawn so far. */
  codes: Int32Array;
  private readonly overlay: SVGSVGElement;
  private readonly regionList: HTMLElement;
  private readonly selection: HTMLElement;
  private readonly status: HTMLElement;
  private readonly toolButtons = new Map<Tool, HTMLButtonElement>();
  private readonly column: HTMLInputElement;
  private readonly title: HTMLInputElement;
  private cursor: [number, number] | null = null;
  private dragging = false;
  private lastLasso: [number, number] | null = null;
  private downAt: [number, number] | null = null;
  private active = false;
  private namesToken = 0;

  constructor(private readonly host: AnnotateHost) {
    this.codes = new Int32Array(host.x.length).fill(-1);
    this.overlay = document.createElementNS(SVG, 'svg');
    this.overlay.setAttribute('class', 'sds-annotate-overlay');
    this.overlay.setAttribute('tabindex', '0');
    this.overlay.setAttribute('role', 'application');
    this.overlay.setAttribute(
      'aria-label',
      'Drawing regions. Arrow keys move the crosshair, Space adds a point, Enter closes the outline, Backspace undoes, Escape drops it.'
    );
    this.overlay.style.display = 'none';
    host.stageNode.append(this.overlay);
    this.listen();

    const tools = h('span', { class: 'sds-annotate-tools', role: 'group', 'aria-label': 'Selection tool' });
    for (const [tool, label] of [
      ['polygon', 'Polygon'],
      ['rectangle', 'Rectangle'],
      ['lasso', 'Lasso']
    ] as [Tool, string][]) {
      const b = h('button', { type: 'button', class: `sds-button sds-tool-${tool}`, 'aria-pressed': 'false' }, label);
      b.addEventListener('click', () => this.use(tool));
      this.toolButtons.set(tool, b);
      tools.append(b);
    }
    const closeBtn = this.button('Close outline', 'Close the outline in progress as a region (Enter)', () => this.close(), 'sds-annotate-close');
    const undoBtn = this.button('Undo', 'Undo the last point, else the last region (Backspace, Ctrl+Z)', () => this.undo(), 'sds-annotate-undo');
    this.regionList = h('ol', { class: 'sds-annotate-regions', 'aria-label': 'Regions' });
    this.selection = h('div', { class: 'sds-annotate-selection', role: 'status', 'aria-live': 'polite' });
    this.status = h('span', { class: 'sds-annotate-status', role: 'status' });
    const listId = `sds-annotate-columns-${host.figure}`;
    this.column = h('input', {
      type: 'text',
      class: 'sds-annotate-column',
      'aria-label': 'Obs column (new, or an existing categorical one)',
      placeholder: 'column, e.g. my_regions',
      list: listId
    }) as HTMLInputElement;
    this.title = h('input', {
      type: 'text',
      class: 'sds-annotate-title',
      'aria-label': 'Title of the new version',
      placeholder: 'title of the new version'
    }) as HTMLInputElement;
    const save = this.button('Save as annotation', 'Save the regions as an obs column of a new version', () => void this.save(), 'sds-annotate-save');
    this.node = h(
      'div',
      { class: 'sds-annotate', role: 'region', 'aria-label': 'Annotate', hidden: '' },
      h('div', { class: 'sds-annotate-bar', role: 'toolbar', 'aria-label': 'Drawing' }, tools, closeBtn, undoBtn),
      this.regionList,
      this.selection,
      h(
        'div',
        { class: 'sds-annotate-save-row' },
        this.column,
        h('datalist', { id: listId }, host.columns.map(c => h('option', { value: c }))),
        this.title,
        save,
        this.status
      )
    );
    this.use('polygon');
    this.update();
  }

  /** Show or hide the panel and its overlay. */
  toggle(on = !this.active): void {
    this.active = on;
    this.node.hidden = !on;
    this.overlay.style.display = on ? '' : 'none';
    if (on) {
      this.redraw();
      this.overlay.focus();
    }
  }

  use(tool: Tool): void {
    this.drawing.tool = tool;
    this.drawing.draft = [];
    for (const [name, b] of this.toolButtons) {
      b.setAttribute('aria-pressed', String(name === tool));
    }
    this.redraw();
  }

  /** A point in data coordinates (tests and the keyboard go through here as the mouse does). */
  add(point: Point): void {
    const before = this.drawing.regions.length;
    this.drawing.add(point);
    if (this.drawing.regions.length !== before) {
      this.update();
    } else {
      this.redraw();
    }
  }

  close(): void {
    if (this.drawing.close()) {
      this.update();
    } else if (this.drawing.tool !== 'rectangle') {
      this.status.textContent = 'An outline needs at least 3 points.';
    }
  }

  undo(): void {
    const regions = this.drawing.regions.length;
    if (this.drawing.undo() && this.drawing.regions.length !== regions) {
      this.update();
    } else {
      this.redraw();
    }
  }

  /** Recount after the regions changed: codes, counts, the list, the selection. */
  update(): void {
    this.codes = regionCodes(this.host.x, this.host.y, this.drawing.regions);
    const counts = regionCounts(this.codes, this.drawing.regions.length);
    this.regionList.replaceChildren(
      ...this.drawing.regions.map((region, i) => {
        const input = h('input', { type: 'text', value: region.label, 'aria-label': `Label of region ${i + 1}` }) as HTMLInputElement;
        input.addEventListener('change', () => {
          if (!this.drawing.rename(i, input.value)) {
            input.value = region.label;
            this.status.textContent = 'Each region needs its own, non-empty label.';
          }
          this.redraw();
        });
        return h('li', { class: 'sds-annotate-region' }, input, h('span', { class: 'sds-annotate-count' }, ` ${counts[i].toLocaleString()} cells`));
      })
    );
    void this.showSelection();
    this.redraw();
  }

  private async showSelection(): Promise<void> {
    const cells = selectedCells(this.codes);
    this.host.onSelection?.(cells);
    const token = ++this.namesToken;
    const count = h('span', { class: 'sds-annotate-selected' }, `${cells.length.toLocaleString()} cells selected`);
    if (!cells.length) {
      this.selection.replaceChildren(count);
      return;
    }
    const copy = this.button('Copy IDs', 'Copy the selected cells\u2019 IDs, one a line', () => void this.copy(cells), 'sds-annotate-copy');
    const listed = h('span', { class: 'sds-annotate-ids' });
    this.selection.replaceChildren(count, ' ', listed, ' ', copy);
    const first = await Promise.all(cells.slice(0, LISTED).map(i => this.host.cellName(i).catch(() => `#${i}`)));
    if (token === this.namesToken) {
      listed.textContent = `${first.join(', ')}${cells.length > LISTED ? ', …' : ''}`;
    }
  }

  private async copy(cells: number[]): Promise<void> {
    try {
      const names = await Promise.all(cells.map(i => this.host.cellName(i)));
      await navigator.clipboard.writeText(cellList(names));
      this.status.textContent = `Copied ${names.length.toLocaleString()} IDs.`;
    } catch (err) {
      this.status.textContent = `Could not copy: ${TransportError.from(err).message}`;
    }
  }

  /** Save the regions as an obs column of a new version; the host then opens it. */
  async save(): Promise<AnnotateData | null> {
    const column = this.column.value.trim();
    const title = this.title.value.trim() || `Annotated ${column}`;
    if (!column) {
      this.status.textContent = 'Name the obs column to save the regions into.';
      return null;
    }
    if (!this.drawing.regions.length) {
      this.status.textContent = 'Draw at least one region first.';
      return null;
    }
    this.status.textContent = 'Saving…';
    try {
      const saved = await saveAnnotation(this.host.transport, {
        column,
        title,
        figure: this.host.figure,
        version: this.host.version,
        regions: this.drawing.regions
      });
      this.status.textContent = `Saved as ${title}.`;
      await this.host.onSaved?.(saved);
      return saved;
    } catch (err) {
      this.status.textContent = TransportError.from(err).message;
      return null;
    }
  }

  /** Redraw the overlay at the current camera (outlines, draft, crosshair, selected cells). */
  redraw(): void {
    const camera = this.host.camera();
    if (!this.active || !camera) {
      return;
    }
    const w = this.host.stageNode.clientWidth;
    const hgt = this.host.stageNode.clientHeight;
    const scale = Math.pow(2, camera.zoom);
    const sx = (x: number) => (x - camera.target[0]) * scale + w / 2;
    const sy = (y: number) => (y - camera.target[1]) * scale + hgt / 2;
    const path = (points: Point[], closed: boolean) =>
      points.map((p, i) => `${i ? 'L' : 'M'}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join('') + (closed ? 'Z' : '');
    const parts: SVGElement[] = [];
    const counts = regionCounts(this.codes, this.drawing.regions.length);
    this.drawing.regions.forEach((region, i) => {
      parts.push(svg('path', { d: path(region.polygon, true), class: 'sds-annotate-outline' }));
      const [x0, y0] = region.polygon[0];
      const label = svg('text', { x: sx(x0).toFixed(1), y: (sy(y0) - 4).toFixed(1), class: 'sds-annotate-label' });
      label.textContent = `${region.label} (${counts[i].toLocaleString()})`; // text, never markup
      parts.push(label);
    });
    const marks: string[] = [];
    let marked = 0;
    for (let i = 0; i < this.codes.length && marked < MAX_MARKED; i++) {
      if (this.codes[i] >= 0) {
        marks.push(`M${sx(this.host.x[i]).toFixed(1)},${sy(this.host.y[i]).toFixed(1)}h0`);
        marked += 1;
      }
    }
    if (marks.length) {
      parts.push(svg('path', { d: marks.join(''), class: 'sds-annotate-selected-cells' }));
    }
    if (this.drawing.draft.length) {
      parts.push(svg('path', { d: path(this.drawing.draft, false), class: 'sds-annotate-draft' }));
    }
    const c = this.cursor ?? [w / 2, hgt / 2];
    parts.push(svg('path', { d: `M${c[0] - 6},${c[1]}h12M${c[0]},${c[1] - 6}v12`, class: 'sds-annotate-cursor' }));
    this.overlay.replaceChildren(...parts);
  }

  dispose(): void {
    this.overlay.remove();
  }

  private button(label: string, title: string, run: () => void, cls: string): HTMLButtonElement {
    const b = h('button', { type: 'button', class: `sds-button ${cls}`, title, 'aria-label': title }, label) as HTMLButtonElement;
    b.addEventListener('click', run);
    return b;
  }

  /** The data point under (sx, sy) CSS px of the overlay. */
  private dataAt(px: number, py: number): Point | null {
    const camera = this.host.camera();
    if (!camera) {
      return null;
    }
    const scale = Math.pow(2, camera.zoom);
    const w = this.host.stageNode.clientWidth;
    const hgt = this.host.stageNode.clientHeight;
    return [camera.target[0] + (px - w / 2) / scale, camera.target[1] + (py - hgt / 2) / scale];
  }

  private local(ev: MouseEvent): [number, number] {
    const r = this.overlay.getBoundingClientRect();
    return [ev.clientX - r.left, ev.clientY - r.top];
  }

  private listen(): void {
    const o = this.overlay;
    o.addEventListener('pointerdown', ev => {
      const at = this.local(ev);
      const tool = this.drawing.tool;
      if (tool === 'lasso') {
        this.dragging = true;
        this.drawing.draft = [];
        this.lastLasso = at;
        const p = this.dataAt(...at);
        if (p) this.add(p);
      } else if (tool === 'rectangle') {
        this.dragging = true;
        this.downAt = at;
        const p = this.dataAt(...at);
        if (p) this.add(p);
      }
    });
    o.addEventListener('pointermove', ev => {
      if (!this.dragging || this.drawing.tool !== 'lasso' || !this.lastLasso) return;
      const at = this.local(ev);
      if (Math.hypot(at[0] - this.lastLasso[0], at[1] - this.lastLasso[1]) >= LASSO_STEP) {
        this.lastLasso = at;
        const p = this.dataAt(...at);
        if (p) this.add(p);
      }
    });
    o.addEventListener('pointerup', ev => {
      if (!this.dragging) return;
      this.dragging = false;
      const at = this.local(ev);
      if (this.drawing.tool === 'rectangle') {
        // a drag is a rectangle; a click leaves its corner for the next click to complete
        const moved = this.downAt && Math.hypot(at[0] - this.downAt[0], at[1] - this.downAt[1]) >= 3;
        const p = this.dataAt(...at);
        if (p && moved && this.drawing.draft.length === 1) this.add(p);
      } else if (this.drawing.tool === 'lasso') {
        this.close();
      }
    });
    o.addEventListener('click', ev => {
      if (this.drawing.tool === 'polygon') {
        const p = this.dataAt(...this.local(ev));
        if (p) this.add(p);
      }
    });
    o.addEventListener('dblclick', ev => {
      ev.preventDefault();
      if (this.drawing.tool === 'polygon') {
        this.drawing.undo(); // the double-click's second click added a point on the first
        this.close();
      }
    });
    o.addEventListener('keydown', ev => this.key(ev));
  }

  private key(ev: KeyboardEvent): void {
    const w = this.host.stageNode.clientWidth;
    const hgt = this.host.stageNode.clientHeight;
    const step = ev.shiftKey ? 50 : 10;
    const c = this.cursor ?? [w / 2, hgt / 2];
    const moves: Record<string, [number, number]> = {
      ArrowLeft: [-step, 0],
      ArrowRight: [step, 0],
      ArrowUp: [0, -step],
      ArrowDown: [0, step]
    };
    if (ev.key in moves) {
      const [dx, dy] = moves[ev.key];
      this.cursor = [Math.min(w, Math.max(0, c[0] + dx)), Math.min(hgt, Math.max(0, c[1] + dy))];
      this.redraw();
    } else if (ev.key === ' ') {
      const p = this.dataAt(c[0], c[1]);
      if (p) this.add(p);
    } else if (ev.key === 'Enter') {
      this.close();
    } else if (ev.key === 'Backspace' || (ev.key === 'z' && (ev.ctrlKey || ev.metaKey))) {
      this.undo();
    } else if (ev.key === 'Escape') {
      this.drawing.draft = [];
      this.redraw();
    } else {
      return;
    }
    ev.preventDefault();
    ev.stopPropagation();
  }
}

function svg(tag: string, attrs: Record<string, string>): SVGElement {
  const el = document.createElementNS(SVG, tag) as SVGElement;
  for (const [k, v] of Object.entries(attrs)) {
    el.setAttribute(k, v);
  }
  return el;
}
