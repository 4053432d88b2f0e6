import { afterEach, describe, expect, it } from 'vitest';
import { KeyedCache, cellCache, colorCacheOf, loadCanvas, overviewCache, sharedColorValues } from '../app/spatial/cellstore';
import { colorValues } from '../app/spatial/raster';
import type { Reply } from '../app/shared/transport';
import type { CanvasColor, CanvasPayload, CellsData, ChannelsData } from '../app/shared/types';
import { FakeTransport } from './fixtures';

/** A figure's own part as the server sends it: the payload with the names of its parts, no buffers. */
function canvasReply(cellsKey: string, image = false, colorKey = 'col-c'): Reply<CanvasPayload> {
  return {
    data: {
      n_cells: 3,
      bounds: [0, 0, 2, 2],
      viewport: { target: [1, 1], zoom: 0, rotation: 0 },
      color: { mode: 'categorical', column: 'c', categories: ['a', 'b'], colors: ['#ff0000', '#00ff00'] },
      point_size: 1,
      image: image ? { width: 2, height: 1, bounds: [0, 0, 2, 1], channels: [{ name: 'dapi', color: '#0000ff' }] } : null,
      shapes: { kind: 'circles', element: 'spots' },
      cells_key: cellsKey,
      color_keys: { c: colorKey },
      ...(image ? { image_key: 'img-1' } : {})
    },
    buffers: []
  };
}

/** The colours of column `c` as color_values answers them (uint8 codes, one a cell). */
function colorsReply(): Reply<CanvasColor> {
  return {
    data: { mode: 'categorical', column: 'c', categories: ['a', 'b'], colors: ['#ff0000', '#00ff00'], codes: 'uint8' },
    buffers: [new Uint8Array([0, 1, 0]).buffer]
  };
}

function cellsReply(key: string, x0: number): Reply<CellsData> {
  return {
    data: { key, n_cells: 3, bounds: [0, 0, 2, 2], shapes: { kind: 'circles', element: 'spots' } },
    buffers: [new Float32Array([x0, 1, 2]).buffer, new Float32Array([0, 1, 2]).buffer, new Float32Array([0.5, 0.5, 0.5]).buffer]
  };
}

const channelsReply: Reply<ChannelsData> = {
  data: {
    width: 2,
    height: 1,
    bounds: [0, 0, 2, 1],
    levels: [],
    channels: [{ name: 'dapi', color: '#0000ff', visible: true, contrast_limits: [0, 255], range: [0, 255] }]
  },
  buffers: [new Uint8Array([255, 0]).buffer]
};

afterEach(() => {
  cellCache.clear();
  overviewCache.clear();
});

describe('a figure\'s colours come by name, not in its canvas reply', () => {
  it('two versions and figures coloured by the same stored column ask its colours once, under the name', async () => {
    const colorKeys: Record<number, string> = { 1: 'col-c1', 2: 'col-c1', 3: 'col-c3' }; // version 3 rewrote c
    const t = new FakeTransport()
      .on('canvas', p => canvasReply('k', false, colorKeys[Number(p.version)]))
      .on('cells', () => cellsReply('k', 0))
      .on('color_values', colorsReply);
    const first = await loadCanvas(t, 1, 'tissue');
    await loadCanvas(t, 2, 'tissue');
    await loadCanvas(t, 1, 'other');
    expect(t.callsOf('color_values')).toEqual([{ version: 1, figure: 'tissue', column: 'c', key: 'col-c1' }]);
    expect(first.data.value).toBeInstanceOf(Uint8Array);
    expect([...first.data.value!]).toEqual([0, 1, 0]);
    expect(first.payload.color).toEqual(colorsReply().data); // the description the values follow
    await loadCanvas(t, 3, 'tissue');
    expect(t.callsOf('color_values')).toHaveLength(2);
  });

  it('a figure that colours nothing asks for no colours', async () => {
    const t = new FakeTransport()
      .on('canvas', () => {
        const reply = canvasReply('k');
        return { ...reply, data: { ...reply.data, color: { mode: 'none' } } };
      })
      .on('cells', () => cellsReply('k', 0));
    const { data } = await loadCanvas(t, 1, 'tissue');
    expect(data.value).toBeNull();
    expect(t.callsOf('color_values')).toEqual([]);
  });
});

