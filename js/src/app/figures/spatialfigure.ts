/**
 * A canvas figure as an interactive view: a toolbar (zoom, saved view, fit, layers),
 * the drawing (deck.gl, or the Canvas 2D CanvasPlot where WebGL is missing), the legend
 * (categories click to hide), the count of cells in view, a hover tooltip with the cell's
 * ID and color-by value, and a clicked cell's whole obs row.
 */

import { AnnotatePanel } from './annotatepanel';
import { aspectOf, panBy, regionOf, countInRegion, scaleBar, zoomBy, zoomRange, type Region, type ViewState } from '../spatial/camera';
import { h } from '../shared/dom';
import { fitToPanel } from '../spatial/fit';
import { rangeFormat, rowValue } from '../shared/format';
import { GeneBox } from './genebox';
import { additiveColoring, channelLegend, geneValues, type Additive } from './genechannels';
import { clippedByDefault, colorLimitsControl, DEFAULT_PERCENTILES, withLimits } from './colorlimits';
import { CanvasPlot, legend } from '../spatial/canvasplot';
import { embeddingKeys, loadEmbedding } from './embedding';
import { EmbeddingView } from './embeddingview';
import { composite, limitsInSteps, type ChannelState } from '../spatial/channels';
import { figureChannels, sharedColorValues, outlineTilesOf } from '../spatial/cellstore';
import type { CanvasData } from '../spatial/raster';
import { splitReply } from '../shared/buffers';
import { SpatialStage } from '../spatial/spatial';
import { TileGrid, type TileFrame } from '../spatial/tiles';
import { LabelsLayer, labelsElements } from './labels';
import { TranscriptsLayer, pointsElements } from './transcripts';
import { TransportError, type Transport } from '../shared/transport';
import type { AnnotateData, CanvasColor, CanvasPayload, CellRow, ImageChannel } from '../shared/types';

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

/** What the toolbar drives, whichever drawing is on screen. */
type Camera = {
  showSaved(): void;
  fit(): void;
  zoom(steps: number): void;
};

/** The cells inside the regions drawn on a figure: table positions, on that figure's version. */
export type CellSelection = { version: number | string; figure: string; cells: number[] };

