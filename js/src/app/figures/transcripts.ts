/**
 * The transcripts of a canvas figure's version: a layer toggle, the genes shown, the point
 * size, a legend of the genes' colours, and the gene under the pointer.
 *
 * Offered when the version's store holds a points element (`points`). Turned on, the element's
 * index is asked for (built once by the server), then the tiles the view touches at the level
 * its zoom needs (pointtiles.ts): all genes, or those typed (comma separated), each gene in its
 * own colour. The stage draws them over the cells (pointlayer.ts).
 *
 * The first visit to a large element does not wait for its index (minutes at 10^8 points): the
 * server answers with a strided sample's index (`partial`) at once while the whole one builds,
 * the layer draws it and says so, and asks again every WHOLE_POLL_MS until the whole index is
 * ready, then draws from that (never a sample at full zoom). When the server cannot keep the
 * whole index (`partial_reason` "refused": its disk refused it and the element is too large to
 * index in memory), nothing is building: the layer says so and what to do, and asks again only
 * when the server will try another build (`retry_seconds`, else every REFUSED_POLL_MS). A whole
 * index the server has since dropped answers its tiles from the sample, marked `partial`: the layer
 * asks for the index anew and follows its build (or refusal) as on a first visit.
 */

import { h } from '../shared/dom';
import { regionOf, type Region } from '../spatial/camera';
import { levelFor, mergePoints, nearestPoint, pointTilesOf, tilesInView, type PointsDrawing, type PointTileSet } from '../spatial/pointtiles';
import { ShownWhenSeen, type LayerContext } from './layercontext';
import type { SpatialStage } from '../spatial/spatial';
import { layerControls, layerSlider, type LayerSlider } from './layercontrols';

import { TransportError } from '../shared/transport';
import type { CanvasPoints, PointsInfo } from '../shared/types';

/** Genes the legend names (the most frequent first); the rest are counted. */
export const LEGEND_GENES = 12;
/** The point radius a layer starts with (CSS px). */
export const DEFAULT_POINT_RADIUS = 1.5;
/** How often a layer showing a sample asks whether the element's whole index is ready (ms). */
export const WHOLE_POLL_MS = 1000;
/** How often a layer asks again when the server cannot keep the whole index and names no wait (ms). */
export const REFUSED_POLL_MS = 60_000;
/** What the layer's line says while it shows the sample of an index still building. */
export const SAMPLE_NOTE = 'Indexing transcripts… (showing a sample)';

/** "in 45 s", "in 2 min": when the server tries again. */
function inTime(seconds: number): string {
  return seconds < 90 ? `in ${Math.max(1, Math.ceil(seconds))} s` : `in ${Math.ceil(seconds / 60)} min`;
}

/**
 * What the layer's line says while it shows a sample (`info.partial`): that the whole index is on
 * its way, or, when the server cannot keep it, why only a sample shows and what would fix it.
 */
export function sampleNote(info: PointsInfo): string {
  if (info.partial_reason !== 'refused') {
    return SAMPLE_NOTE; // "building", or a server that does not say
  }
  const why = info.refused ? ` (${info.refused})` : '';
  const most = info.memory_points ? `; at most ${info.memory_points.toLocaleString()} are indexed in memory` : '';
  const retry = info.retry_seconds ? `tries again ${inTime(info.retry_seconds)}` : 'tries again later';
  return (
    `Showing a sample only: the disk refused the transcripts index${why}, and ${info.rows.toLocaleString()} transcripts are too many to index in memory${most}. ` +
    `Free disk space, or set SDS_POINTS_CACHE to a folder with room and restart Jupyter; the server ${retry}.`
  );
}

/** How long to wait before asking again while `info` is a sample (ms): soon while it builds, else when the server tries again. */
export function pollDelay(info: PointsInfo): number {
  if (info.partial_reason !== 'refused') {
    return WHOLE_POLL_MS;
  }
  return info.retry_seconds ? info.retry_seconds * 1000 + WHOLE_POLL_MS : REFUSED_POLL_MS;
}
/** How near the pointer (CSS px) a transcript is named. */
const HOVER_PX = 5;

