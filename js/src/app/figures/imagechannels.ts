/**
 * A figure's image as its controls set it: the channels as planes (toggle, colour and contrast
 * each, recomposited here) and the tiles of finer pyramid levels for the region on screen,
 * drawn by the WebGL stage or the 2D drawing, whichever the figure shows now.
 */

import { h } from '../shared/dom';
import type { Region } from '../spatial/camera';
import type { CanvasPlot } from '../spatial/canvasplot';
import { figureChannels } from '../spatial/cellstore';
import { composite, limitsInSteps, type ChannelState } from '../spatial/channels';
import { splitReply } from '../shared/buffers';
import type { SpatialStage } from '../spatial/spatial';
import { TileGrid, type TileFrame } from '../spatial/tiles';
import type { Transport } from '../shared/transport';
import type { CanvasPayload, ImageChannel } from '../shared/types';
import type { CanvasData } from '../spatial/raster';
import { plotRegion } from './plot2d';

/** What the channels read of their figure (its drawing changes when WebGL gives up). */
export type ChannelsHost = {
  readonly transport: Transport;
  readonly version: number | string;
  readonly figureId: string;
  readonly payload: CanvasPayload;
  node(): HTMLElement;
  stage(): SpatialStage | null;
  plot(): CanvasPlot | null;
  /** The channels arrived: the legend lists them there instead. */
  loaded(): void;
  /** The image was recomposited to `rgba` (exports draw what is on screen). */
  recomposited(rgba: Uint8ClampedArray): void;
};

export class ImageChannels {
  readonly slot = h('div', { class: 'sds-channel-slot' });
  channels: { width: number; height: number; planes: Uint8Array[]; states: ChannelState[] } | null = null;
  /** The image's tiles of finer pyramid levels for the region on screen. */
  tiles: TileGrid | null = null;

  constructor(private readonly host: ChannelsHost) {}

  /** Ask for the image's channels as planes, then offer each one's toggle, color and contrast. */
  async load(): Promise<void> {
    const { image_key: key, image: shown } = this.host.payload;
    // the level loadCanvas chose for the view's pixels (the canvas reply's default otherwise)
    const reply = await figureChannels(this.host.transport, this.host.version, this.host.figureId, key, shown?.level ?? null);
    const { width, height, channels } = reply.data;
    const img = this.host.payload.image;
    if (!img || width !== img.width || height !== img.height) {
      return; // not the image on screen: keep the composited one
    }
    const { planes } = splitReply('channels', reply.data, reply.buffers);
    this.channels = { width, height, planes, states: channels.map(c => ({ ...c })) };
    this.host.loaded();
    this.render();
    const levels = reply.data.levels ?? [];
    const stage = this.host.stage();
    const plot = this.host.plot();
    if ((stage || plot) && levels.length) {
      const grid = new TileGrid(
        this.host.transport,
        this.host.version,
        this.host.figureId,
        levels,
        { width, bounds: img.bounds },
        () => this.show(grid.frame()),
        message => {
          this.host.node().dataset.tileError = message;
        },
        this.host.payload.image_key
      );
      grid.setChannels(this.channels.states);
      this.tiles = grid;
      (stage?.node ?? this.host.node()).dataset.tileLevels = String(levels.length);
      this.ask(stage ? stage.region() : plotRegion(plot!));
    }
  }

  /**
   * The camera shows `region`: ask the tile grid for what it needs there (it fetches only what
   * it lacks); nothing while the stage is off screen (it asks again when back).
   */
  ask(region: Region): void {
    const grid = this.tiles;
    const stage = this.host.stage();
    const screenWidth = stage ? stage.screen()[0] : this.host.plot()?.canvas.width;
    if (!grid || !screenWidth || stage?.offScreen) {
      return;
    }
    const since = performance.now();
    if (grid.update(region, screenWidth / Math.max(region[2] - region[0], 1e-12))) {
      this.show(grid.frame(), since);
    }
  }

  /** Draw the tiles of `frame` over the overview: the WebGL stage's layers, or the 2D drawing again. */
  private show(frame: TileFrame, since?: number): void {
    const stage = this.host.stage();
    const plot = this.host.plot();
    if (stage) {
      stage.setTiles(frame, since);
    } else if (plot) {
      plot.tiles = frame.tiles;
      plot.draw();
      this.host.node().dataset.tileWanted = String(frame.level);
      if (frame.complete) {
        this.host.node().dataset.tileLevel = String(frame.level);
        this.host.node().dataset.tiles = String(frame.tiles.filter(t => t.level === frame.level).length);
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
    const stage = this.host.stage();
    const plot = this.host.plot();
    this.tiles?.setChannels(ch.states);
    if (stage) {
      stage.setImage(rgba);
      if (this.tiles) {
        stage.setTiles(this.tiles.frame());
      }
    } else if (plot) {
      (plot as { data: CanvasData }).data = { ...plot.data, image: rgba };
      if (this.tiles) {
        plot.tiles = this.tiles.frame().tiles;
      }
      plot.draw();
    }
    this.host.recomposited(rgba); // exports draw what is on screen
  }

  private render(): void {
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
      const raw = (step: number) => state.range[0] + (step / 255) * (state.range[1] - state.range[0]);
      const range = (label: string, value: number, set: (v: number) => void) => {
        const r = h('input', {
          type: 'range',
          min: '0',
          max: '255',
          step: '1',
          value: String(value),
          class: 'sds-contrast',
          'aria-label': `${state.name} contrast ${label}`
        }) as HTMLInputElement;
        // the limit in the image's own intensities, read aloud and on hover (the track's 0-255 means nothing to a user)
        const say = (): void => {
          const words = intensity(raw(Number(r.value)), state.range);
          r.setAttribute('aria-valuetext', words);
          r.title = `${state.name} contrast ${label}: ${words}`;
        };
        say();
        r.addEventListener('input', () => {
          set(Number(r.value));
          say();
          this.recomposite();
        });
        return r;
      };
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
    this.slot.replaceChildren(
      h('div', { class: 'sds-legend-title', id: `sds-ch-${this.host.figureId}` }, 'Channels'),
      h('ul', { class: 'sds-channel-list', 'aria-label': 'Image channels' }, rows)
    );
  }


  /** The channels shown, in their colors now (the controls' if any, else as saved). */
  shown(): ImageChannel[] {
    if (!this.host.payload.image) {
      return [];
    }
    if (this.channels) {
      return this.channels.states.filter(c => c.visible).map(c => ({ name: c.name, color: c.color }));
    }
    return this.host.payload.image.channels;
  }

  /** The channels as the export request takes them (JSON), or undefined without controls. */
  exported(): string | undefined {
    return this.channels
      ? JSON.stringify(this.channels.states.map(({ name, color, visible, contrast_limits }) => ({ name, color, visible, contrast_limits })))
      : undefined;
  }
}

/** An intensity as a person reads it: whole numbers where the image's range is wide, else three significant digits. */
export function intensity(value: number, range: [number, number]): string {
  const span = Math.abs(range[1] - range[0]);
  return span >= 100 ? Math.round(value).toLocaleString('en-US') : Number(value.toPrecision(3)).toLocaleString('en-US', { maximumSignificantDigits: 3 });
}

function hex6(color: string): string {
  const m = /^#?([0-9a-f]{3}|[0-9a-f]{6})([0-9a-f]{2})?$/i.exec(color.trim());
  if (!m) {
    return '#ffffff';
  }
  const s = m[1].length === 3 ? [...m[1]].map(c => c + c).join('') : m[1];
  return `#${s.toLowerCase()}`;
}
