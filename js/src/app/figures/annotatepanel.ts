/**
 * The spatial view's "Annotate" panel (issue 27): draw regions over the tissue, see their
 * cells, save them as an obs column of a new version. The rules live in `annotate.ts`; this
 * is the DOM: an SVG overlay over the stage (outlines, the outline in progress, the selected
 * cells) and a panel of tools, regions, selection and the save form.
 *
 * Keyboard: with the overlay focused, arrow keys move a crosshair (Shift: further), Space
 * adds a point there, Enter closes the outline, Backspace or Ctrl+Z undoes, Escape drops
 * the outline in progress, and with none stops drawing (the regions stay). The mouse: click adds a point, double-click closes; a rectangle
 * is two corners; a lasso is a drag.
 */

import { Drawing, cellList, regionCodes, regionCounts, saveAnnotation, selectedCells, type Point, type Spaces, type Tool } from './annotate';
import { MIN_HOLE, VEIL_ALPHA, selectionMask, veilPixels } from './selectionveil';
import { h } from '../shared/dom';
import { TransportError, type Transport } from '../shared/transport';
import type { AnnotateData } from '../shared/types';

const SVG = 'http://www.w3.org/2000/svg';
/** IDs listed under the selection. */
const LISTED = 5;
/** A lasso takes a point each time the pointer moved this far (CSS px). */
const LASSO_STEP = 4;

/** Where data points land on a drawing: CSS px from its element's top left, and back. */
export type Projection = { toScreen(x: number, y: number): [number, number]; toData(sx: number, sy: number): Point };

/**
 * A drawing regions can be drawn on besides the tissue (an embedding beside it): its element,
 * where it puts each cell (table order) and its projection (null before its first frame);
 * `radius`, how far a cell reaches on it now (CSS px), the size of a selected cell's hole in the veil.
 */
export type Surface = {
  node: HTMLElement;
  x: ArrayLike<number>;
  y: ArrayLike<number>;
  projection(): Projection | null;
  radius?(): number;
};

/** The tissue's key among the surfaces (an obsm key is never empty). */
const TISSUE = '';

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
  /** How far a cell reaches on the stage now (CSS px). */
  cellRadius?(): number;
  /** The obs columns of the figure's table (offered as existing columns). */
  columns: string[];
  /** A cell's ID (its obs name). */
  cellName(index: number): Promise<string>;
  /** Show the saved version (the host opens it). */
  onSaved?: (saved: AnnotateData) => Promise<void> | void;
  /** Told the selected cells (table positions) each time the regions change (the widget binds them). */
  onSelection?: (cells: number[]) => void;
  /** Told when Escape stopped drawing (the host's Annotate button takes the focus back). */
  onHide?: () => void;
};

export class AnnotatePanel {
  readonly node: HTMLElement;
  readonly drawing = new Drawing();
  /** Per cell, the region it falls in (-1 none), for the regions drawn so far. */
  codes: Int32Array;
  /** The drawings regions are drawn on, by space (TISSUE, or an embedding's key), each with its overlay. */
  private readonly surfaces = new Map<string, { surface: Surface; overlay: SVGSVGElement; veil: HTMLCanvasElement }>();
  private readonly regionList: HTMLElement;
  private readonly selection: HTMLElement;
  private readonly status: HTMLElement;
  private readonly toolButtons = new Map<Tool, HTMLButtonElement>();
  private readonly column: HTMLInputElement;
  private readonly title: HTMLInputElement;
  /** The keyboard's crosshair on each surface (CSS px), once moved. */
  private readonly cursors = new Map<string, [number, number]>();
  private dragging = false;
  private lastLasso: [number, number] | null = null;
  private downAt: [number, number] | null = null;
  private active = false;
  private namesToken = 0;

  constructor(private readonly host: AnnotateHost) {
    this.codes = new Int32Array(host.x.length).fill(-1);
    this.addSurface(TISSUE, {
      node: host.stageNode,
      x: host.x,
      y: host.y,
      projection: () => cameraProjection(host),
      radius: () => host.cellRadius?.() ?? MIN_HOLE
    });

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
    // Escape in the panel stops drawing, as on the drawing once no outline is in progress
    this.node.addEventListener('keydown', ev => {
      if (ev.key === 'Escape') {
        ev.stopPropagation();
        this.hide();
      }
    });
  }