describe('cells sent once', () => {
  it('asks for the cells of a key once, whichever version or figure needs them', async () => {
    const keys: Record<number, string> = { 1: 'k-a', 2: 'k-a', 3: 'k-b' };
    const t = new FakeTransport()
      .on('canvas', p => canvasReply(keys[Number(p.version)]))
      .on('cells', p => cellsReply(p.key!, p.key === 'k-a' ? 0 : 9))
      .on('color_values', colorsReply);
    const first = await loadCanvas(t, 1, 'tissue');
    const second = await loadCanvas(t, 2, 'tissue'); // another version, the same cells
    await loadCanvas(t, 1, 'other'); // another figure of the version
    expect(t.callsOf('cells')).toEqual([{ version: 1, figure: 'tissue', key: 'k-a' }]);
    expect(second.data.x.buffer).toBe(first.data.x.buffer); // one copy of the bytes, shared
    expect([...first.data.value!]).toEqual([0, 1, 0]);
    expect(first.data.shapes).toEqual({ kind: 'circles', radius: new Float32Array([0.5, 0.5, 0.5]) });
    const third = await loadCanvas(t, 3, 'tissue'); // a version that rewrote the cells
    expect(t.callsOf('cells')).toHaveLength(2);
    expect(third.data.x[0]).toBe(9);
  });

  it('shares one request between figures asking at once, and keeps no failure', async () => {
    let fail = true;
    const t = new FakeTransport().on('canvas', () => canvasReply('k')).on('color_values', colorsReply).on('cells', async () => {
      if (fail) {
        fail = false;
        throw new Error('offline');
      }
      return cellsReply('k', 0);
    });
    const both = await Promise.allSettled([loadCanvas(t, 1, 'a'), loadCanvas(t, 1, 'b')]);
    expect(both.map(r => r.status)).toEqual(['rejected', 'rejected']);
    expect(t.callsOf('cells')).toHaveLength(1);
    await loadCanvas(t, 1, 'a'); // asked again after the failure
    expect(t.callsOf('cells')).toHaveLength(2);
  });

  it('blends the image from the overview channels it keeps by image key', async () => {
    const t = new FakeTransport()
      .on('canvas', () => canvasReply('k', true))
      .on('cells', () => cellsReply('k', 0))
      .on('color_values', colorsReply)
      .on('channels', () => channelsReply);
    const asked = performance.now();
    const { data, channels } = await loadCanvas(t, 1, 'tissue');
    expect([...data.image!]).toEqual([0, 0, 255, 255, 0, 0, 0, 255]); // blue where the plane is 255
    // the page's part after the replies arrived (positions, colours, the overview blended) is measured
    const decoded = performance.getEntriesByName('sds:canvas-decode', 'measure').filter(e => e.startTime >= asked);
    expect(decoded).toHaveLength(1);
    expect((decoded[0] as PerformanceMeasure).detail).toEqual({ n_cells: 3 });
    expect(channels).toBe(await overviewCache.get('img-1', () => Promise.reject(new Error('not asked again'))));
    await loadCanvas(t, 2, 'tissue');
    expect(t.callsOf('channels')).toHaveLength(1);
  });

  it('asks the overview at the level the view’s pixels need, kept per level', async () => {
    const levels = [4, 2, 1].map(w => ({ width: w, height: 1, tile: 4, bounds: [0, 0, 2, 1] as [number, number, number, number] }));
    const t = new FakeTransport()
      .on('canvas', () => {
        const reply = canvasReply('k', true);
        return { ...reply, data: { ...reply.data, image: { ...reply.data.image!, width: 2, level: 1, levels } } };
      })
      .on('cells', () => cellsReply('k', 0))
      .on('color_values', colorsReply)
      .on('channels', p => (p.level === 2 ? { ...channelsReply, data: { ...channelsReply.data, width: 1 }, buffers: [new Uint8Array([255]).buffer] } : channelsReply));
    const narrow = await loadCanvas(t, 1, 'tissue', 1); // one device pixel across: level 2 is enough
    expect(t.callsOf('channels')).toEqual([{ version: 1, figure: 'tissue', level: 2 }]);
    expect([narrow.payload.image!.level, narrow.payload.image!.width]).toEqual([2, 1]);
    expect([...narrow.data.image!]).toEqual([0, 0, 255, 255]);
    const wide = await loadCanvas(t, 1, 'tissue', 800); // wider than the default overview needs: the default
    expect(t.callsOf('channels')).toEqual([
      { version: 1, figure: 'tissue', level: 2 },
      { version: 1, figure: 'tissue', level: 1 }
    ]);
    expect([wide.payload.image!.level, wide.payload.image!.width]).toEqual([1, 2]);
    await loadCanvas(t, 2, 'tissue', 1);
    expect(t.callsOf('channels')).toHaveLength(2); // the same image's level 2, kept
  });

  it('reads category codes as one byte a cell when the reply says so, else two', () => {
    const color = { mode: 'categorical' as const, column: 'c', categories: ['a', 'b'], colors: ['#000', '#fff'] };
    const bytes = colorValues({ ...color, codes: 'uint8' }, new Uint8Array([1, 0, 1]).buffer);
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect([...bytes]).toEqual([1, 0, 1]);
    const wide = colorValues(color, new Uint16Array([1, 0, 1]).buffer); // replies before byte codes
    expect(wide).toBeInstanceOf(Uint16Array);
    expect([...wide]).toEqual([1, 0, 1]);
  });

  it('drops the least recently used replies past its byte bound', async () => {
    const cache = new KeyedCache<Reply<null>>(10);
    const reply = (n: number) => async () => ({ data: null, buffers: [new ArrayBuffer(n)] });
    await cache.get('a', reply(4));
    await cache.get('b', reply(4));
    await cache.get('a', reply(4)); // a is now the most recent
    await cache.get('c', reply(4));
    await Promise.resolve();
    expect(cache.fetched).toBe(3);
    expect(cache.bytes).toBe(8);
    await cache.get('b', reply(4)); // b was dropped: fetched again
    expect(cache.fetched).toBe(4);
  });
});

