/**
 * A figure drawn with Canvas 2D (no WebGL, or WebGL gave up): the drawing, its camera as the
 * toolbar drives it, and drag, wheel and keys on it (the keys the WebGL stage takes: camera.ts).
 */

import { keyMove, panBy, regionOf, zoomBy, zoomRange, type Region, type ViewState } from '../spatial/camera';
import { CanvasPlot } from '../spatial/canvasplot';
import type { CanvasData } from '../spatial/raster';
import type { CanvasPayload } from '../shared/types';

/** What the toolbar drives, whichever drawing is on screen. */
export type Camera = {
  showSaved(): void;
  fit(): void;
  zoom(steps: number): void;
};

/** The 2D drawing of a figure, its legend and count left to the figure around it. */
export function makePlot(payload: CanvasPayload, data: CanvasData): CanvasPlot {
  const plot = new CanvasPlot(payload, data);
  plot.canvas.setAttribute('role', 'img');
  plot.canvas.setAttribute('aria-label', `${payload.n_cells.toLocaleString()} cells. Drag or arrow keys to pan; wheel, + and - to zoom.`);
  plot.reserveLegend = false;
  plot.node.replaceChildren(plot.canvas); // the legend and the count live beside, in this figure
  return plot;
}

/** The 2D drawing's camera now, in the WebGL stage's terms. */
export function plotState(plot: CanvasPlot): ViewState {
  const [w, hgt] = plot.size();
  const v = plot.view(w, hgt, 1);
  return { target: [v.target[0], v.target[1]], zoom: Math.log2(v.scale) };
}

export function plotRegion(plot: CanvasPlot): Region {
  const [w, hgt] = plot.size();
  return regionOf(plotState(plot), w, hgt);
}

/** The 2D drawing's camera; `moved` is told the region shown after each move. */
export function plotCamera(plot: CanvasPlot, moved: (region: Region) => void): Camera & { move(vs: ViewState): void } {
  const set = (vs: ViewState | null, fit = false) => {
    plot.camera = vs;
    plot.fit = fit;
    plot.draw();
    moved(plotRegion(plot));
  };
  return {
    showSaved: () => set(null),
    fit: () => set(null, true),
    zoom: steps => {
      const [w, hgt] = plot.size();
      set(zoomBy(plotState(plot), steps, zoomRange(plot.payload.bounds, w, hgt)));
    },
    move: vs => set(vs)
  };
}

/** Drag to pan, wheel to zoom, keys, on the 2D drawing. Returns what undoes it. */
export function interact2d(plot: CanvasPlot, moved: (region: Region) => void): () => void {
  const c = plot.canvas;
  c.tabIndex = 0;
  const camera = plotCamera(plot, moved);
  let drag: { x: number; y: number } | null = null;
  const down = (ev: PointerEvent) => {
    drag = { x: ev.clientX, y: ev.clientY };
    c.setPointerCapture?.(ev.pointerId);
  };
  const over = (ev: PointerEvent) => {
    if (drag) {
      const dx = ev.clientX - drag.x;
      const dy = ev.clientY - drag.y;
      drag = { x: ev.clientX, y: ev.clientY };
      camera.move(panBy(plotState(plot), -dx, -dy));
    }
  };
  const up = () => {
    drag = null;
  };
  const wheel = (ev: WheelEvent) => {
    ev.preventDefault();
    camera.zoom(ev.deltaY < 0 ? 1 : -1);
  };
  const key = (ev: KeyboardEvent) => {
    const move = keyMove(ev.key);
    if (!move) {
      return;
    }
    ev.preventDefault();
    if (move === 'saved') {
      camera.showSaved();
    } else if (move === 'fit') {
      camera.fit();
    } else if (move.zoom) {
      camera.zoom(move.zoom);
    } else {
      camera.move(panBy(plotState(plot), move.dx, move.dy));
    }
  };
  const events: [string, EventListener, AddEventListenerOptions?][] = [
    ['pointerdown', down as EventListener],
    ['pointermove', over as EventListener],
    ['pointerup', up],
    ['wheel', wheel as EventListener, { passive: false }],
    ['keydown', key as EventListener]
  ];
  for (const [name, fn, options] of events) {
    c.addEventListener(name, fn, options);
  }
  return () => {
    for (const [name, fn] of events) {
      c.removeEventListener(name, fn);
    }
  };
}