  /** Stop drawing (Escape): the panel and overlays hidden, the regions kept for the next time. */
  hide(): void {
    this.toggle(false);
    this.host.onHide?.();
  }

  /**
   * Let regions be drawn on `surface` too (an embedding beside the tissue, by its obsm key):
   * its own overlay, the same tools; the cells a region there holds are marked on every surface.
   */
  addSurface(space: string, surface: Surface): void {
    this.removeSurface(space);
    const overlay = document.createElementNS(SVG, 'svg');
    overlay.setAttribute('class', 'sds-annotate-overlay');
    overlay.setAttribute('tabindex', '0');
    overlay.setAttribute('role', 'application');
    const where = space === TISSUE ? 'on the tissue' : `on the embedding ${space}`;
    overlay.setAttribute(
      'aria-label',
      `Drawing regions ${where}. Arrow keys move the crosshair, Space adds a point, Enter closes the outline, Backspace undoes, Escape drops it.`
    );
    overlay.dataset.space = space;
    overlay.style.display = this.active ? '' : 'none';
    // under the overlay: the veil that dims all but the selected cells
    const veil = h('canvas', { class: 'sds-annotate-veil', 'aria-hidden': 'true' }) as HTMLCanvasElement;
    veil.style.display = overlay.style.display;
    surface.node.append(veil, overlay);
    this.surfaces.set(space, { surface, overlay, veil });
    this.listen(overlay, space);
    if (space !== TISSUE) {
      this.spaces[space] = { x: surface.x, y: surface.y };
      this.update();
    }
  }

  /** Stop drawing on an embedding (its panel closed); regions drawn on it still count on its positions. */
  removeSurface(space: string): void {
    this.surfaces.get(space)?.overlay.remove();
    this.surfaces.get(space)?.veil.remove();
    this.surfaces.delete(space);
  }

