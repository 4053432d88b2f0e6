/**
 * A canvas figure as an interactive view: a toolbar (zoom, saved view, fit, layers),
 * the drawing (deck.gl, or the Canvas 2D CanvasPlot where WebGL is missing), the legend
 * (categories click to hide), the count of cells in view, a hover tooltip with the cell's
 * ID and color-by value, and a clicked cell's whole obs row.
 */

import { AnnotatePanel } from './annotatepanel';
import { aspectOf, countInRegion, scaleBar, type Region, type ViewState } from '../spatial/camera';
import { h } from '../shared/dom';
import { fitToPanel } from '../spatial/fit';
import { CellInfo } from './cellinfo';
import { FigureColoring, type ColorTarget, type ExportColoring } from './coloring';
import { viewToolbar } from './toolbar';
import { CanvasPlot } from '../spatial/canvasplot';
import { embeddingKeys, loadEmbedding } from './embedding';
import { EmbeddingView } from './embeddingview';
import { ImageChannels } from './imagechannels';
import { outlineTilesOf } from '../spatial/cellstore';
import { interact2d, makePlot, plotCamera, plotRegion, plotState } from './plot2d';
import type { CanvasData } from '../spatial/raster';
import { SpatialStage } from '../spatial/spatial';
import type { LabelsLayer } from './labels';
import { offerLabels, offerShapes, offerTranscripts } from './layeroffers';
import { LayersMenu } from './layersmenu';
import type { ShapesLayers } from './shapes';
import type { TranscriptsLayer } from './transcripts';
import { TransportError, type Transport } from '../shared/transport';
import type { AnnotateData, CanvasPayload, ImageChannel } from '../shared/types';

export type { ColorTarget, ExportColoring } from './coloring';

/** The cells inside the regions drawn on a figure: table positions, on that figure's version. */
export type CellSelection = { version: number | string; figure: string; cells: number[] };

export class SpatialFigure {
  readonly node: HTMLElement;
  readonly stage: SpatialStage | null = null;
  readonly plot: CanvasPlot | null = null;
  private readonly inView: HTMLElement;
  private readonly legendSlot: HTMLElement;
  /** Said above the legend while the cells are turned off. */
  private readonly cellsNote: HTMLElement;
  private readonly main: HTMLElement;
  private readonly scaleBar: HTMLElement;
  /** What the cells are coloured by and the legend (coloring.ts). */
  private readonly colors: FigureColoring;
  /** The tooltip and pinned row of a cell (cellinfo.ts). */
  private readonly info: CellInfo;
  /** The image's channels and tiles (imagechannels.ts). */
  private readonly image: ImageChannels;
  private countTimer: ReturnType<typeof setTimeout> | null = null;
  private undo: (() => void)[] = [];
  /** The menu holding every layer's row (WebGL view only): cells and image, transcripts, labels. */
  readonly layers: LayersMenu | null = null;
  /** Regions drawn over the tissue and saved as a version (WebGL view only). */
  readonly annotation: AnnotatePanel | null = null;
  /** Told when an annotation was saved as a new version (the host opens it). */
  onAnnotated: ((saved: AnnotateData) => Promise<void> | void) | null = null;
  /** Told the cells inside the drawn regions whenever they change. */
  onSelection: ((selection: CellSelection) => void) | null = null;
  /** The embedding shown beside the tissue (WebGL view only), or null. */
  embedding: EmbeddingView | null = null;
  private embeddingToken = 0;
  /** The mark on the tissue of the cell hovered on the embedding. */
  private readonly linkMark: HTMLElement;

