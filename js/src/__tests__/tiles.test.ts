import { afterEach, describe, expect, it, vi } from 'vitest';

import { tileCache } from '../app/spatial/cellstore';

import type { ChannelState } from '../app/spatial/channels';
import { BURST_MS, CONCURRENCY, TileGrid, levelFor, tilesIn, type TileFrame } from '../app/spatial/tiles';
import type { ImageLevel } from '../app/shared/types';
import { FakeTransport } from './fixtures';

/** An 8,192 px image 1,740.8 units (µm) wide, 1,024 px tiles, five levels; the overview is level 2. */
const SIDE = 1740.8;
const LEVELS: ImageLevel[] = [8192, 4096, 2048, 1024, 512].map(w => ({ width: w, height: w, tile: Math.min(1024, w), bounds: [0, 0, SIDE, SIDE] }));
const OVERVIEW = { width: 2048, bounds: [0, 0, SIDE, SIDE] as [number, number, number, number] };
const CHANNELS: ChannelState[] = [
  { name: 'DAPI', color: '#0000ff', visible: true, contrast_limits: [0, 255], range: [0, 255] },
  { name: 'CD45', color: '#00ff00', visible: true, contrast_limits: [0, 255], range: [0, 255] }
];

describe('the level and the tiles a view needs', () => {
  it('takes the coarsest level that is still sharp on screen', () => {
    const perUnit = (l: number) => LEVELS[l].width / SIDE;
    expect(levelFor(LEVELS, perUnit(4))).toBe(4);
    expect(levelFor(LEVELS, perUnit(4) * 1.5)).toBe(4);
    expect(levelFor(LEVELS, perUnit(4) * 1.6)).toBe(3);
    expect(levelFor(LEVELS, perUnit(0))).toBe(0);
    expect(levelFor(LEVELS, perUnit(0) * 10)).toBe(0); // past the finest: the finest
  });

  it('lists the tiles a region shows, clipped to the level, with their bounds', () => {
    const unit = SIDE / 8192; // one level-0 pixel
    const tiles = tilesIn([1000 * unit, 10 * unit, 2100 * unit, 1030 * unit], LEVELS, 0);
    expect(tiles.map(t => t.key)).toEqual(['0/0/0', '0/1/0', '0/2/0', '0/0/1', '0/1/1', '0/2/1']);
    expect(tiles[1].bounds[0]).toBeCloseTo(1024 * unit);
    expect(tiles[1].bounds[2]).toBeCloseTo(2048 * unit);
    // a region past the image's edge: only the tiles that exist
    expect(tilesIn([SIDE - 1, SIDE - 1, SIDE + 500, SIDE + 500], LEVELS, 0).map(t => t.key)).toEqual(['0/7/7']);
    expect(tilesIn([-500, -500, -1, -1], LEVELS, 0)).toEqual([]);
    // the last tile of a level that is not a whole number of tiles stops at the level's edge
    const odd: ImageLevel[] = [{ width: 1500, height: 700, tile: 1024, bounds: [0, 0, 1500, 700] }];
    const last = tilesIn([0, 0, 1500, 700], odd, 0);
    expect(last.map(t => t.key)).toEqual(['0/0/0', '0/1/0']);
    expect(last[1].bounds).toEqual([1024, 0, 1500, 700]);
  });
});

/** A service of 2-channel tiles whose first plane holds the tile's level; replies wait until released. */
function service(onCall?: () => void) {
  const waiting: (() => void)[] = [];
  const t = new FakeTransport().on('image_tile', async params => {
    onCall?.(); // as the request goes out
    const level = Number(params.level);
    const lv = LEVELS[level];
    const [x, y] = [Number(params.x), Number(params.y)];
    const w = Math.min(lv.tile, lv.width - x * lv.tile);
    const hgt = Math.min(lv.tile, lv.height - y * lv.tile);
    const u = SIDE / lv.width;
    await new Promise<void>(resolve => waiting.push(resolve));
    return {
      data: { level, x, y, width: w, height: hgt, channels: 2, bounds: [x * lv.tile * u, y * lv.tile * u, (x * lv.tile + w) * u, (y * lv.tile + hgt) * u] as [number, number, number, number] },
      buffers: [new Uint8Array(w * hgt).fill(200).buffer, new Uint8Array(w * hgt).fill(100).buffer]
    };
  });
  const release = async () => {
    while (waiting.length) {
      waiting.shift()!();
      await new Promise(r => setTimeout(r, 0));
    }
    await new Promise(r => setTimeout(r, 0)); // the last arrival's draw (a turn after it)
  };
  return { t, release, waiting };
}