function rgb(hex: string): [number, number, number] {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/**
 * RGBA bytes per gene code: the chosen genes in palette order (others hidden); with none chosen,
 * every gene, coloured by its rank in count (the most frequent get the distinct colours).
 */
export function geneColors(info: PointsInfo, chosen: string[]): Uint8Array {
  const rgba = new Uint8Array(4 * info.genes.length);
  const rank = new Map<string, number>();
  if (chosen.length) {
    chosen.forEach((g, i) => rank.set(g, i));
  } else {
    [...info.genes.keys()].sort((a, b) => info.genes[b].count - info.genes[a].count).forEach((code, i) => rank.set(info.genes[code].name, i));
  }
  info.genes.forEach((gene, code) => {
    const at = rank.get(gene.name);
    if (at === undefined) {
      return;
    }
    const [r, g, b] = rgb(info.palette[at % info.palette.length]);
    rgba.set([r, g, b, 255], 4 * code);
  });
  return rgba;
}

/** The legend's entries: gene, colour and count, in the colours' order (at most LEGEND_GENES), and how many more. */
export function legendEntries(info: PointsInfo, chosen: string[]): { entries: { name: string; color: string; count: number }[]; more: number } {
  const counts = new Map(info.genes.map(g => [g.name, g.count]));
  const names = chosen.length ? chosen : [...info.genes].sort((a, b) => b.count - a.count).map(g => g.name);
  const entries = names.slice(0, LEGEND_GENES).map((name, i) => ({ name, color: info.palette[i % info.palette.length], count: counts.get(name) ?? 0 }));
  return { entries, more: Math.max(0, names.length - LEGEND_GENES) };
}

export class TranscriptsLayer {
  /** The Layers menu's row: toggle, genes, size. */
  readonly controls: HTMLElement;
  /** The legend, in the figure's side column (hidden while the layer is off). */
  readonly legend: HTMLElement;
  private readonly toggle: HTMLInputElement;
  private readonly sizeSlider: LayerSlider;
  private readonly status: HTMLElement;
  private readonly hoverNote: HTMLElement;
  private info: PointsInfo | null = null;
  private tiles: PointTileSet | null = null;
  private genes: string[] = [];
  private rgba: Uint8Array = new Uint8Array(0);
  private drawing: PointsDrawing | null = null;
  private radius = DEFAULT_POINT_RADIUS;
  private on = false;
  private version = 0;
  private token = 0;
  private readonly restored = new ShownWhenSeen(on => this.show(on));

  constructor(
    private readonly context: LayerContext,
    readonly element: string
  ) {
    const genes = h('input', {
      type: 'text',
      class: 'sds-input sds-points-genes',
      placeholder: 'all genes',
      'aria-label': 'Transcripts of these genes (comma separated; empty: all)',
      title: 'Transcripts of these genes (comma separated; empty: all)',
      size: '12'
    }) as HTMLInputElement;
    genes.addEventListener('change', () => void this.setGenes(genes.value.split(',').map(g => g.trim()).filter(Boolean)));
    this.sizeSlider = layerSlider('sds-points-size', 'Size', { min: 0.5, max: 6, step: 0.5, value: DEFAULT_POINT_RADIUS }, v => `${v} px`, value => this.setRadius(value));
    const parts = layerControls('Transcripts', 'points', on => void this.show(on), [genes, this.sizeSlider.node]);
    this.controls = parts.group;
    this.toggle = parts.toggle;
    this.status = parts.status;
    this.hoverNote = h('div', { class: 'sds-points-hover', 'aria-live': 'polite' });
    this.legend = h('div', { class: 'sds-legend sds-points-legend', hidden: '' });
    context.stage.node.addEventListener('pointermove', ev => this.hover(ev));
    context.stage.node.addEventListener('pointerleave', () => this.named(null));
  }

  private get stage(): SpatialStage {
    return this.context.stage;
  }

  /** The genes and size a figure spec saved (`CanvasPoints`): set before the layer is shown. */
  restore(saved: CanvasPoints): void {
    this.restored.restore(true);
    this.genes = [...saved.genes];
    this.radius = saved.radius;
    const box = this.controls.querySelector<HTMLInputElement>('.sds-points-genes');
    if (box) {
      box.value = saved.genes.join(', ');
    }
    this.sizeSlider.set(saved.radius);
  }

  /** The figure came on screen: a layer restored from its spec is shown now, once. */
  onScreen(): void {
    this.restored.onScreen();
  }

  /** What a figure spec saves of this layer (null while it is off): the inverse of `restore`. */
  saved(): CanvasPoints | null {
    return this.on ? { element: this.element, genes: [...this.genes], radius: this.radius } : null;
  }

  /** Turn the layer on (its index asked for once) or off. */
  async show(on: boolean): Promise<void> {
    this.on = on;
    this.toggle.checked = on;
    this.legend.hidden = !on;
    if (!on) {
      this.stage.setPoints(null);
      delete this.stage.node.dataset.points;
      if (this.info?.partial) {
        this.info = null; // stop asking; shown again, the layer asks anew
        this.token++;
      }
      return;
    }
    if (!this.info) {
      const token = ++this.token;
      this.status.textContent = 'Indexing transcripts…';
      try {
        const info = await this.ask();
        if (token !== this.token) {
          return;
        }
        this.info = info;
        this.status.textContent = '';
        if (info?.partial) {
          void this.untilWhole(token);
        }
      } catch (err) {
        this.status.textContent = TransportError.from(err).message;
        throw err;
      }
    }
    await this.setGenes(this.genes);
  }

  /** The element's index: the whole one if it is ready, else (at once) a sample's while it builds. */
  private async ask(): Promise<PointsInfo | null> {
    const { transport, version, system } = this.context;
    const reply = await transport.request('points', { version, element: this.element, coordinate_system: system, sample: true });
    return reply.data.index;
  }

  /** {@link ask}, its failure said on the layer's line instead (then undefined: the caller stops asking). */
  private async askOrSay(): Promise<PointsInfo | null | undefined> {
    try {
      return await this.ask();
    } catch (err) {
      this.status.textContent = TransportError.from(err).message;
      return undefined;
    }
  }

  /**
   * Ask again until the whole index is ready, then draw from it (stops if the layer is asked anew):
   * every WHOLE_POLL_MS while it builds, only when the server will try again while it cannot keep it.
   */
  private async untilWhole(token: number): Promise<void> {
    while (token === this.token) {
      await new Promise(resolve => setTimeout(resolve, this.info ? pollDelay(this.info) : WHOLE_POLL_MS));
      if (token !== this.token) {
        return;
      }
      const info = await this.askOrSay();
      if (info === undefined) {
        return;
      }
      if (token === this.token && info && !info.partial) {
        this.info = info;
        await this.setGenes(this.genes);
        return;
      }
      if (token === this.token && info && this.info && info.key === this.info.key) {
        const said = sampleNote(this.info);
        this.info = info; // the same sample (its tiles too): only why it is a sample may have changed
        if (this.on && this.status.textContent === said) {
          this.status.textContent = sampleNote(info); // not over another message (an unknown gene)
        }
        this.stage.node.dataset.pointsReason = info.partial_reason ?? '';
      }
    }
  }

  /** Show `genes` (empty: every gene); a name the element lacks is said, and nothing else changes. */
  async setGenes(genes: string[]): Promise<void> {
    const info = this.info;
    if (!info) {
      this.genes = genes;
      return;
    }
    const known = new Set(info.genes.map(g => g.name));
    const unknown = info.partial ? undefined : genes.find(g => !known.has(g)); // a sample may miss a rare gene
    if (unknown !== undefined) {
      this.status.textContent = `No gene “${unknown}” in ${this.element}.`;
      return;
    }
    this.status.textContent = '';
    this.genes = genes;
    this.rgba = geneColors(info, genes);
    this.tiles = pointTilesOf(this.context, info, genes);
    this.renderLegend(info);
    await this.viewChanged(this.stage.region());
  }

  setRadius(radius: number): void {
    this.radius = radius;
    this.redraw();
  }

  /** The camera moved: ask for the tiles now in view, draw what is held meanwhile. */
  async viewChanged(region: Region): Promise<void> {
    const tiles = this.tiles;
    const info = this.info;
    if (!this.on || !tiles || !info) {
      return;
    }
    const width = this.stage.node.clientWidth || 1;
    const wanted = tilesInView(info, region, levelFor(info, width / Math.max(region[2] - region[0], 1e-12)));
    this.drawFrom(tiles, wanted);
    if (await tiles.want(wanted)) {
      if (tiles === this.tiles) {
        this.drawFrom(tiles, wanted);
      }
    }
    if (tiles.dropped && tiles === this.tiles) {
      await this.askAgain();
    }
  }

  /** The server dropped the whole index and answers its tiles from the sample: ask for the index anew (the sample, and why). */
  private async askAgain(): Promise<void> {
    const token = ++this.token;
    this.tiles = null; // no tile of the dropped index is asked meanwhile
    const info = await this.askOrSay();
    if (token !== this.token || !info) {
      return;
    }
    this.info = info;
    await this.setGenes(this.genes);
    if (info.partial) {
      void this.untilWhole(token);
    }
  }

  private drawFrom(tiles: PointTileSet, wanted: ReturnType<typeof tilesInView>): void {
    const drawn = tiles.drawn(wanted);
    this.drawing = mergePoints(drawn, this.rgba);
    const sampled = drawn.some(t => t.sampled);
    this.stage.node.dataset.points = String(this.drawing.n);
    this.stage.node.dataset.pointsLevel = String(drawn.length ? Math.max(...drawn.map(t => t.level)) : -1);
    this.stage.node.dataset.pointsPartial = String(Boolean(this.info?.partial));
    this.stage.node.dataset.pointsReason = this.info?.partial_reason ?? '';
    this.status.textContent = this.notice(sampled);
    this.redraw();
  }

  /** The layer's line while it draws: why a sample shows, if it does. */
  private notice(sampled = false): string {
    return this.info?.partial ? sampleNote(this.info) : sampled ? 'a sample at this zoom' : '';
  }

  private redraw(): void {
    if (this.on && this.drawing) {
      this.stage.setPoints({ drawing: this.drawing, radius: this.radius, version: ++this.version });
    }
  }

  private renderLegend(info: PointsInfo): void {
    const { entries, more } = legendEntries(info, this.genes);
    this.legend.replaceChildren(
      h(
        'div',
        { class: 'sds-legend-title' },
        info.partial
          ? `${this.element} (a sample of ${info.n_points.toLocaleString()} of ${info.rows.toLocaleString()}; counts in the sample)`
          : `${this.element} (${info.n_points.toLocaleString()})`
      ),
      h(
        'ul',
        { class: 'sds-legend-cats' },
        entries.map(e =>
          h('li', {}, h('span', { class: 'sds-swatch', style: `background:${e.color}` }), h('span', { class: 'sds-legend-label' }, `${e.name} · ${e.count.toLocaleString()}`))
        )
      ),
      h('div', { class: 'sds-legend-more', hidden: more ? undefined : '' }, more ? `and ${more} more genes (colours repeat)` : ''),
      this.hoverNote
    );
  }

  /** Name the transcript under the pointer (the nearest within HOVER_PX), if any. */
  private hover(ev: PointerEvent): void {
    const drawing = this.drawing;
    const vs = this.stage.viewState;
    if (!this.on || !drawing || !vs || !this.info) {
      return;
    }
    const rect = this.stage.node.getBoundingClientRect();
    const region = regionOf(vs, rect.width, rect.height);
    const perPx = (region[2] - region[0]) / Math.max(rect.width, 1);
    const x = region[0] + (ev.clientX - rect.left) * perPx;
    const y = region[1] + (ev.clientY - rect.top) * perPx;
    const found = nearestPoint(drawing, x, y, HOVER_PX * perPx);
    this.named(found < 0 ? null : this.info.genes[drawing.genes[found]].name);
  }

  private named(gene: string | null): void {
    this.hoverNote.textContent = gene ? `Transcript: ${gene}` : '';
    if (gene) {
      this.stage.node.dataset.pointGene = gene;
    } else {
      delete this.stage.node.dataset.pointGene;
    }
  }
}