  constructor(
    private readonly transport: Transport,
    private readonly version: number | string,
    private readonly figureId: string,
    readonly payload: CanvasPayload,
    readonly data: CanvasData,
    useWebGL: boolean
  ) {
    this.inView = h('span', { class: 'sds-canvas-inview' });
    this.legendSlot = h('div', { class: 'sds-legend-slot' });
    this.cellsNote = h('div', { class: 'sds-legend-note', hidden: '' }, 'Cells hidden (Layers): their colours are not drawn');
    this.colors = new FigureColoring({
      transport,
      version,
      figureId,
      payload,
      data,
      legendSlot: this.legendSlot,
      node: () => this.node,
      hasChannels: () => this.image.channels !== null,
      redraw: () => this.redrawColors()
    });
    this.info = new CellInfo({
      transport,
      version,
      figureId,
      stage: () => this.stage,
      screenOf: i => this.screenOf(i),
      coloring: () => this.colors
    });
    this.image = new ImageChannels({
      transport,
      version,
      figureId,
      payload,
      node: () => this.node,
      stage: () => this.stage,
      plot: () => this.plot,
      loaded: () => this.colors.renderLegend(),
      recomposited: rgba => {
        (this as { data: CanvasData }).data = { ...this.data, image: rgba };
      }
    });
    this.scaleBar = h('div', { class: 'sds-scalebar', hidden: '' }, h('div', { class: 'sds-scalebar-bar' }), h('div', { class: 'sds-scalebar-label' }));
    this.main = h('div', { class: 'sds-spatial-main' });
    this.linkMark = h('div', { class: 'sds-link-mark', hidden: '' });
    if (useWebGL) {
      this.stage = new SpatialStage(payload, data, {
        onView: (_vs, region) => this.viewChanged(region),
        onHover: index => this.hover(index),
        onPin: index => void this.info.showPin(index),
        onScreen: shown => {
          if (shown) {
            this.image.ask(this.stage!.region());
            this.transcripts?.onScreen();
            this.labels?.onScreen();
            this.labels?.viewChanged(this.stage!.region());
            this.shapes?.onScreen();
            this.shapes?.viewChanged(this.stage!.region());
          } else {
            this.image.tiles?.hold();
          }
        },
        onFallback: reason => this.fallBack(reason)
      }, outlineTilesOf(transport, version, figureId, payload));
    } else {
      this.plot = makePlot(payload, data);
    }
    const drawing = this.stage ? this.stage.node : this.plot!.node;
    const wrap = h('div', { class: 'sds-spatial-drawing' }, drawing, this.info.tooltip, this.scaleBar, this.linkMark);
    this.main.append(wrap, h('div', { class: 'sds-side' }, this.cellsNote, this.legendSlot, this.image.slot));
    if (this.stage) {
      const stage = this.stage;
      this.layers = new LayersMenu();
      this.annotation = new AnnotatePanel({
        transport,
        version,
        figure: figureId,
        x: data.x,
        y: data.y,
        stageNode: stage.node,
        camera: () => stage.viewState,
        cellRadius: () => stage.cellRadius(),
        columns: payload.obs_columns ?? [],
        cellName: index =>
          this.transport.request('cell', { version: this.version, figure: this.figureId, index }).then(r => r.data.name),
        onSaved: saved => this.onAnnotated?.(saved),
        onSelection: cells => this.onSelection?.({ version: this.version, figure: this.figureId, cells }),
        onHide: () => {
          const toggle = this.node.querySelector<HTMLElement>('.sds-annotate-toggle');
          toggle?.setAttribute('aria-pressed', 'false');
          toggle?.focus();
        }
      });
    }
    this.node = h(
      'div',
      { class: 'sds-spatial sds-canvas-wrap', 'data-renderer': this.stage ? 'webgl' : '2d' },
      this.toolbar(),
      this.layers?.node ?? null,
      // the drawing tools right under the toolbar's Annotate, above the drawing: a narrow card stacks
      // the legend and channels below the drawing, and the tools would sit under them (issue 41)
      this.annotation?.node ?? null,
      this.main,
      h(
        'div',
        { class: 'sds-spatial-foot' },
        h('div', { class: 'sds-canvas-note' }, `${payload.n_cells.toLocaleString()} cells`),
        this.inView
      ),
      // the cells' shapes element is past MAX_SHAPES: drawn as points, and the view says so
      payload.shapes_note ? h('div', { class: 'sds-canvas-note sds-shapes-note', role: 'note' }, payload.shapes_note) : null,
      this.info.pin
    );
    this.colors.renderLegend();
    if (this.stage) {
      void this.offerEmbeddings();
      void this.offerLayers();
    }
    // the view's small API, reachable from its element (tests, other views)
    (this.node as HTMLElement & { sdsSpatial?: SpatialFigure }).sdsSpatial = this;
  }

  /** Offer the table's embeddings in the toolbar (nothing when it has none, or on an older server). */
  private async offerEmbeddings(): Promise<void> {
    let keys: string[];
    try {
      keys = await embeddingKeys(this.transport, this.version, this.figureId);
    } catch {
      return;
    }
    const bar = this.node.querySelector('.sds-spatial-bar');
    if (!keys.length || !bar) {
      return;
    }
    const select = h(
      'select',
      { class: 'sds-select sds-embedding-pick', 'aria-label': 'Show an embedding beside the tissue', title: 'Embedding beside the tissue' },
      h('option', { value: '' }, 'no embedding'),
      keys.map(k => h('option', { value: k }, k))
    ) as HTMLSelectElement;
    select.addEventListener('change', () => {
      this.showEmbedding(select.value || null).catch(() => undefined);
    });
    bar.append(h('span', { class: 'sds-layer-group', role: 'group', 'aria-label': 'Embedding' }, select));
    this.node.dataset.embeddings = keys.join(',');
  }

