import { describe, expect, it } from 'vitest';
import { splitByLayout, splitDrawing, splitReply } from '../app/shared/buffers';
import { LAYOUTS } from '../app/shared/layouts.gen';
import type { CellsData, CanvasPayload } from '../app/shared/types';

const cells = (n: number, shapes: CellsData['shapes'] = null): CellsData => ({ key: 'k', n_cells: n, bounds: [0, 0, 1, 1], shapes });

/** `bytes` placed at `offset` of a larger buffer, as a DataView (what a framed reply hands out). */
function at(offset: number, bytes: Uint8Array): DataView {
  const whole = new Uint8Array(offset + bytes.byteLength);
  whole.set(bytes, offset);
  return new DataView(whole.buffer, offset, bytes.byteLength);
}

describe('splitting a reply by its generated layout', () => {
  it('names each buffer as a typed view of the very bytes sent (no copy when aligned)', () => {
    const x = new Float32Array([1, 2, 3]);
    const y = new Float32Array([4, 5, 6]);
    const radius = new Float32Array([0.5, 0.5, NaN]);
    const split = splitReply('cells', cells(3, { kind: 'circles', element: 'spots' }), [x.buffer, y.buffer, radius.buffer]);
    expect([...split.x]).toEqual([1, 2, 3]);
    expect(split.y.buffer).toBe(y.buffer);
    expect(split.radius?.length).toBe(3);
    expect(split.starts).toBeUndefined();
  });

  it('names the missing buffer', () => {
    const x = new Float32Array(3).buffer;
    expect(() => splitReply('cells', cells(3), [x])).toThrow(/cells reply is missing its y buffer/);
    const polygons = cells(3, { kind: 'polygons', element: 'cells', n_vertices: 4 });
    expect(() => splitReply('cells', polygons, [x, x, new Uint32Array(4).buffer])).toThrow(/missing its vertices buffer/);
  });

  it('refuses buffers the layout does not account for', () => {
    const x = new Float32Array(3).buffer;
    expect(() => splitReply('cells', cells(3), [x, x, x])).toThrow(/has 3 buffers; its layout accounts for 2/);
  });

  it('refuses a buffer of the wrong length, saying the rule', () => {
    const polygons = cells(2, { kind: 'polygons', element: 'cells', n_vertices: 3 });
    const xy = new Float32Array(2).buffer;
    expect(() => splitReply('cells', polygons, [xy, xy, new Uint32Array(2).buffer, new Float32Array(6).buffer])).toThrow(
      /starts buffer has 2 uint32 values; n_cells \+ 1 = 3/
    );
    expect(() => splitReply('cells', polygons, [xy, xy, new Uint32Array([0, 1, 3]).buffer, new Float32Array(5).buffer])).toThrow(
      /vertices buffer has 5 float32 values; shapes.n_vertices × 2 = 6/
    );
  });

  it('refuses bytes that are not whole elements', () => {
    expect(() => splitReply('cells', cells(1), [new Uint8Array(5).buffer, new Float32Array(1).buffer])).toThrow(/x buffer has 5 bytes, not whole float32 values/);
  });

  it('copies a buffer at a misaligned offset into an aligned one, values intact', () => {
    const x = new Float32Array([1.5, -2, 3.25]);
    const misaligned = at(1, new Uint8Array(x.buffer));
    const aligned = at(4, new Uint8Array(x.buffer));
    const split = splitReply('cells', cells(3), [misaligned, aligned]);
    expect([...split.x]).toEqual([1.5, -2, 3.25]);
    expect(split.x.buffer).not.toBe(misaligned.buffer); // copied: a Float32Array cannot start at byte 1
    expect(split.y.buffer).toBe(aligned.buffer); // aligned: a view of the same bytes
    expect([...split.y]).toEqual([1.5, -2, 3.25]);
  });

  it('reads the element type the payload chooses: byte or two-byte codes, or float values', () => {
    const categorical = { mode: 'categorical' as const, column: 'c', categories: ['a'], colors: ['#fff'] };
    expect(splitReply('color_values', { ...categorical, codes: 'uint8' }, [new Uint8Array(4).buffer]).values).toBeInstanceOf(Uint8Array);
    expect(splitReply('color_values', categorical, [new Uint16Array(4).buffer]).values).toBeInstanceOf(Uint16Array);
    const continuous = { mode: 'continuous' as const, column: 'v', colormap: 'viridis', min: 0, max: 1, lut: [] };
    expect(splitReply('color_values', continuous, [new Float32Array(4).buffer]).values).toBeInstanceOf(Float32Array);
    expect(splitReply('color_values', { mode: 'none' }, []).values).toBeUndefined();
  });

  it('splits repeated buffers into one array, each checked', () => {
    const tile = { level: 0, x: 0, y: 0, width: 2, height: 2, bounds: [0, 0, 2, 2] as [number, number, number, number], channels: 2 };
    const planes = splitReply('image_tile', tile, [new Uint8Array(4).buffer, new Uint8Array(4).buffer]).planes;
    expect(planes.map(p => p.length)).toEqual([4, 4]);
    expect(() => splitReply('image_tile', tile, [new Uint8Array(4).buffer, new Uint8Array(3).buffer])).toThrow(/planes\[1\] buffer has 3 uint8 values; width × height = 4/);
  });

  it('leaves a length unchecked when an older payload lacks the field it reads', () => {
    const polygons = cells(1, { kind: 'polygons', element: 'cells' }); // no n_vertices
    const split = splitReply('cells', polygons, [new Float32Array(1).buffer, new Float32Array(1).buffer, new Uint32Array([0, 3]).buffer, new Float32Array(6).buffer]);
    expect(split.vertices?.length).toBe(6);
  });

  it('splits a whole drawing: x, y, values, image, then the shapes', () => {
    const payload = {
      n_cells: 1,
      bounds: [0, 0, 1, 1],
      viewport: { target: [0, 0], zoom: 0, rotation: 0 },
      color: { mode: 'continuous', column: 'v', colormap: 'viridis', min: 0, max: 1, lut: [] },
      point_size: 4,
      image: { width: 1, height: 2, bounds: [0, 0, 1, 1], channels: [] },
      shapes: { kind: 'circles', element: 's' }
    } as CanvasPayload;
    const f = (n: number) => new Float32Array(n).buffer;
    const split = splitDrawing(payload, [f(1), f(1), f(1), new Uint8Array(8).buffer, f(1)]);
    expect(split.image?.length).toBe(8);
    expect(split.radius?.length).toBe(1);
    expect(() => splitByLayout('color_values', LAYOUTS.color_values, payload.color, [])).toThrow(/missing its values buffer/);
    expect(splitByLayout('canvas', LAYOUTS.canvas, payload, [])).toEqual({}); // a figure's colours come by color_values
  });
});

