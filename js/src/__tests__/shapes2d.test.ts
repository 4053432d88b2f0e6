import { describe, expect, it } from 'vitest';

import { cellModeAt, cellPaths, decodeCanvas, type CanvasData, type View } from '../app/spatial/raster';
import type { CanvasPayload } from '../app/shared/types';

/** Three square cells 10 units wide at (10,10), (50,50), (90,90); the last one "stroma". */
function squares(): { payload: CanvasPayload; data: CanvasData } {
  const centres = [10, 50, 90];
  const vertices: number[] = [];
  for (const c of centres) {
    vertices.push(c - 5, c - 5, c + 5, c - 5, c + 5, c + 5, c - 5, c + 5);
  }
  const payload: CanvasPayload = {
    n_cells: 3,
    bounds: [0, 0, 100, 100],
    viewport: { target: [50, 50], zoom: 0, rotation: 0 },
    color: { mode: 'categorical', column: 'regions', categories: ['tumor', 'stroma'], colors: ['#ff0000', '#00ff00'] },
    point_size: 2,
    image: null,
    shapes: { kind: 'polygons', element: 'cell_boundaries' }
  } as CanvasPayload;
  // the buffers in the order the service sends them, through the one decoder
  const buffers = [
    new Float32Array(centres),
    new Float32Array(centres),
    new Uint16Array([0, 0, 1]),
    new Uint32Array([0, 4, 8, 12]),
    new Float32Array(vertices)
  ].map(a => new DataView(a.buffer));
  return { payload, data: decodeCanvas(payload, buffers) };
}

const view = (scale: number, target: [number, number] = [50, 50], size = 100): View => ({
  width: size,
  height: size,
  target,
  scale,
  rotation: 0
});

describe('cell shapes in the 2D drawing and its exports', () => {
  it('chooses points, filled or outlined by the cell size on screen, as the WebGL view does', () => {
    expect(cellModeAt(10, 0.2)).toBe('points'); // 2 px
    expect(cellModeAt(10, 1)).toBe('filled'); // 10 px
    expect(cellModeAt(10, 2)).toBe('outlined'); // 20 px
    expect(cellModeAt(0, 100)).toBe('points'); // no outlines
  });

  it('draws the polygons from the canvas reply, grouped by color, in screen coordinates', () => {
    const { data, payload } = squares();
    expect(cellPaths(data, payload.color, view(0.2))).toBeNull(); // too small: points
    const paths = cellPaths(data, payload.color, view(1))!;
    expect(paths.mode).toBe('filled');
    expect(paths.drawn).toBe(3);
    // tumor (red, packed ABGR) holds two cells, stroma one
    expect([...paths.groups.keys()]).toEqual([0xff0000ff, 0xff00ff00]);
    // scale 1 about (50, 50) on a 100 px view: data = screen
    expect(paths.groups.get(0xff0000ff)).toBe('M5 5L15 5L15 15L5 15ZM45 45L55 45L55 55L45 55Z');
    expect(paths.groups.get(0xff00ff00)).toBe('M85 85L95 85L95 95L85 95Z');
  });

  it('leaves out cells out of view and of hidden categories', () => {
    const { data } = squares();
    // zoomed to 2x on the middle cell: the corner cells are off screen
    const zoomed = cellPaths(data, { mode: 'categorical', column: 'regions', categories: ['tumor', 'stroma'], colors: ['#ff0000', '#00ff00'] }, view(2))!;
    expect(zoomed.mode).toBe('outlined');
    expect(zoomed.drawn).toBe(1);
    expect(zoomed.groups.get(0xff0000ff)).toBe('M40 40L60 40L60 60L40 60Z');
    const hidden = cellPaths(data, { mode: 'categorical', column: 'regions', categories: ['tumor', 'stroma'], colors: ['#ff0000', '#00ff0000'] }, view(1))!;
    expect(hidden.drawn).toBe(2);
    expect(hidden.groups.size).toBe(1);
  });

  it('draws circles with their radius in data units', () => {
    const data: CanvasData = {
      x: new Float32Array([50, 500]),
      y: new Float32Array([50, 500]),
      value: null,
      image: null,
      shapes: { kind: 'circles', radius: new Float32Array([4, 4]) }
    };
    const paths = cellPaths(data, { mode: 'none' }, view(2), '#00ff00')!;
    expect(paths.drawn).toBe(1);
    // r = 4 units * 2 px: from (42, 50) two arcs across 16 px
    expect(paths.groups.get(0xff00ff00)).toBe('M42 50a8 8 0 1 0 16 0a8 8 0 1 0 -16 0Z');
  });

});