  /** The labels layer, when the version holds a labels element (WebGL view only). */
  labels: LabelsLayer | null = null;

  /** The transcripts layer, when the version holds a points element (WebGL view only). */
  transcripts: TranscriptsLayer | null = null;

  /** The other shapes elements (nucleus boundaries), when the coordinate system holds any (WebGL view only). */
  shapes: ShapesLayers | null = null;

  /** Offer the version's labels, transcripts and other shapes elements as layers (layeroffers.ts). */
  private async offerLayers(): Promise<void> {
    if (!this.layers || !this.stage) {
      return;
    }
    // the layers ask in the figure's coordinate system, as its export draws them
    const system = this.payload.coordinate_system ?? '';
    const host = { transport: this.transport, version: this.version, system, payload: this.payload, stage: this.stage, node: this.node, layers: this.layers, legendSlot: this.legendSlot };
    await Promise.all([
      offerTranscripts(host).then(layer => (this.transcripts = layer)),
      offerShapes(host).then(layers => (this.shapes = layers)),
      offerLabels(host).then(async layer => {
        this.labels = layer;
        if (layer && this.payload.n_cells === 0 && !this.payload.labels?.visible) {
          await layer.show(true); // the mask is what there is to see
        }
      })
    ]);
  }

  /**
   * Show obsm `key` beside the tissue (null: hide it): the same colours and legend, hover linked
   * both ways, and the Annotate tools draw on it too (a selection on either shows on both).
   */
  async showEmbedding(key: string | null): Promise<void> {
    const token = ++this.embeddingToken;
    const select = this.node.querySelector<HTMLSelectElement>('.sds-embedding-pick');
    if (select) {
      select.value = key ?? '';
    }
    if (this.embedding) {
      this.annotation?.removeSurface(this.embedding.coords.key);
      this.embedding.dispose();
      this.embedding = null;
      delete this.node.dataset.embedding;
    }
    if (!key) {
      return;
    }
    this.colors.status.textContent = `Loading ${key}…`;
    let coords;
    try {
      coords = await loadEmbedding(this.transport, this.version, this.figureId, key);
    } catch (err) {
      if (token === this.embeddingToken) {
        this.colors.status.textContent = TransportError.from(err).message;
      }
      throw err;
    }
    if (token !== this.embeddingToken) {
      return;
    }
    this.colors.status.textContent = '';
    const view = new EmbeddingView(
      coords,
      () => ({ color: this.colors.spec(), value: this.colors.value, none: this.noneColor() }),
      index => this.hoverFromEmbedding(index)
    );
    this.embedding = view;
    this.main.querySelector('.sds-spatial-drawing')!.after(view.node);
    this.annotation?.addSurface(key, view.surface(() => this.annotation?.redraw()));
    view.draw();
    this.node.dataset.embedding = key;
  }

  /** A cell hovered on the embedding: its tooltip and a mark on the tissue. */
  private hoverFromEmbedding(index: number): void {
    this.hover(index);
    const at = index >= 0 ? this.screenOf(index) : null;
    this.linkMark.hidden = !at;
    if (at) {
      this.linkMark.style.left = `${Math.round(at[0])}px`;
      this.linkMark.style.top = `${Math.round(at[1])}px`;
      this.node.dataset.linked = String(index);
    } else {
      delete this.node.dataset.linked;
    }
  }











  /** Where cell `i` is on screen, in CSS px from the drawing's top left; null when out of view or not drawn. */
  screenOf(i: number): [number, number] | null {
    const stage = this.stage;
    if (!stage?.viewState || !(i >= 0 && i < this.payload.n_cells)) {
      return null;
    }
    const w = stage.node.clientWidth;
    const hgt = stage.node.clientHeight;
    const scale = Math.pow(2, stage.viewState.zoom);
    const sx = (this.data.x[i] - stage.viewState.target[0]) * scale + w / 2;
    const sy = (this.data.y[i] - stage.viewState.target[1]) * scale + hgt / 2;
    return sx >= 0 && sx < w && sy >= 0 && sy < hgt ? [sx, sy] : null;
  }