function grid(t: FakeTransport, drawn: TileFrame[] = []) {
  const g: TileGrid = new TileGrid(t, 3, 'fig', LEVELS, OVERVIEW, () => drawn.push(g.frame()));
  g.setChannels(CHANNELS.map(c => ({ ...c })));
  return g;
}

/** Screen px per unit that wants level `l` exactly. */
const at = (l: number) => LEVELS[l].width / SIDE;

describe('TileGrid', () => {
  it('asks nothing while the overview is sharp enough', () => {
    const { t } = service();
    const g = grid(t);
    expect(g.update([0, 0, SIDE, SIDE], at(2))).toBe(false);
    expect(t.callsOf('image_tile')).toEqual([]);
    expect(g.frame()).toMatchObject({ level: -1, tiles: [], complete: true });
  });

  it('asks for the tiles on screen of the level the zoom needs, all at once, with the channel ranges', async () => {
    const { t, release, waiting } = service();
    const drawn: TileFrame[] = [];
    const g = grid(t, drawn);
    // a quarter of the image at level-1 sharpness: 2 × 2 tiles of level 1
    expect(g.update([0, 0, SIDE / 2, SIDE / 2], at(1))).toBe(true);
    expect(t.callsOf('image_tile')).toEqual([
      { version: 3, figure: 'fig', level: 1, x: 0, y: 0, ranges: '0,255;0,255' },
      { version: 3, figure: 'fig', level: 1, x: 1, y: 0, ranges: '0,255;0,255' },
      { version: 3, figure: 'fig', level: 1, x: 0, y: 1, ranges: '0,255;0,255' },
      { version: 3, figure: 'fig', level: 1, x: 1, y: 1, ranges: '0,255;0,255' }
    ]);
    expect(waiting.length).toBe(4);
    expect(g.frame().complete).toBe(false);
    await release();
    const last = drawn[drawn.length - 1];
    expect(last.complete).toBe(true);
    expect(last.tiles.map(tile => tile.key)).toEqual(['1/0/0', '1/1/0', '1/0/1', '1/1/1']);
    // each tile colored from its planes: 200 in blue, 100 in green
    expect([...last.tiles[0].rgba!.slice(0, 4)]).toEqual([0, 100, 200, 255]);
    // the same view again asks nothing
    expect(g.update([0, 0, SIDE / 2, SIDE / 2], at(1))).toBe(false);
    expect(t.callsOf('image_tile')).toHaveLength(4);
  });

  it('keeps at most CONCURRENCY requests on their way and drops queued tiles that leave the view', async () => {
    const { t, release, waiting } = service();
    const g = grid(t);
    g.update([0, 0, SIDE, SIDE / 2], at(0)); // 8 × 4 tiles of level 0 (32 ≤ MAX_VISIBLE)
    expect(waiting.length).toBe(CONCURRENCY);
    // the view moves to the bottom right before the rest are sent
    g.update([SIDE * 0.9, SIDE * 0.9, SIDE, SIDE], at(0));
    await release();
    const asked = t.callsOf('image_tile') as { level: number; x: number; y: number }[];
    // the first four went out; of the queued ones none; then the new view's tile
    expect(asked).toHaveLength(CONCURRENCY + 1);
    expect(asked[CONCURRENCY]).toMatchObject({ level: 0, x: 7, y: 7 });
    expect(g.loading).toBe(false);
    // the replies of tiles no longer on screen are cached, not drawn
    expect(g.cache.has('0/0/0')).toBe(true);
    expect(g.frame().tiles.map(tile => tile.key)).toEqual(['0/7/7']);
  });

  it('hold (the figure left the screen) drops the queued requests; the next update asks for the rest', async () => {
    const { t, release } = service();
    const g = grid(t);
    g.update([0, 0, SIDE, SIDE / 2], at(0)); // 32 tiles: CONCURRENCY go out, the rest queue
    g.hold();
    await release();
    expect(t.callsOf('image_tile')).toHaveLength(CONCURRENCY);
    expect(g.loading).toBe(false);
    // back on screen, the same view: only the tiles not asked before
    g.update([0, 0, SIDE, SIDE / 2], at(0));
    await release();
    const asked = (t.callsOf('image_tile') as { x: number; y: number }[]).map(a => `${a.x}/${a.y}`);
    expect(asked).toHaveLength(32);
    expect(new Set(asked).size).toBe(32);
  });

  it('draws tiles that arrive together in one frame, and sends the next request before unpacking a reply', async () => {
    // how many tiles were unpacked (cached) when each request went out
    const unpacked: number[] = [];
    const { t, waiting } = service(() => unpacked.push(g.cache.keys().length));
    const drawn: TileFrame[] = [];
    const g = grid(t, drawn);
    g.update([0, 0, SIDE, SIDE / 2], at(0)); // 32 tiles: more than CONCURRENCY
    expect(waiting.length).toBe(CONCURRENCY);
    // the first replies come back in one go (no turn of the event loop between them)
    waiting.splice(0).forEach(resolve => resolve());
    await new Promise(r => setTimeout(r, 0));
    // each reply freed its slot at once: the next ones are already on their way, each sent
    // before the reply that freed its slot was unpacked (reply k's follower saw k - 1 unpacked)
    expect(t.callsOf('image_tile')).toHaveLength(2 * CONCURRENCY);
    expect(unpacked.slice(CONCURRENCY)).toEqual(Array.from({ length: CONCURRENCY }, (_, k) => k));
    // the rest of the view is still awaited: no frame yet, then one once the burst's time is up
    expect(drawn).toHaveLength(0);
    await new Promise(r => setTimeout(r, BURST_MS + 20));
    expect(drawn).toHaveLength(1);
    expect(drawn[0].tiles.filter(tile => tile.level === 0)).toHaveLength(CONCURRENCY);
  });

  it('draws at once when the last tile of the view arrives, in one frame for all of them', async () => {
    const drawn: TileFrame[] = [];
    // the clock is the test's: a loaded machine must not stretch 16 turns past the burst
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const { t, waiting } = service();
      const g = grid(t, drawn);
      g.update([0, 0, SIDE / 2, SIDE / 2], at(0)); // 4 × 4 tiles: all on their way at once
      expect(waiting.length).toBe(16);
      for (const resolve of waiting.splice(0)) {
        resolve();
        await vi.advanceTimersByTimeAsync(1); // one by one, 1 ms apart (16 ms in all, under BURST_MS)
      }
      await vi.advanceTimersByTimeAsync(5);
    } finally {
      vi.useRealTimers();
    }
    expect(drawn).toHaveLength(1);
    expect(drawn[0].complete).toBe(true);
    expect(drawn[0].tiles).toHaveLength(16);
  });

  it('shows cached coarser tiles while the finer ones load', async () => {
    const { t, release } = service();
    const g = grid(t);
    g.update([0, 0, SIDE / 2, SIDE / 2], at(1));
    await release();
    g.update([0, 0, SIDE / 8, SIDE / 8], at(0));
    const waiting = g.frame();
    expect(waiting.complete).toBe(false);
    expect(waiting.level).toBe(0);
    expect(waiting.tiles.map(tile => tile.key)).toEqual(['1/0/0']); // the level-1 tile over it stands in
    await release();
    expect(g.frame().tiles.map(tile => tile.key)).toEqual(['0/0/0']);
  });

  it('recolors cached tiles when the channels change, without asking again', async () => {
    const { t, release } = service();
    const g = grid(t);
    g.update([0, 0, SIDE / 4, SIDE / 4], at(1));
    await release();
    const before = g.frame().tiles[0].rgba!;
    const channels = CHANNELS.map(c => ({ ...c }));
    channels[0].visible = false;
    channels[1].color = '#ff0000';
    g.setChannels(channels);
    const after = g.frame().tiles[0].rgba!;
    expect(after).not.toBe(before);
    expect([...after.slice(0, 4)]).toEqual([100, 0, 0, 255]);
    expect(t.callsOf('image_tile')).toHaveLength(1);
    // unchanged channels: the same RGBA (no recomposite per frame)
    expect(g.frame().tiles[0].rgba).toBe(after);
  });
});

describe('tiles shared by image key', () => {
  afterEach(() => tileCache.clear());

  it('fetches a tile once for every figure and version showing the same image, not across images', async () => {
    const { t, release } = service();
    const unit = SIDE / 8192;
    const region: [number, number, number, number] = [0, 0, 1000 * unit, 1000 * unit];
    const make = (version: number, key?: string) => {
      const g = new TileGrid(t, version, 'fig', LEVELS, OVERVIEW, () => undefined, () => undefined, key);
      g.setChannels(CHANNELS.map(c => ({ ...c })));
      return g;
    };
    const first = make(5, 'img-a');
    first.update(region, at(0));
    await release();
    expect(t.callsOf('image_tile')).toHaveLength(1);
    const below = make(4, 'img-a'); // the version below shows the same image
    below.update(region, at(0));
    await release();
    expect(t.callsOf('image_tile')).toHaveLength(1);
    expect(below.frame().tiles.map(tile => tile.key)).toEqual(['0/0/0']);
    make(4, 'img-b').update(region, at(0)); // another image: asked for
    make(4).update(region, at(0)); // no key: asked for, as before
    await release();
    expect(t.callsOf('image_tile')).toHaveLength(3);
  });
});