  /** Show or hide the panel and its overlays. */
  toggle(on = !this.active): void {
    this.active = on;
    this.node.hidden = !on;
    for (const { overlay, veil } of this.surfaces.values()) {
      overlay.style.display = on ? '' : 'none';
      veil.style.display = on ? '' : 'none';
    }
    if (on) {
      this.redraw();
      this.surfaces.get(TISSUE)?.overlay.focus();
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

  /** A point in data coordinates of `space` (default the tissue); tests and the keyboard go through here as the mouse does. */
  add(point: Point, space = TISSUE): void {
    const before = this.drawing.regions.length;
    this.drawing.drawOn(space === TISSUE ? undefined : space);
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
    this.codes = regionCodes(this.host.x, this.host.y, this.drawing.regions, this.spaces);
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

  /** Where each embedding drawn on puts its cells (kept after its panel closes: regions there still count). */
  private readonly spaces: Spaces = {};

  /** Redraw every overlay at its drawing's camera (outlines, draft, crosshair, selected cells). */
  redraw(): void {
    if (!this.active) {
      return;
    }
    for (const space of this.surfaces.keys()) {
      this.redrawOn(space);
    }
  }

  private redrawOn(space: string): void {
    const entry = this.surfaces.get(space)!;
    const { surface, overlay } = entry;
    const view = surface.projection();
    if (!view) {
      return;
    }
    const at = (p: Point) => view.toScreen(p[0], p[1]);
    const path = (points: Point[], closed: boolean) =>
      points
        .map((p, i) => {
          const [px, py] = at(p);
          return `${i ? 'L' : 'M'}${px.toFixed(1)},${py.toFixed(1)}`;
        })
        .join('') + (closed ? 'Z' : '');
    const parts: SVGElement[] = [];
    const counts = regionCounts(this.codes, this.drawing.regions.length);
    this.drawing.regions.forEach((region, i) => {
      if ((region.space ?? TISSUE) !== space) {
        return;
      }
      const d = path(region.polygon, true);
      parts.push(svg('path', { d, class: 'sds-annotate-halo' }), svg('path', { d, class: 'sds-annotate-outline' }));
      const [lx, ly] = at(region.polygon[0]);
      const label = svg('text', { x: lx.toFixed(1), y: (ly - 4).toFixed(1), class: 'sds-annotate-label' });
      label.textContent = `${region.label} (${counts[i].toLocaleString()})`; // text, never markup
      parts.push(label);
    });
    this.paintVeil(entry, view);
    if (this.drawing.draft.length && (this.drawing.space ?? TISSUE) === space) {
      const d = path(this.drawing.draft, false);
      parts.push(svg('path', { d, class: 'sds-annotate-halo' }), svg('path', { d, class: 'sds-annotate-draft' }));
    }
    const c = this.cursors.get(space) ?? [surface.node.clientWidth / 2, surface.node.clientHeight / 2];
    parts.push(svg('path', { d: `M${c[0] - 6},${c[1]}h12M${c[0]},${c[1] - 6}v12`, class: 'sds-annotate-cursor' }));
    overlay.replaceChildren(...parts);
  }

  /**
   * Veil the drawing but for every selected cell in view (a hole each, ringed), so they show
   * in their own colours at any count; `data-marked` on the overlay counts them, `data-selected`
   * all the selected cells (those out of view too).
   */
  private paintVeil(entry: { surface: Surface; overlay: SVGSVGElement; veil: HTMLCanvasElement }, view: Projection): void {
    const { surface, overlay, veil } = entry;
    const w = surface.node.clientWidth;
    const hgt = surface.node.clientHeight;
    let selected = 0;
    for (const code of this.codes) {
      if (code >= 0) selected += 1;
    }
    overlay.dataset.selected = String(selected);
    const empty = !selected || w <= 0 || hgt <= 0;
    veil.width = empty ? 0 : w;
    veil.height = empty ? 0 : hgt;
    if (empty) {
      overlay.dataset.marked = '0';
      return;
    }
    const { mask, shown } = selectionMask(w, hgt, view.toScreen, surface.x, surface.y, this.codes, surface.radius?.() ?? MIN_HOLE);
    const ctx = veil.getContext('2d');
    if (ctx) {
      const style = getComputedStyle(surface.node);
      const image = ctx.createImageData(w, hgt);
      const background = cssColor(ctx, style.getPropertyValue('--sds-bg'), '#ffffff');
      const text = cssColor(ctx, style.getPropertyValue('--sds-fg'), '#222222');
      veilPixels(mask, w, hgt, withAlpha(background, VEIL_ALPHA), text, new Uint32Array(image.data.buffer));
      ctx.putImageData(image, 0, 0);
    }
    overlay.dataset.marked = String(shown);
  }

  dispose(): void {
    for (const space of [...this.surfaces.keys()]) {
      this.removeSurface(space);
    }
  }

  private button(label: string, title: string, run: () => void, cls: string): HTMLButtonElement {
    const b = h('button', { type: 'button', class: `sds-button ${cls}`, title, 'aria-label': title }, label) as HTMLButtonElement;
    b.addEventListener('click', run);
    return b;
  }

  /** The data point under (px, py) CSS px of `space`'s overlay. */
  private dataAt(space: string, px: number, py: number): Point | null {
    const view = this.surfaces.get(space)?.surface.projection();
    return view ? view.toData(px, py) : null;
  }

  private local(overlay: SVGSVGElement, ev: MouseEvent): [number, number] {
    const r = overlay.getBoundingClientRect();
    return [ev.clientX - r.left, ev.clientY - r.top];
  }

  private listen(o: SVGSVGElement, space: string): void {
    const addAt = (at: [number, number]) => {
      const p = this.dataAt(space, ...at);
      if (p) this.add(p, space);
    };
    o.addEventListener('pointerdown', ev => {
      o.focus({ preventScroll: true }); // the keys (Enter, Escape, Backspace) go to the drawing drawn on
      const at = this.local(o, ev);
      const tool = this.drawing.tool;
      this.drawing.drawOn(space === TISSUE ? undefined : space);
      if (tool === 'lasso') {
        this.dragging = true;
        this.drawing.draft = [];
        this.lastLasso = at;
        addAt(at);
      } else if (tool === 'rectangle') {
        this.dragging = true;
        this.downAt = at;
        addAt(at);
      }
    });
    o.addEventListener('pointermove', ev => {
      if (!this.dragging || this.drawing.tool !== 'lasso' || !this.lastLasso) return;
      const at = this.local(o, ev);
      if (Math.hypot(at[0] - this.lastLasso[0], at[1] - this.lastLasso[1]) >= LASSO_STEP) {
        this.lastLasso = at;
        addAt(at);
      }
    });
    o.addEventListener('pointerup', ev => {
      if (!this.dragging) return;
      this.dragging = false;
      const at = this.local(o, ev);
      if (this.drawing.tool === 'rectangle') {
        // a drag is a rectangle; a click leaves its corner for the next click to complete
        const moved = this.downAt && Math.hypot(at[0] - this.downAt[0], at[1] - this.downAt[1]) >= 3;
        if (moved && this.drawing.draft.length === 1) addAt(at);
      } else if (this.drawing.tool === 'lasso') {
        this.close();
      }
    });
    o.addEventListener('click', ev => {
      if (this.drawing.tool !== 'polygon') {
        return;
      }
      // a double-click closes the outline at its first click's point: the second click (detail 2)
      // adds nothing, and so the outline closes once, whether or not a dblclick event follows
      if (ev.detail === 2) {
        this.close();
      } else if (ev.detail <= 1) {
        addAt(this.local(o, ev));
      }
    });
    o.addEventListener('dblclick', ev => {
      ev.preventDefault(); // the stage below zooms on a double-click: not while drawing
      ev.stopPropagation();
    });
    o.addEventListener('keydown', ev => this.key(ev, space));
  }

  private key(ev: KeyboardEvent, space: string): void {
    const node = this.surfaces.get(space)?.surface.node;
    if (!node) {
      return;
    }
    const w = node.clientWidth;
    const hgt = node.clientHeight;
    const step = ev.shiftKey ? 50 : 10;
    const c = this.cursors.get(space) ?? [w / 2, hgt / 2];
    const moves: Record<string, [number, number]> = {
      ArrowLeft: [-step, 0],
      ArrowRight: [step, 0],
      ArrowUp: [0, -step],
      ArrowDown: [0, step]
    };
    if (ev.key in moves) {
      const [dx, dy] = moves[ev.key];
      this.cursors.set(space, [Math.min(w, Math.max(0, c[0] + dx)), Math.min(hgt, Math.max(0, c[1] + dy))]);
      this.redraw();
    } else if (ev.key === ' ') {
      const p = this.dataAt(space, c[0], c[1]);
      if (p) this.add(p, space);
    } else if (ev.key === 'Enter') {
      this.close();
    } else if (ev.key === 'Backspace' || (ev.key === 'z' && (ev.ctrlKey || ev.metaKey))) {
      this.undo();
    } else if (ev.key === 'Escape') {
      if (this.drawing.draft.length) {
        this.drawing.draft = [];
        this.redraw();
      } else {
        this.hide();
      }
    } else {
      return;
    }
    ev.preventDefault();
    ev.stopPropagation();
  }
}

/** The tissue stage's projection: its camera's target at the centre, 2^zoom CSS px a unit. */
function cameraProjection(host: AnnotateHost): Projection | null {
  const camera = host.camera();
  if (!camera) {
    return null;
  }
  const scale = Math.pow(2, camera.zoom);
  const w = host.stageNode.clientWidth;
  const hgt = host.stageNode.clientHeight;
  return {
    toScreen: (x, y) => [(x - camera.target[0]) * scale + w / 2, (y - camera.target[1]) * scale + hgt / 2],
    toData: (px, py) => [camera.target[0] + (px - w / 2) / scale, camera.target[1] + (py - hgt / 2) / scale]
  };
}

/** A CSS colour (a theme variable's value) as packed RGBA, read through the canvas (any CSS form); `fallback` when empty. */
function cssColor(ctx: CanvasRenderingContext2D, css: string, fallback: string): number {
  ctx.fillStyle = fallback;
  ctx.fillStyle = css.trim() || fallback;
  const value = String(ctx.fillStyle);
  const hex = /^#([0-9a-f]{6})$/i.exec(value);
  const rgba = /^rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)$/.exec(value);
  const [r, g, b] = hex
    ? [0, 2, 4].map(i => parseInt(hex[1].slice(i, i + 2), 16))
    : rgba
      ? [rgba[1], rgba[2], rgba[3]].map(Number)
      : [255, 255, 255];
  return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
}

/** A packed RGBA colour with another alpha (0-255). */
function withAlpha(color: number, alpha: number): number {
  return ((alpha << 24) | (color & 0xffffff)) >>> 0;
}

function svg(tag: string, attrs: Record<string, string>): SVGElement {
  const el = document.createElementNS(SVG, tag) as SVGElement;
  for (const [k, v] of Object.entries(attrs)) {
    el.setAttribute(k, v);
  }
  return el;
}