  /** Told each camera move, so a view beside this one can follow (see `sidebyside.ts`). */
  onCamera: ((vs: ViewState) => void) | null = null;

  /** The camera on screen, or null before the first frame. */
  cameraState(): ViewState | null {
    return this.stage ? this.stage.viewState : this.plot ? plotState(this.plot) : null;
  }

  /** Move the camera to `vs` (a linked view followed its neighbour). */
  setCamera(vs: ViewState): void {
    if (this.stage) {
      this.stage.apply(vs, 'user');
    } else if (this.plot) {
      this.plot.camera = vs;
      this.plot.fit = false;
      this.plot.draw();
      this.viewChanged(plotRegion(this.plot));
    }
  }

  start(): void {
    // the drawing no taller than the panel shows: its scale bar on screen (issue 29)
    const drawing = this.main.querySelector<HTMLElement>('.sds-spatial-drawing')!;
    this.undo.push(fitToPanel(drawing, this.node, this.node.querySelector('.sds-spatial-foot'), aspectOf(this.payload.bounds)));
    if (this.payload.image) {
      this.image.load().catch(() => undefined);
    }
    if (this.stage) {
      this.stage.setColors(this.colors.spec(), this.colors.value, this.noneColor());
      this.stage.start();
    } else if (this.plot) {
      this.plot.draw();
      this.undo.push(interact2d(this.plot, region => this.viewChanged(region)));
      this.undo.push(this.plot.watchSize());
      this.viewChanged(plotRegion(this.plot));
    }
  }

  /** Bytes of the buffers this view holds: what keeping it for a revisit costs (keptviews.ts). */
  get bytes(): number {
    const { x, y, value, image, shapes } = this.data;
    const parts = [x, y, value, image, ...(shapes?.kind === 'polygons' ? [shapes.starts, shapes.vertices] : shapes ? [shapes.radius] : [])];
    return parts.reduce((sum, part) => sum + (part?.byteLength ?? 0), 0) + (this.colors.value !== this.data.value ? (this.colors.value?.byteLength ?? 0) : 0);
  }

  /** Whether the view holds a WebGL context now. */
  get live(): boolean {
    return this.stage?.live ?? false;
  }

  /** Taken off the page, kept for a revisit: the stage keeps its context (until releaseContext). */
  park(): void {
    this.stage?.park();
  }

  /** Back on the page as it was left: drawn again, nothing asked. */
  unpark(): void {
    this.stage?.unpark();
  }

  /** Give the WebGL context back while kept (made again when shown). */
  releaseContext(): void {
    this.stage?.release();
  }

  dispose(): void {
    this.embedding?.dispose();
    this.layers?.dispose();
    this.annotation?.dispose();
    this.stage?.dispose();
    for (const u of this.undo.splice(0)) {
      u();
    }
    if (this.countTimer) {
      clearTimeout(this.countTimer);
    }
  }

  /** The view redrawn in 2D (a CanvasPlot) at its camera and size: what tests read the shown colours and tiles from; exports are the service's. */
  drawing2d(): CanvasPlot {
    if (this.plot && !this.stage) {
      return this.plot;
    }
    const plot = new CanvasPlot({ ...this.payload, color: this.colors.spec() }, { ...this.data, value: this.colors.value });
    const stage = this.stage!;
    const w = stage.node.clientWidth || 480;
    const hgt = stage.node.clientHeight || 480;
    plot.fixedSize = [w, hgt];
    plot.tiles = this.image.tiles?.frame().tiles ?? []; // what the view shows: its tiles over the overview
    plot.camera = stage.viewState;
    if (!plot.camera) {
      plot.fit = stage.mode === 'fit';
    }
    plot.draw();
    return plot;
  }







  /** The region of the data on screen (x0, y0, x1, y1): what an export shows when asked for the view on screen. */
  region(): Region {
    return this.stage ? this.stage.region() : plotRegion(this.plot!);
  }

  /** The image channels the view shows, in their colors now (the controls' if any, else as saved). */
  shownChannels(): ImageChannel[] {
    return this.image.shown();
  }


  /**
   * Color the cells by another obs column, a gene, a highlight or a change against another
   * version (coloring.ts); `{}` goes back to the figure's own coloring. Resolves once drawn;
   * rejects with the service's one-line reason (an unknown column or gene).
   */
  colorBy(target: ColorTarget): Promise<void> {
    return this.colors.colorBy(target);
  }

