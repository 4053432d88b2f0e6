// The page bench_outlines.py bundles (esbuild) and opens: one deck.gl canvas with the cells
// of a level-0 view of the demo (octagons), drawn three ways. window.sdsOutlines.frames(kind, n)
// draws n frames (the camera nudged each time) and returns each frame's time, read back
// (gl.readPixels) so that the software GPU has finished it.
import { Deck, OrthographicView } from '@deck.gl/core';
import { PathLayer, ScatterplotLayer, SolidPolygonLayer } from '@deck.gl/layers';

import { CellDiscLayer, discData } from '../../js/src/app/spatial/layers/disclayer';
import { discVertices, edgeQuads, polygonsOf } from '../../js/src/app/spatial/geometry';

import { CellEdgeLayer, CellOutlineLayer, edgeData, outlineData } from '../../js/src/app/spatial/layers/outlinelayer';
import { paintPoints } from '../../js/src/app/spatial/raster';

function octagons(n, side, radius) {
  const starts = new Uint32Array(n + 1);
  const vertices = new Float32Array(n * 9 * 2);
  let seed = 7;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  for (let i = 0; i < n; i++) {
    const cx = random() * side;
    const cy = random() * side;
    starts[i] = 9 * i;
    for (let k = 0; k < 9; k++) {
      const a = ((k % 8) * Math.PI) / 4; // the ring closed: vertex 8 repeats vertex 0
      vertices[2 * (9 * i + k)] = cx + radius * Math.cos(a);
      vertices[2 * (9 * i + k) + 1] = cy + radius * Math.sin(a);
    }
  }
  starts[n] = 9 * n;
  return { starts, vertices };
}

async function open({ cells, width, side, radius, discs }) {
  const { starts, vertices } = octagons(cells, side, radius);
  const picked = Array.from({ length: cells }, (_, i) => i);
  const colors = Uint32Array.from(picked, i => [0xff2828d6, 0xffb4771f, 0xff0e7fff][i % 3]);
  const p = polygonsOf(picked, starts, vertices, colors, starts[cells]);
  // discs: `discs` points (the geometry budget) of 4 px radius, outlined, at random
  const n = discs;
  const centres = new Float32Array(2 * n);
  for (let i = 0; i < 2 * n; i++) centres[i] = ((i * 7919) % 1000003) / 1000003 * side;
  const fill = new Uint8Array(4 * n).fill(200);
  const line = new Uint8Array(4 * n);
  for (let i = 0; i < n; i++) line[4 * i + 3] = 190;
  const quads = discVertices(n, centres, null, 4, fill, line);
  const canvas = document.createElement('canvas');
  canvas.style.width = canvas.style.height = `${width}px`;
  document.body.appendChild(canvas);
  const layers = {
    fill: () =>
      new SolidPolygonLayer({
        id: 'fill',
        data: { length: cells, startIndices: p.starts, attributes: { getPolygon: { value: p.vertices, size: 2 }, getFillColor: { value: p.fills, size: 4, normalized: true } } },
        _normalize: false,
        positionFormat: 'XY',
        opacity: 0.45
      }),
    lines: () =>
      new CellOutlineLayer({
        id: 'lines',
        data: outlineData(p.segments, p.segmentColors)
      }),
    edges: () => new CellEdgeLayer({ id: 'edges', data: edgeData(edgeQuads(p.segments, p.segmentColors)) }),
    discs: () =>
      new CellDiscLayer({
        id: 'discs',
        data: discData(quads),
        stroked: true
      }),
    scatter: () =>
      new ScatterplotLayer({
        id: 'scatter',
        data: { length: n, attributes: { getPosition: { value: centres, size: 2 }, getFillColor: { value: fill, size: 4, normalized: true }, getLineColor: { value: line, size: 4, normalized: true } } },
        positionFormat: 'XY',
        radiusUnits: 'pixels',
        getRadius: 4,
        stroked: true,
        lineWidthUnits: 'pixels',
        getLineWidth: 1
      }),
    paths: () =>
      new PathLayer({
        id: 'paths',
        data: { length: cells, startIndices: p.starts, attributes: { getPath: { value: p.vertices, size: 2 }, getColor: { value: p.fills, size: 4, normalized: true } } },
        _pathType: 'open',
        positionFormat: 'XY',
        widthUnits: 'pixels',
        getWidth: 1.5
      })
  };
  let loaded;
  const ready = new Promise(resolve => (loaded = resolve));
  const zoom = Math.log2(width / side);
  const deck = new Deck({
    canvas,
    width,
    height: width,
    views: new OrthographicView({ flipY: true }),
    viewState: { target: [side / 2, side / 2, 0], zoom },
    deviceProps: { webgl: { preserveDrawingBuffer: true, antialias: false } },
    parameters: { depthCompare: 'always', depthWriteEnabled: false },
    useDevicePixels: 1,
    onLoad: () => loaded()
  });
  await ready;
  const gl = deck.device.gl;
  // the drawing buffer takes the canvas's size on a later animation frame
  while (gl.drawingBufferWidth !== width) {
    await new Promise(resolve => requestAnimationFrame(resolve));
  }
  const pixel = new Uint8Array(4);
  const info = gl.getExtension('WEBGL_debug_renderer_info');
  return {
    renderer: info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER),
    segments: p.segments.length / 4,
    frames(kind, n) {
      deck.setProps({ layers: [layers[kind]()] }); // a new layer: a finalized one cannot be added back
      const times = [];
      for (let f = -2; f < n; f++) {
        const start = performance.now();
        deck.setProps({ viewState: { target: [side / 2 + (f % 4), side / 2, 0], zoom } });
        // the loop's own frame, now: layers and view updated, then drawn (deck.redraw only draws)
        deck.animationLoop.redraw();
        gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, pixel);
        if (f >= 0) times.push((performance.now() - start) / 1000); // two frames first: upload, compile
      }
      return { times, lit: litShare(gl) };
    }
  };
}