export class SpatialFigure {
  readonly node: HTMLElement;
  readonly stage: SpatialStage | null = null;
  readonly plot: CanvasPlot | null = null;
  private readonly tooltip: HTMLElement;
  private readonly inView: HTMLElement;
  private readonly pin: HTMLElement;
  private readonly legendSlot: HTMLElement;
  private readonly main: HTMLElement;
  private readonly scaleBar: HTMLElement;
  private readonly hidden = new Set<number>();
  /** What the cells are colored by now (`{}`: the figure's own coloring), for the exports. */
  private target: ColorTarget = {};
  /** What the cells are colored by now (the figure's own coloring until colorBy). */
  private color: CanvasColor;
  private value: CanvasData['value'];
  private colorToken = 0;
  /** The percentiles a gene's colors are clipped to (null: exact limits). */
  private percentiles: [number, number] | null = null;
  /** The legend of genes shown as added colour channels (null: the coloring's own legend). */
  private channelLegend: HTMLElement | null = null;
  private readonly colorStatus: HTMLElement;
  private channels: { width: number; height: number; planes: Uint8Array[]; states: ChannelState[] } | null = null;
  private readonly channelSlot: HTMLElement;
  private readonly rows = new Map<number, Promise<CellRow>>();
  private hoverIndex = -1;
  private countTimer: ReturnType<typeof setTimeout> | null = null;
  /** The image's tiles of finer pyramid levels for the region on screen (WebGL view with an image and its channels). */
  private tiles: TileGrid | null = null;
  private undo: (() => void)[] = [];
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
    this.color = payload.color;
    this.value = data.value;
    this.colorStatus = h('span', { class: 'sds-color-status', role: 'status' });
    this.tooltip = h('div', { class: 'sds-tooltip', role: 'status', 'aria-live': 'polite', hidden: '' });
    this.inView = h('span', { class: 'sds-canvas-inview' });
    this.pin = h('div', { class: 'sds-cell-pin', hidden: '' });
    this.legendSlot = h('div', { class: 'sds-legend-slot' });
    this.channelSlot = h('div', { class: 'sds-channel-slot' });
    this.scaleBar = h('div', { class: 'sds-scalebar', hidden: '' }, h('div', { class: 'sds-scalebar-bar' }), h('div', { class: 'sds-scalebar-label' }));
    this.main = h('div', { class: 'sds-spatial-main' });
    this.linkMark = h('div', { class: 'sds-link-mark', hidden: '' });
    if (useWebGL) {
      this.stage = new SpatialStage(payload, data, {
        onView: (_vs, region) => this.viewChanged(region),
        onHover: index => this.hover(index),
        onPin: index => void this.showPin(index),
        onScreen: shown => {
          if (shown) {
            this.askTiles(this.stage!.region());
            this.transcripts?.onScreen();
            this.labels?.viewChanged(this.stage!.region());
          } else {
            this.tiles?.hold();
          }
        },
        onFallback: reason => this.fallBack(reason)
      }, outlineTilesOf(transport, version, figureId, payload));
    } else {
      this.plot = this.makePlot();
    }
    const drawing = this.stage ? this.stage.node : this.plot!.node;
    const wrap = h('div', { class: 'sds-spatial-drawing' }, drawing, this.tooltip, this.scaleBar, this.linkMark);
    this.main.append(wrap, h('div', { class: 'sds-side' }, this.legendSlot, this.channelSlot));
    if (this.stage) {
      const stage = this.stage;
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
      this.pin
    );
    this.renderLegend();
    if (this.stage) {
      void this.offerEmbeddings();
      void this.offerTranscripts();
      void this.offerLabels();
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

  /** Offer the version's labels elements as a layer: on at once when the figure draws no cells. */
  private async offerLabels(): Promise<void> {
    let elements: string[];
    try {
      elements = await labelsElements(this.transport, this.version);
    } catch {
      return;
    }
    const bar = this.node.querySelector('.sds-spatial-bar');
    if (!elements.length || !bar || !this.stage) {
      return;
    }
    this.labels = new LabelsLayer(this.transport, this.version, this.stage, elements);
    bar.append(this.labels.controls);
    this.node.dataset.labelsElements = elements.join(',');
    if (this.payload.n_cells === 0) {
      await this.labels.show(true);
    }
  }

  /** The transcripts layer, when the version holds a points element (WebGL view only). */
  transcripts: TranscriptsLayer | null = null;

  /** Offer the version's first points element as a layer (nothing when it has none, or on an older server). */
  private async offerTranscripts(): Promise<void> {
    let elements: string[];
    try {
      elements = await pointsElements(this.transport, this.version);
    } catch {
      return;
    }
    const bar = this.node.querySelector('.sds-spatial-bar');
    if (!elements.length || !bar || !this.stage) {
      return;
    }
    const saved = this.payload.points;
    const element = saved && elements.includes(saved.element) ? saved.element : elements[0];
    this.transcripts = new TranscriptsLayer(this.transport, this.version, this.stage, element);
    bar.append(this.transcripts.controls);
    this.legendSlot.after(this.transcripts.legend);
    this.node.dataset.pointsElement = element;
    if (saved && saved.element === element) {
      // saved with its transcripts shown: shown as saved once the figure is on screen (an
      // index built for a figure nobody scrolled to would slow the ones in view)
      this.transcripts.restore(saved);
      if (this.stage.node.dataset.live === 'true') {
        this.transcripts.onScreen();
      }
    }
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
    this.colorStatus.textContent = `Loading ${key}…`;
    let coords;
    try {
      coords = await loadEmbedding(this.transport, this.version, this.figureId, key);
    } catch (err) {
      if (token === this.embeddingToken) {
        this.colorStatus.textContent = TransportError.from(err).message;
      }
      throw err;
    }
    if (token !== this.embeddingToken) {
      return;
    }
    this.colorStatus.textContent = '';
    const view = new EmbeddingView(
      coords,
      () => ({ color: this.colorSpec(), value: this.value, none: this.noneColor() }),
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
    this.channelLegend = null;
    const token = ++this.colorToken;
    const { column, gene } = target;
    let color: CanvasColor = this.payload.color;
    let value: CanvasData['value'] = this.data.value;
    if (column || gene) {
      this.colorStatus.textContent = `Loading ${gene ?? column}…`;
      try {
        const reply = await sharedColorValues(
          this.transport,
          {
            version: this.version,
            figure: this.figureId,
            ...(gene ? { gene, ...(target.layer ? { layer: target.layer } : {}) } : { column: column! }),
            ...(target.highlight !== undefined ? { highlight: target.highlight } : {}),
            ...(target.against !== undefined ? { against: target.against } : {})
          },
          this.payload.cells_key,
          this.ownColumn(),
          this.payload.color_keys
        );
        color = reply.data;
        const { values } = splitReply('color_values', color, reply.buffers);
        if (!values) {
          throw new TransportError('protocol', 'the color_values reply colors nothing');
        }
        value = values;
        color = gene ? clippedByDefault(color, value) : color;
      } catch (err) {
        if (token === this.colorToken) {
          this.colorStatus.textContent = TransportError.from(err).message;
        }
        throw err;
      }
    }
    if (token !== this.colorToken) {
      return;
    }
    this.colorStatus.textContent = '';
    this.color = color;
    this.percentiles = gene ? DEFAULT_PERCENTILES : null;
    this.value = value;
    this.hidden.clear();
    this.target = target;
    this.node.dataset.colorBy = color.mode === 'none' ? '' : color.column;
    this.showColorChoice(target);
    this.noteCaption(target);
    this.renderLegend();
    this.redrawColors();
  }

  /** The column the figure itself is colored by (its settings apply to that column only), if any. */
  private ownColumn(): string | null {
    return this.payload.color.mode === 'none' ? null : this.payload.color.column;
  }

  /** Color by 2–3 genes, one channel each, added (see `genechannels.ts`). */
  private async colorByChannels(target: ColorTarget, genes: string[]): Promise<void> {
    const token = ++this.colorToken;
    this.colorStatus.textContent = `Loading ${genes.join(', ')}…`;
    let mix: Additive;
    try {
      const where = {
        version: this.version,
        figure: this.figureId,
        ...(target.layer ? { layer: target.layer } : {}),
        cellsKey: this.payload.cells_key,
        ownColumn: this.ownColumn()
      };
      const found = await geneValues(this.transport, where, genes);
      mix = additiveColoring(found.genes, found.values);
    } catch (err) {
      if (token === this.colorToken) {
        this.colorStatus.textContent = TransportError.from(err).message;
      }
      throw err;
    }
    if (token !== this.colorToken) {
      return;
    }
    this.colorStatus.textContent = '';
    [this.color, this.value, this.percentiles] = [mix.color, mix.codes, null];
    this.channelLegend = channelLegend(mix.channels);
    this.hidden.clear();
    this.node.dataset.colorBy = mix.color.column;
    this.showColorChoice(target);
    this.noteCaption(target);
    this.renderLegend();
    this.redrawColors();
  }

  /**
   * Make the toolbar's color dropdown say what the view shows: the column chosen, or (for a
   * gene, a highlight or a change against another version, which are not obs columns) one
   * extra option naming it, so it never reads "(saved)" over another coloring.
   */
  private showColorChoice(target: ColorTarget): void {
    const select = this.node.querySelector<HTMLSelectElement>('.sds-color-by');
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
    const caption = this.node.closest('figure')?.querySelector('.sds-caption');
    if (!caption) {
      return;
    }
    caption.querySelector('.sds-caption-now')?.remove();
    const saved = this.payload.color.mode === 'none' ? undefined : this.payload.color.column;
    const shown = shownLabel(target) ?? (target.column !== saved ? target.column : undefined);
    if (shown) {
      caption.append(h('span', { class: 'sds-caption-now' }, ` Shown now: colored by ${shown} (the caption is the saved view's).`));
    }
  }

  /** Ask for the image's channels as planes, then offer each one's toggle, color and contrast. */
  private async loadChannels(): Promise<void> {
    const reply = await figureChannels(this.transport, this.version, this.figureId, this.payload.image_key);
    const { width, height, channels } = reply.data;
    const img = this.payload.image;
    if (!img || width !== img.width || height !== img.height) {
      return; // not the image on screen: keep the composited one
    }
    const { planes } = splitReply('channels', reply.data, reply.buffers);
    this.channels = { width, height, planes, states: channels.map(c => ({ ...c })) };
    this.renderLegend();
    this.renderChannels();
    const levels = reply.data.levels ?? [];
    if ((this.stage || this.plot) && levels.length) {
      const grid = new TileGrid(
        this.transport,
        this.version,
        this.figureId,
        levels,
        { width, bounds: img.bounds },
        () => this.showTiles(grid.frame()),
        message => {
          this.node.dataset.tileError = message;
        },
        this.payload.image_key
      );
      grid.setChannels(this.channels.states);
      this.tiles = grid;
      (this.stage?.node ?? this.node).dataset.tileLevels = String(levels.length);
      this.askTiles(this.stage ? this.stage.region() : this.plotRegion(this.plot!));
    }
  }

  /**
   * The camera shows `region`: ask the tile grid for what it needs there (it fetches only what
   * it lacks); nothing while the stage is off screen (it asks again when back).
   */
  private askTiles(region: Region): void {
    const grid = this.tiles;
    const screenWidth = this.stage ? this.stage.screen()[0] : this.plot?.canvas.width;
    if (!grid || !screenWidth || this.stage?.offScreen) {
      return;
    }
    const since = performance.now();
    if (grid.update(region, screenWidth / Math.max(region[2] - region[0], 1e-12))) {
      this.showTiles(grid.frame(), since);
    }
  }

  /** Draw the tiles of `frame` over the overview: the WebGL stage's layers, or the 2D drawing again. */
  private showTiles(frame: TileFrame, since?: number): void {
    if (this.stage) {
      this.stage.setTiles(frame, since);
    } else if (this.plot) {
      this.plot.tiles = frame.tiles;
      this.plot.draw();
      this.node.dataset.tileWanted = String(frame.level);
      if (frame.complete) {
        this.node.dataset.tileLevel = String(frame.level);
        this.node.dataset.tiles = String(frame.tiles.filter(t => t.level === frame.level).length);
      }
    }
  }

  /** Recomposite the image from the channel planes and show it. */
  private recomposite(): void {
    const ch = this.channels;
    if (!ch) {
      return;
    }
    const rgba = composite(ch.planes, ch.states, ch.width, ch.height);
    if (this.stage) {
      this.stage.setImage(rgba);
      if (this.tiles) {
        this.tiles.setChannels(ch.states);
        this.stage.setTiles(this.tiles.frame());
      }
    } else if (this.plot) {
      (this.plot as { data: CanvasData }).data = { ...this.plot.data, image: rgba };
      if (this.tiles) {
        this.tiles.setChannels(ch.states);
        this.plot.tiles = this.tiles.frame().tiles;
      }
      this.plot.draw();
    }
    (this as { data: CanvasData }).data = { ...this.data, image: rgba }; // exports draw what is on screen
  }

  private renderChannels(): void {
    const ch = this.channels;
    if (!ch) {
      return;
    }
    const rows = ch.states.map((state, k) => {
      const visible = h('input', { type: 'checkbox', class: 'sds-channel-on' }) as HTMLInputElement;
      visible.checked = state.visible;
      visible.addEventListener('change', () => {
        state.visible = visible.checked;
        this.recomposite();
      });
      const color = h('input', {
        type: 'color',
        class: 'sds-channel-color',
        value: hex6(state.color),
        'aria-label': `${state.name} color`,
        title: `${state.name} color`
      }) as HTMLInputElement;
      color.addEventListener('input', () => {
        state.color = color.value;
        this.recomposite();
      });
      const [lo, hi] = limitsInSteps(state).map(v => Math.round(Math.max(0, Math.min(255, v))));
      const range = (label: string, value: number, set: (v: number) => void) => {
        const r = h('input', {
          type: 'range',
          min: '0',
          max: '255',
          step: '1',
          value: String(value),
          class: 'sds-contrast',
          'aria-label': `${state.name} contrast ${label}`,
          title: `${state.name} contrast ${label}`
        }) as HTMLInputElement;
        r.addEventListener('input', () => {
          set(Number(r.value));
          this.recomposite();
        });
        return r;
      };
      const raw = (step: number) => state.range[0] + (step / 255) * (state.range[1] - state.range[0]);
      const low = range('minimum', lo, v => {
        state.contrast_limits = [raw(v), Math.max(raw(v), state.contrast_limits[1])];
      });
      const high = range('maximum', hi, v => {
        state.contrast_limits = [Math.min(raw(v), state.contrast_limits[0]), raw(v)];
      });
      return h(
        'li',
        { class: 'sds-channel', 'data-channel': String(k) },
        h('label', { class: 'sds-check', title: state.name }, visible, h('span', { class: 'sds-channel-name' }, state.name)),
        color,
        h('span', { class: 'sds-contrast-pair' }, low, high)
      );
    });
    this.channelSlot.replaceChildren(
      h('div', { class: 'sds-legend-title', id: `sds-ch-${this.figureId}` }, 'Channels'),
      h('ul', { class: 'sds-channel-list', 'aria-label': 'Image channels' }, rows)
    );
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

  private makePlot(): CanvasPlot {
    const plot = new CanvasPlot(this.payload, this.data);
    plot.canvas.setAttribute('role', 'img');
    plot.canvas.setAttribute('aria-label', `${this.payload.n_cells.toLocaleString()} cells. Drag or arrow keys to pan; wheel, + and - to zoom.`);
    plot.reserveLegend = false;
    plot.node.replaceChildren(plot.canvas); // the legend and the count live beside, in this figure
    return plot;
  }

  /** Told each camera move, so a view beside this one can follow (see `sidebyside.ts`). */
  onCamera: ((vs: ViewState) => void) | null = null;

  /** The camera on screen, or null before the first frame. */
  cameraState(): ViewState | null {
    return this.stage ? this.stage.viewState : this.plot ? this.plotState(this.plot) : null;
  }

  /** Move the camera to `vs` (a linked view followed its neighbour). */
  setCamera(vs: ViewState): void {
    if (this.stage) {
      this.stage.apply(vs, 'user');
    } else if (this.plot) {
      this.plot.camera = vs;
      this.plot.fit = false;
      this.plot.draw();
      this.viewChanged(this.plotRegion(this.plot));
    }
  }

  start(): void {
    // the drawing no taller than the panel shows: its scale bar on screen (issue 29)
    const drawing = this.main.querySelector<HTMLElement>('.sds-spatial-drawing')!;
    this.undo.push(fitToPanel(drawing, this.node, this.node.querySelector('.sds-spatial-foot'), aspectOf(this.payload.bounds)));
    if (this.payload.image) {
      this.loadChannels().catch(() => undefined);
    }
    if (this.stage) {
      this.stage.setColors(this.colorSpec(), this.value, this.noneColor());
      this.stage.start();
    } else if (this.plot) {
      this.plot.draw();
      this.undo.push(this.plot2dInteraction(this.plot));
      this.undo.push(this.plot.watchSize());
      this.viewChanged(this.plotRegion(this.plot));
    }
  }

  /** Bytes of the buffers this view holds: what keeping it for a revisit costs (keptviews.ts). */
  get bytes(): number {
    const { x, y, value, image, shapes } = this.data;
    const parts = [x, y, value, image, ...(shapes?.kind === 'polygons' ? [shapes.starts, shapes.vertices] : shapes ? [shapes.radius] : [])];
    return parts.reduce((sum, part) => sum + (part?.byteLength ?? 0), 0) + (this.value !== this.data.value ? (this.value?.byteLength ?? 0) : 0);
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
    const plot = new CanvasPlot({ ...this.payload, color: this.colorSpec() }, { ...this.data, value: this.value });
    const stage = this.stage!;
    const w = stage.node.clientWidth || 480;
    const hgt = stage.node.clientHeight || 480;
    plot.fixedSize = [w, hgt];
    plot.tiles = this.tiles?.frame().tiles ?? []; // what the view shows: its tiles over the overview
    plot.camera = stage.viewState;
    if (!plot.camera) {
      plot.fit = stage.mode === 'fit';
    }
    plot.draw();
    return plot;
  }

  /**
   * How the view colors its cells and image now, as the `export` request takes it: the
   * recoloring (`colorBy`'s target), the categories its legend hides and the image channels
   * as its controls set them, so an export shows the same.
   */
  coloring(): ExportColoring {
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
    if (this.channels) {
      out.channels = JSON.stringify(this.channels.states.map(({ name, color, visible, contrast_limits }) => ({ name, color, visible, contrast_limits })));
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
    this.redrawColors();
  }

  /** The region of the data on screen (x0, y0, x1, y1): what an export shows when asked for the view on screen. */
  region(): Region {
    return this.stage ? this.stage.region() : this.plotRegion(this.plot!);
  }

  /** The image channels the view shows, in their colors now (the controls' if any, else as saved). */
  shownChannels(): ImageChannel[] {
    if (!this.payload.image) {
      return [];
    }
    if (this.channels) {
      return this.channels.states.filter(c => c.visible).map(c => ({ name: c.name, color: c.color }));
    }
    return this.payload.image.channels;
  }

  private noneColor(): string {
    return getComputedStyle(this.node).getPropertyValue('--jp-brand-color1').trim() || '#1f77b4';
  }

  /** The payload's coloring with hidden categories made transparent. */
  private colorSpec(): CanvasColor {
    const c = this.color;
    if (c.mode !== 'categorical' || !this.hidden.size) {
      return c;
    }
    return { ...c, colors: c.colors.map((col, i) => (this.hidden.has(i) ? '#00000000' : col)) };
  }

  private renderLegend(): void {
    if (this.channelLegend) {
      this.legendSlot.replaceChildren(this.channelLegend);
      return;
    }
    const toggle = this.color.mode === 'categorical' ? (code: number) => this.toggleCategory(code) : undefined;
    // with channel controls, the channels are listed there instead
    const image = this.payload.image && this.channels ? { ...this.payload.image, channels: [] } : this.payload.image;
    this.legendSlot.replaceChildren(legend({ ...this.payload, color: this.color, image }, this.hidden, toggle));
    const c = this.color;
    if (c.mode === 'continuous' && this.value) {
      this.legendSlot.append(
        colorLimitsControl(this.value, c, this.percentiles, (limits, percentiles) => {
          [this.color, this.percentiles] = [withLimits(c, limits), percentiles];
          this.renderLegend();
          this.redrawColors();
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
    this.redrawColors();
    (this.legendSlot.querySelectorAll('.sds-legend-toggle')[code] as HTMLElement | undefined)?.focus();
  }

  private redrawColors(): void {
    this.embedding?.draw();
    if (this.stage) {
      this.stage.setColors(this.colorSpec(), this.value, this.noneColor());
    } else if (this.plot) {
      (this.plot as { payload: CanvasPayload }).payload = { ...this.payload, color: this.colorSpec() };
      (this.plot as { data: CanvasData }).data = { ...this.data, value: this.value };
      this.plot.draw();
    }
  }

  private camera(): Camera {
    if (this.stage) {
      return this.stage;
    }
    const plot = this.plot!;
    const set = (vs: ViewState | null, fit = false) => {
      plot.camera = vs;
      plot.fit = fit;
      plot.draw();
      this.viewChanged(this.plotRegion(plot));
    };
    return {
      showSaved: () => set(null),
      fit: () => set(null, true),
      zoom: steps => {
        const [w, hgt] = plot.size();
        set(zoomBy(this.plotState(plot), steps, zoomRange(this.payload.bounds, w, hgt)));
      }
    };
  }

  private plotState(plot: CanvasPlot): ViewState {
    const [w, hgt] = plot.size();
    const v = plot.view(w, hgt, 1);
    return { target: [v.target[0], v.target[1]], zoom: Math.log2(v.scale) };
  }

  private plotRegion(plot: CanvasPlot): Region {
    const [w, hgt] = plot.size();
    return regionOf(this.plotState(plot), w, hgt);
  }

  /** Drag to pan, wheel to zoom, keys, on the 2D drawing. */
  private plot2dInteraction(plot: CanvasPlot): () => void {
    const c = plot.canvas;
    c.tabIndex = 0;
    let drag: { x: number; y: number } | null = null;
    const move = (vs: ViewState) => {
      plot.camera = vs;
      plot.draw();
      this.viewChanged(this.plotRegion(plot));
    };
    const down = (ev: PointerEvent) => {
      drag = { x: ev.clientX, y: ev.clientY };
      c.setPointerCapture?.(ev.pointerId);
    };
    const over = (ev: PointerEvent) => {
      if (drag) {
        const dx = ev.clientX - drag.x;
        const dy = ev.clientY - drag.y;
        drag = { x: ev.clientX, y: ev.clientY };
        move(panBy(this.plotState(plot), -dx, -dy));
      }
    };
    const up = () => {
      drag = null;
    };
    const wheel = (ev: WheelEvent) => {
      ev.preventDefault();
      const [w, hgt] = plot.size();
      move(zoomBy(this.plotState(plot), ev.deltaY < 0 ? 1 : -1, zoomRange(this.payload.bounds, w, hgt)));
    };
    const key = (ev: KeyboardEvent) => {
      const steps: Record<string, [number, number, number]> = {
        ArrowLeft: [-60, 0, 0],
        ArrowRight: [60, 0, 0],
        ArrowUp: [0, -60, 0],
        ArrowDown: [0, 60, 0],
        '+': [0, 0, 1],
        '=': [0, 0, 1],
        '-': [0, 0, -1]
      };
      const s = steps[ev.key];
      if (!s) {
        return;
      }
      ev.preventDefault();
      const [w, hgt] = plot.size();
      const vs = s[2]
        ? zoomBy(this.plotState(plot), s[2], zoomRange(this.payload.bounds, w, hgt))
        : panBy(this.plotState(plot), s[0], s[1]);
      move(vs);
    };
    c.addEventListener('pointerdown', down);
    c.addEventListener('pointermove', over);
    c.addEventListener('pointerup', up);
    c.addEventListener('wheel', wheel, { passive: false });
    c.addEventListener('keydown', key);
    return () => {
      c.removeEventListener('pointerdown', down);
      c.removeEventListener('pointermove', over);
      c.removeEventListener('pointerup', up);
      c.removeEventListener('wheel', wheel);
      c.removeEventListener('keydown', key);
    };
  }

  private toolbar(): HTMLElement {
    const cam = () => this.camera();
    const bar = h('div', { class: 'sds-spatial-bar', role: 'toolbar', 'aria-label': 'View' });
    const btn = (label: string, title: string, run: () => void, cls = '') => {
      const b = h('button', { type: 'button', class: `sds-button ${cls}`.trim(), title, 'aria-label': title }, label);
      b.addEventListener('click', run);
      return b;
    };
    bar.append(
      btn('−', 'Zoom out', () => cam().zoom(-1), 'sds-zoom-out'),
      btn('+', 'Zoom in', () => cam().zoom(1), 'sds-zoom-in'),
      btn('Saved view', 'Show the region the figure was saved with', () => cam().showSaved(), 'sds-saved-view'),
      btn('Fit', 'Show all cells', () => cam().fit(), 'sds-fit')
    );
    if (this.annotation) {
      const panel = this.annotation;
      const toggle = btn('Annotate', 'Draw regions on the tissue and save them as an annotation', () => {
        panel.toggle();
        toggle.setAttribute('aria-pressed', String(!panel.node.hidden));
      }, 'sds-annotate-toggle');
      toggle.setAttribute('aria-pressed', 'false');
      bar.append(toggle);
    }
    // the columns worth colouring by (not a single value, not an ID), else every column
    const columns = this.payload.color_columns ?? this.payload.obs_columns ?? [];
    if (columns.length) {
      const own = this.payload.color.mode === 'none' ? '' : this.payload.color.column;
      const select = h(
        'select',
        { class: 'sds-select sds-color-by', 'aria-label': 'Color cells by obs column', title: 'Color cells by' },
        h('option', { value: '' }, own ? `${own} (saved)` : 'no color'),
        columns.map(c => h('option', { value: c }, c))
      ) as HTMLSelectElement;
      select.value = '';
      select.addEventListener('change', () => {
        if (select.value === SHOWN) {
          return;
        }
        genes.clear();
        this.colorBy(select.value ? { column: select.value } : {}).catch(() => undefined);
      });
      const genes = new GeneBox(
        () => this.transport.request('genes', { version: this.version, figure: this.figureId }).then(r => r.data),
        picked =>
          this.colorBy(picked.length ? { gene: picked.join(','), channels: genes.combine === 'channels' } : {}).catch(() => undefined)
      );
      bar.append(h('span', { class: 'sds-layer-group', role: 'group', 'aria-label': 'Color' }, select, genes.node, this.colorStatus));
    }
    if (this.stage) {
      const stage = this.stage;
      const cells = checkbox('Cells', true, on => {
        stage.cellsVisible = on;
        stage.sync();
      });
      const opacity = h('input', {
        type: 'range',
        min: '0',
        max: '1',
        step: '0.05',
        value: '1',
        class: 'sds-opacity',
        'aria-label': 'Cell opacity',
        title: 'Cell opacity'
      }) as HTMLInputElement;
      opacity.addEventListener('input', () => {
        stage.cellsOpacity = Number(opacity.value);
        stage.sync();
      });
      bar.append(h('span', { class: 'sds-layer-group', role: 'group', 'aria-label': 'Layers' }, cells, opacity));
      if (this.payload.image) {
        bar.lastElementChild!.append(
          checkbox('Image', true, on => {
            stage.imageVisible = on;
            stage.sync();
          })
        );
      }
    }
    return bar;
  }

  private viewChanged(region: Region): void {
    this.annotation?.redraw();
    const camera = this.cameraState();
    if (camera) {
      this.onCamera?.(camera);
    }
    this.updateScaleBar(region);
    this.askTiles(region);
    void this.transcripts?.viewChanged(region);
    this.labels?.viewChanged(region);
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

  /** The color-by value of cell `i`, as text. */
  private valueOf(i: number): string | null {
    const c = this.color;
    const v = this.value;
    if (!v || c.mode === 'none') {
      return null;
    }
    if (c.mode === 'categorical') {
      return `${c.column}: ${c.categories[v[i]] ?? 'NA'}`;
    }
    const x = v[i];
    return `${c.column}: ${Number.isFinite(x) ? rangeFormat(c.column, c.min, c.max)(x) : 'NA'}`;
  }

  private row(index: number): Promise<CellRow> {
    let p = this.rows.get(index);
    if (!p) {
      p = this.transport
        .request('cell', { version: this.version, figure: this.figureId, index })
        .then(r => r.data);
      this.rows.set(index, p);
      p.catch(() => this.rows.delete(index));
    }
    return p;
  }

  private hover(index: number): void {
    this.hoverIndex = index;
    this.embedding?.highlight(index);
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
    const stage = this.stage;
    if (!stage?.viewState) {
      return;
    }
    const w = stage.node.clientWidth;
    const hgt = stage.node.clientHeight;
    const [sx, sy] = this.screenOf(index) ?? [w / 2, hgt / 2];
    this.tooltip.style.left = `${Math.round(Math.min(Math.max(sx + 12, 0), Math.max(0, w - 160)))}px`;
    this.tooltip.style.top = `${Math.round(Math.min(Math.max(sy + 12, 0), Math.max(0, hgt - 40)))}px`;
  }

  private async showPin(index: number): Promise<void> {
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

  /** WebGL gave up: draw with Canvas 2D in the same place. */
  private fallBack(reason: string): void {
    if (!this.stage || this.plot) {
      return;
    }
    this.stage.dispose();
    const plot = this.makePlot();
    (this as { plot: CanvasPlot | null }).plot = plot;
    (this as { stage: SpatialStage | null }).stage = null;
    const drawing = this.main.querySelector('.sds-spatial-drawing')!;
    drawing.firstElementChild!.replaceWith(plot.node);
    this.node.dataset.renderer = '2d';
    this.node.dataset.fallback = reason;
    plot.draw();
    this.undo.push(this.plot2dInteraction(plot));
    this.undo.push(plot.watchSize());
  }
}

/** A CSS color as #rrggbb for <input type=color>. */
/** The value of the color dropdown's option for a coloring that is not an obs column (no column name holds a NUL). */
const SHOWN = '\u0000shown';

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

function hex6(color: string): string {
  const m = /^#?([0-9a-f]{3}|[0-9a-f]{6})([0-9a-f]{2})?$/i.exec(color.trim());
  if (!m) {
    return '#ffffff';
  }
  const s = m[1].length === 3 ? [...m[1]].map(c => c + c).join('') : m[1];
  return `#${s.toLowerCase()}`;
}

function checkbox(label: string, checked: boolean, onChange: (on: boolean) => void): HTMLElement {
  const input = h('input', { type: 'checkbox' }) as HTMLInputElement;
  input.checked = checked;
  input.addEventListener('change', () => onChange(input.checked));
  return h('label', { class: 'sds-check' }, input, ` ${label}`);
}