describe('a large tissue’s cells as uint16 codes of their quantum', () => {
  it('reads back to data units within half a step, NaN for NO_POSITION, once per reply', async () => {
    const { cellGeometry, NO_POSITION } = await import('../app/spatial/cellstore');
    const quantum = { x0: 100, y0: -50, step: 0.5, radius_step: 0.01 };
    const data: CellsData = { ...cells(3, { kind: 'circles', element: 'cells' }), quantum };
    const reply = {
      data,
      // x codes 0, 10, NO_POSITION and y codes 4, 0, 2 as differences modulo 2^16; radii as they are
      buffers: [new Uint16Array([0, 10, NO_POSITION - 10]).buffer, new Uint16Array([4, 65532, 2]).buffer, new Uint16Array([500, NO_POSITION, 1]).buffer]
    };
    const geometry = cellGeometry(reply);
    expect(geometry.x).toBeInstanceOf(Float32Array);
    expect([...geometry.x]).toEqual([100, 105, NaN]);
    expect([...geometry.y]).toEqual([-48, -50, -49]);
    expect(geometry.radius![0]).toBeCloseTo(5, 5);
    expect(Number.isNaN(geometry.radius![1])).toBe(true);
    expect(cellGeometry(reply)).toBe(geometry); // decoded once, kept with the reply
    // without a quantum the float32 buffers are the geometry as sent
    const plain = { data: cells(2), buffers: [new Float32Array([1, 2]).buffer, new Float32Array([3, 4]).buffer] };
    expect([...cellGeometry(plain).y]).toEqual([3, 4]);
  });
});