/** The share of the frame's pixels that are not black: proof that the layer drew. */
function litShare(gl) {
  const w = gl.drawingBufferWidth;
  const h = gl.drawingBufferHeight;
  const all = new Uint8Array(w * h * 4);
  gl.readPixels(0, 0, w, h, gl.RGBA, gl.UNSIGNED_BYTE, all);
  let lit = 0;
  for (let i = 0; i < all.length; i += 4) {
    if (all[i] + all[i + 1] + all[i + 2] > 0) lit++;
  }
  return lit / (w * h);
}

/**
 * The raster of many cells (the view's mode while more than a few thousand are in view):
 * `cells` octagons `radius` px across at random over a `side` px square, each painted as its
 * polygon or as a disc of its typical width, ringed; each call's time in seconds, `rounds` calls.
 */
function raster({ cells, side, radius, rounds }, kind) {
  const { starts, vertices } = octagons(cells, side, radius);
  const x = new Float32Array(cells);
  const y = new Float32Array(cells);
  for (let i = 0; i < cells; i++) {
    x[i] = vertices[18 * i] - radius;
    y[i] = vertices[18 * i + 1];
  }
  const view = { width: side, height: side, target: [side / 2, side / 2], scale: 1, rotation: 0 };
  const sizing = kind === 'polygons' ? { polygons: { starts, vertices } } : 2 * radius;
  const times = [];
  let drawn = 0;
  for (let r = 0; r < rounds; r++) {
    const pixels = new Uint8ClampedArray(side * side * 4);
    const start = performance.now();
    drawn = paintPoints(pixels, view, x, y, i => 0xff000000 | ((i * 2654435761) >>> 8), sizing, null, true);
    times.push((performance.now() - start) / 1000);
  }
  return { times, drawn };
}

window.sdsOutlines = { open, raster };
