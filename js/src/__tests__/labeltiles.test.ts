import { describe, expect, it } from 'vitest';

import { LabelTiles, decodeLabelTile, labelFrame, type LabelTile } from '../app/spatial/labeltiles';
import type { ImageLevel, LabelsTileData } from '../app/shared/types';
import { FakeTransport } from './fixtures';

/** A 1,024 px mask over 100 units, 512 px tiles, two levels (the coarser one tile). */
const LEVELS: ImageLevel[] = [
  { width: 1024, height: 1024, tile: 512, bounds: [0, 0, 100, 100] },
  { width: 512, height: 512, tile: 512, bounds: [0, 0, 100, 100] }
];

function reply(level: number, x: number, y: number, width: number, height: number): { data: LabelsTileData; buffers: ArrayBuffer[] } {
  const rgba = new Uint8Array(width * height * 4);
  rgba.set([200, 100, 50, 255], 0); // the first pixel: an outline pixel
  const data: LabelsTileData = { element: 'cells', level, x, y, width, height, bounds: [0, 0, 50, 50], style: 'fill' };
  return { data, buffers: [rgba.buffer] };
}

describe('labels tiles', () => {
  it('decodes a reply into RGBA of its size', () => {
    const tile = decodeLabelTile(reply(0, 1, 0, 4, 3));
    expect(tile.key).toBe('0/1/0');
    expect(tile.rgba.length).toBe(4 * 3 * 4);
    expect([...tile.rgba.slice(0, 4)]).toEqual([200, 100, 50, 255]);
  });

  it('asks for the tiles on screen at the level the zoom needs, coarser held tiles standing in', () => {
    const held = new Map<string, LabelTile>();
    const zoomed = labelFrame(LEVELS, [0, 0, 60, 40], 1024 / 100, key => held.get(key));
    expect(zoomed.want.map(t => t.key)).toEqual(['0/0/0', '0/1/0']);
    expect(zoomed.draw).toEqual([]);
    held.set('1/0/0', decodeLabelTile(reply(1, 0, 0, 512, 512)));
    const standing = labelFrame(LEVELS, [0, 0, 60, 40], 1024 / 100, key => held.get(key));
    expect(standing.draw.map(t => t.key)).toEqual(['1/0/0']);
    expect(labelFrame(LEVELS, [0, 0, 100, 100], 512 / 100, key => held.get(key)).want).toEqual([]);
  });

  it('asks the service once per tile and draws it when it arrives', async () => {
    const transport = new FakeTransport()
      .on('labels', () => ({ elements: ['cells'], element: 'cells', levels: LEVELS }))
      .on('labels_tile', p => reply(p.level ?? 0, p.x ?? 0, p.y ?? 0, 512, 512));
    let changes = 0;
    const tiles = new LabelTiles({ transport, version: 2, system: '' }, 'cells', 'outline', () => changes++);
    await tiles.open();
    expect(tiles.frame([0, 0, 100, 100], 512 / 100)).toEqual([]);
    expect(tiles.frame([0, 0, 100, 100], 512 / 100)).toEqual([]); // on its way: not asked again
    await new Promise(resolve => setTimeout(resolve, 0));
    expect(transport.callsOf('labels_tile')).toEqual([{ version: 2, element: 'cells', level: 1, x: 0, y: 0, style: 'outline', coordinate_system: '' }]);
    expect(changes).toBe(1);
    expect(tiles.frame([0, 0, 100, 100], 512 / 100).map(t => t.key)).toEqual(['1/0/0']);
  });
});