describe('colour data once per column and version of the same cells', () => {
  /** A transport whose color_values answers uint8 codes of the column asked (one request counted each). */
  function colorTransport(): FakeTransport {
    return new FakeTransport().on('color_values', params => ({
      data: { mode: 'categorical', column: params.column ?? params.gene ?? '', categories: ['a', 'b'], colors: ['#ff0000', '#00ff00'], codes: 'uint8' } as CanvasColor,
      buffers: [new Uint8Array([0, 1, 0]).buffer]
    }));
  }

  it('two figures of a version coloured by the same column make one request, at once or later', async () => {
    const transport = colorTransport();
    const [a, b] = await Promise.all([
      sharedColorValues(transport, { version: 2, figure: 'fig_a', column: 'niche' }, 'cells-1', 'c'),
      sharedColorValues(transport, { version: 2, figure: 'fig_b', column: 'niche' }, 'cells-1', null)
    ]);
    const later = await sharedColorValues(transport, { version: 2, figure: 'fig_c', column: 'niche' }, 'cells-1', 'c');
    expect(transport.callsOf('color_values')).toHaveLength(1);
    expect(b).toBe(a);
    expect(later.buffers[0]).toBe(a.buffers[0]);
    expect(colorCacheOf(transport).fetched).toBe(1);
  });

  it('asks again where the colours may differ: own column, other cells, version, gene, highlight, transport', async () => {
    const transport = colorTransport();
    await sharedColorValues(transport, { version: 2, figure: 'fig_a', column: 'niche' }, 'cells-1', null);
    await sharedColorValues(transport, { version: 2, figure: 'fig_b', column: 'niche' }, 'cells-1', 'niche'); // its own settings
    await sharedColorValues(transport, { version: 2, figure: 'fig_a', column: 'niche' }, 'cells-2', null); // another table
    await sharedColorValues(transport, { version: 1, figure: 'fig_a', column: 'niche' }, 'cells-1', null);
    await sharedColorValues(transport, { version: 2, figure: 'fig_a', column: 'niche', highlight: 'a' }, 'cells-1', null);
    await sharedColorValues(transport, { version: 2, figure: 'fig_a', gene: 'niche' }, 'cells-1', null);
    expect(transport.callsOf('color_values')).toHaveLength(6);
    await sharedColorValues(transport, { version: 'main', figure: 'fig_a', column: 'niche' }, 'cells-1', null);
    await sharedColorValues(transport, { version: 'main', figure: 'fig_a', column: 'niche' }, 'cells-1', null);
    await sharedColorValues(transport, { version: 2, figure: 'fig_a', column: 'niche' }, undefined, null);
    expect(transport.callsOf('color_values')).toHaveLength(9); // a branch's top moves; no cells key, no name
    const other = colorTransport(); // another panel's dataset: its version 2 is not this one's
    await sharedColorValues(other, { version: 2, figure: 'fig_a', column: 'niche' }, 'cells-1', null);
    expect(other.callsOf('color_values')).toHaveLength(1);
  });

  it('a column the canvas names is asked once under its name, by any version or figure, the name in the request', async () => {
    const transport = colorTransport();
    const v1 = { niche: 'k-niche', cluster: 'k-cluster-1' };
    const v2 = { niche: 'k-niche', cluster: 'k-cluster-2' }; // version 2 rewrote cluster
    await sharedColorValues(transport, { version: 1, figure: 'fig_a', column: 'niche' }, 'cells-1', null, v1);
    await sharedColorValues(transport, { version: 2, figure: 'fig_b', column: 'niche' }, 'cells-9', 'niche', v2);
    expect(transport.callsOf('color_values')).toEqual([{ version: 1, figure: 'fig_a', column: 'niche', key: 'k-niche' }]);
    await sharedColorValues(transport, { version: 1, figure: 'fig_a', column: 'cluster' }, 'cells-1', null, v1);
    await sharedColorValues(transport, { version: 2, figure: 'fig_a', column: 'cluster' }, 'cells-1', null, v2);
    await sharedColorValues(transport, { version: 2, figure: 'fig_a', column: 'niche', highlight: 'a' }, 'cells-1', null, v2);
    expect(transport.callsOf('color_values')).toHaveLength(4);
    expect(transport.callsOf('color_values')[3]).not.toHaveProperty('key'); // a highlight is not the named colours
  });
});
