/**
 * The layers a figure's version offers beside its cells, each found by asking the service
 * which elements the version holds: labels (segmentation masks), transcripts (a points
 * element) and the other shapes elements (nucleus boundaries). Nothing is offered on the 2D drawing, or by an older server that cannot say.
 */

import type { Transport } from '../shared/transport';
import type { CanvasPayload, CanvasShapeLayer } from '../shared/types';
import type { LayerContext } from './layercontext';
import { LabelsLayer } from './labels';
import type { LayersMenu } from './layersmenu';
import { ShapesLayers } from './shapes';
import { TranscriptsLayer } from './transcripts';

/**
 * The figure's layer context (its layers ask in its version and coordinate system, and draw on its
 * stage), and where an offered layer goes: its row in the figure's `layers` menu, its legend after `legendSlot`.
 */
export type OfferHost = LayerContext & {
  readonly payload: CanvasPayload;
  readonly node: HTMLElement;
  readonly layers: LayersMenu;
  readonly legendSlot: HTMLElement;
};

/** The kinds of element a version lists by their own request. */
type Listing = 'labels' | 'points';

/** Each transport's answers to "which elements of a kind has this version", asked once per version and kind. */
const listings = new WeakMap<Transport, Map<string, Promise<string[]>>>();

/**
 * The version's elements of `kind` in coordinate system `system` ("" for the default); every figure of
 * a version and system shares one ask; a failure is asked again.
 */
export function elementsOf(transport: Transport, version: number | string, kind: Listing, system = ''): Promise<string[]> {
  let known = listings.get(transport);
  if (!known) {
    listings.set(transport, (known = new Map()));
  }
  const key = `${kind}:${version}:${system}`;
  let found = known.get(key);
  if (!found) {
    found = transport.request(kind, { version, coordinate_system: system }).then(r => r.data.elements);
    known.set(key, found);
    found.catch(() => known.delete(key));
  }
  return found;
}

/**
 * A layer as the figure's spec saved it: shown as saved once the figure is on screen (now, when it
 * already is; else at the stage's first on-screen report), never for a figure nobody scrolled to.
 */
function restoreAsSaved<S>(host: OfferHost, layer: { restore(saved: S): void; onScreen(): void }, saved: S): void {
  layer.restore(saved);
  if (host.stage.node.dataset.live === 'true') {
    layer.onScreen();
  }
}

/** The elements the service lists, or none when it cannot say (an older server). */
async function listed(host: OfferHost, kind: Listing): Promise<string[]> {
  try {
    return await elementsOf(host.transport, host.version, kind, host.system);
  } catch {
    return [];
  }
}

/** The version's labels elements as a layer, as the figure's spec saved it (else off: the figure turns it on when it draws no cells). */
export async function offerLabels(host: OfferHost): Promise<LabelsLayer | null> {
  const elements = await listed(host, 'labels');
  if (!elements.length) {
    return null;
  }
  const layer = new LabelsLayer(host, elements);
  host.layers.add(layer.controls);
  host.node.dataset.labelsElements = elements.join(',');
  const saved = host.payload.labels;
  if (saved && elements.includes(saved.element)) {
    restoreAsSaved(host, layer, saved);
  }
  return layer;
}

/** The version's first points element (or the one its spec saved) as a layer. */
export async function offerTranscripts(host: OfferHost): Promise<TranscriptsLayer | null> {
  const elements = await listed(host, 'points');
  if (!elements.length) {
    return null;
  }
  const saved = host.payload.points;
  const element = saved && elements.includes(saved.element) ? saved.element : elements[0];
  const layer = new TranscriptsLayer(host, element);
  host.layers.add(layer.controls);
  host.legendSlot.after(layer.legend);
  host.node.dataset.pointsElement = element;
  if (saved && saved.element === element) {
    restoreAsSaved(host, layer, saved);
  }
  return layer;
}

/**
 * The shapes layers as the figure's spec saved them, and the cells' own element shown when its
 * outlines come by tile (past MAX_SHAPES the cells are drawn as points; zoomed in, this layer
 * outlines them) unless the spec saved it hidden.
 */
function withCellsByTile(payload: CanvasPayload, listing: { elements: string[]; colors: string[] }): CanvasShapeLayer[] {
  const saved = payload.shape_layers ?? [];
  const cells = payload.shapes_by_tile;
  const at = cells ? listing.elements.indexOf(cells) : -1;
  if (!cells || at < 0 || saved.some(layer => layer.element === cells)) {
    return saved;
  }
  return [...saved, { element: cells, color: listing.colors[at] ?? '#ffffff', visible: true, opacity: 1 }];
}

/**
 * The coordinate system's shapes elements other than the figure's cells, a row each, restored as
 * the figure's spec saved them (`shape_layers`); none offered by an older server that cannot say.
 */
export async function offerShapes(host: OfferHost): Promise<ShapesLayers | null> {
  let listing: { elements: string[]; colors: string[] };
  try {
    listing = (await host.transport.request('shapes', { version: host.version, coordinate_system: host.system })).data;
  } catch {
    return null;
  }
  const cells = host.payload.shapes?.element;
  const offered = listing.elements.map((name, i) => [name, listing.colors[i]] as const).filter(([name]) => name !== cells);
  if (!offered.length) {
    return null;
  }
  const layers = new ShapesLayers(host, offered.map(([name]) => name), offered.map(([, color]) => color));
  layers.rows.forEach(row => host.layers.add(row.controls));
  host.legendSlot.after(layers.legend);
  host.node.dataset.shapesElements = offered.map(([name]) => name).join(',');
  restoreAsSaved(host, layers, withCellsByTile(host.payload, listing));
  return layers;
}