  /** How the view colors its cells and image now, as the `export` request takes it. */
  coloring(): ExportColoring {
    const channels = this.image.exported();
    return { ...this.colors.exported(), ...(channels ? { channels } : {}) };
  }

  /** Each category's colour now (a categorical colouring), else null. */
  categoryColors(): Map<string, string> | null {
    return this.colors.categoryColors();
  }

  /** Draw the named categories in the given colours (the other version of a side-by-side). */
  recolorCategories(given: Map<string, string>): void {
    this.colors.recolorCategories(given);
  }

  private noneColor(): string {
    return getComputedStyle(this.node).getPropertyValue('--jp-brand-color1').trim() || '#1f77b4';
  }







  private redrawColors(): void {
    this.embedding?.draw();
    if (this.stage) {
      this.stage.setColors(this.colors.spec(), this.colors.value, this.noneColor());
    } else if (this.plot) {
      (this.plot as { payload: CanvasPayload }).payload = { ...this.payload, color: this.colors.spec() };
      (this.plot as { data: CanvasData }).data = { ...this.data, value: this.colors.value };
      this.plot.draw();
    }
  }

  private toolbar(): HTMLElement {
    return viewToolbar({
      camera: () => this.stage ?? plotCamera(this.plot!, region => this.viewChanged(region)),
      annotation: this.annotation,
      payload: this.payload,
      genes: () => this.transport.request('genes', { version: this.version, figure: this.figureId }).then(r => r.data),
      colorBy: target => this.colorBy(target),
      status: this.colors.status,
      stage: this.stage,
      layers: this.layers,
      // the legend names the cells' colours: with no cells drawn a line above it says so (it keeps
      // the image's channels and the category buttons for when the cells come back)
      cellsShown: on => {
        this.cellsNote.hidden = on;
        this.legendSlot.toggleAttribute('data-cells-hidden', !on);
      }
    });
  }


  private viewChanged(region: Region): void {
    this.annotation?.redraw();
    const camera = this.cameraState();
    if (camera) {
      this.onCamera?.(camera);
    }
    this.updateScaleBar(region);
    this.image.ask(region);
    void this.transcripts?.viewChanged(region);
    this.labels?.viewChanged(region);
    this.shapes?.viewChanged(region);
    if (this.countTimer) {
      clearTimeout(this.countTimer);
    }
    // counting a million cells takes a few ms: once the camera rests
    this.countTimer = setTimeout(() => {
      this.countTimer = null;
      const n = this.stage ? this.stage.countIn(region) : countInRegion(this.data.x, this.data.y, region);
      this.inView.textContent = `· ${n.toLocaleString()} in view`;
      this.node.dataset.inView = String(n);
    }, 60);
  }

  /** A round length in the coordinate system's physical unit, when it has one. */
  private updateScaleBar(region: Region): void {
    const unit = this.payload.unit;
    const width = this.stage ? this.stage.node.clientWidth : (this.plot?.size()[0] ?? 0);
    const bar = unit && width ? scaleBar(width / Math.max(region[2] - region[0], 1e-9), unit, Math.min(120, width / 3)) : null;
    if (!bar) {
      this.scaleBar.hidden = true;
      return;
    }
    this.scaleBar.hidden = false;
    (this.scaleBar.firstElementChild as HTMLElement).style.width = `${Math.round(bar.px)}px`;
    this.scaleBar.lastElementChild!.textContent = bar.label;
  }

  /** A cell hovered here or on the embedding (-1: none): its tooltip, and its mark on the embedding. */
  private hover(index: number): void {
    this.embedding?.highlight(index);
    this.info.hover(index);
  }

  /** WebGL gave up: draw with Canvas 2D in the same place. */
  private fallBack(reason: string): void {
    if (!this.stage || this.plot) {
      return;
    }
    this.stage.dispose();
    const plot = makePlot(this.payload, this.data);
    (this as { plot: CanvasPlot | null }).plot = plot;
    (this as { stage: SpatialStage | null }).stage = null;
    const drawing = this.main.querySelector('.sds-spatial-drawing')!;
    drawing.firstElementChild!.replaceWith(plot.node);
    this.node.dataset.renderer = '2d';
    this.node.dataset.fallback = reason;
    plot.draw();
    this.undo.push(interact2d(plot, region => this.viewChanged(region)));
    this.undo.push(plot.watchSize());
  }
}
