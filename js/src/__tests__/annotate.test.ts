import { describe, expect, it } from 'vitest';
import { settle } from './fixtures';
import {
  Drawing,
  cellList,
  contains,
  rectangle,
  regionCodes,
  regionCounts,
  regionMapping,
  saveAnnotation,
  selectedCells,
  type Point
} from '../app/figures/annotate';

/** A 10 × 10 grid of cells at (0.5, 0.5) ... (9.5, 9.5), and one without a position. */
function grid(): { x: Float32Array; y: Float32Array } {
  const x = new Float32Array(101);
  const y = new Float32Array(101);
  for (let i = 0; i < 100; i++) {
    x[i] = (i % 10) + 0.5;
    y[i] = Math.floor(i / 10) + 0.5;
  }
  x[100] = Number.NaN;
  y[100] = Number.NaN;
  return { x, y };
}

describe('annotation geometry', () => {
  it('a rectangle holds the cells between its corners, whichever way it was dragged', () => {
    const { x, y } = grid();
    for (const [a, b] of [
      [[0, 0], [3, 2]],
      [[3, 2], [0, 0]]
    ] as [Point, Point][]) {
      const codes = regionCodes(x, y, [{ label: 'r', polygon: rectangle(a, b) }]);
      expect(regionCounts(codes, 1)).toEqual([6]);
      expect(selectedCells(codes)).toEqual([0, 1, 2, 10, 11, 12]);
    }
  });

  it('a concave polygon leaves its notch out, and a NaN position is never inside', () => {
    // a U: the notch x in (3, 7), y > 3 is outside
    const u: Point[] = [[0, 0], [10, 0], [10, 10], [7, 10], [7, 3], [3, 3], [3, 10], [0, 10]];
    expect(contains(u, 5, 5)).toBe(false);
    expect(contains(u, 5, 1)).toBe(true);
    expect(contains(u, 1, 9)).toBe(true);
    expect(contains(u, Number.NaN, 1)).toBe(false);
    const { x, y } = grid();
    const codes = regionCodes(x, y, [{ label: 'u', polygon: u }]);
    expect(regionCounts(codes, 1)).toEqual([100 - 4 * 7]);
    expect(codes[100]).toBe(-1);
  });

  it('a cell in two regions takes the last one, as the saved column will', () => {
    const { x, y } = grid();
    const regions = [
      { label: 'left', polygon: rectangle([0, 0], [5, 10]) },
      { label: 'middle', polygon: rectangle([4, 4], [6, 6]) }
    ];
    const codes = regionCodes(x, y, regions);
    expect(regionCounts(codes, 2)).toEqual([50 - 2, 4]);
    expect(codes[44]).toBe(1);
    expect(codes[45]).toBe(1);
    expect(codes[0]).toBe(0);
    expect(codes[99]).toBe(-1);
    expect(Object.keys(regionMapping(regions))).toEqual(['left', 'middle']);
  });

  it('the selection copies as one ID a line', () => {
    expect(cellList(['cell_1', '<b>cell_2</b>'])).toBe('cell_1\n<b>cell_2</b>');
  });
});

describe('drawing tools and undo', () => {
  it('a polygon closes from 3 points; undo takes back points, then regions', () => {
    const d = new Drawing();
    d.add([0, 0]);
    d.add([4, 0]);
    expect(d.close()).toBe(false);
    d.add([4, 4]);
    expect(d.close('core')).toBe(true);
    expect(d.regions.map(r => r.label)).toEqual(['core']);
    d.tool = 'rectangle';
    d.add([5, 5]);
    expect(d.draft.length).toBe(1);
    d.add([8, 9]);
    expect(d.regions.length).toBe(2);
    expect(d.regions[1]).toEqual({ label: 'region 2', polygon: rectangle([5, 5], [8, 9]) });
    d.tool = 'lasso';
    d.add([1, 1]);
    d.add([Number.NaN, 2]);
    expect(d.draft).toEqual([[1, 1]]);
    expect(d.undo()).toBe(true);
    expect(d.draft).toEqual([]);
    expect(d.undo()).toBe(true);
    expect(d.regions.map(r => r.label)).toEqual(['core']);
    expect(d.undo()).toBe(true);
    expect(d.undo()).toBe(false);
  });

  it('names stay distinct: a taken name is refused on rename and replaced when closing', () => {
    const d = new Drawing();
    d.tool = 'rectangle';
    d.add([0, 0]);
    d.add([1, 1]);
    d.add([2, 2]);
    d.add([3, 3]);
    expect(d.regions.map(r => r.label)).toEqual(['region 1', 'region 2']);
    expect(d.rename(1, 'region 1')).toBe(false);
    expect(d.rename(1, '  ')).toBe(false);
    expect(d.rename(1, 'margin')).toBe(true);
    d.tool = 'polygon';
    for (const p of [[0, 0], [1, 0], [1, 1]] as Point[]) d.add(p);
    d.close('margin');
    expect(d.regions.map(r => r.label)).toEqual(['region 1', 'margin', 'region 3']);
  });
});

describe('Save as annotation', () => {
  it('posts the regions in drawing order to api/annotate with the version path and answers the new version', async () => {
    const { ServerConnection } = await import('@jupyterlab/services');
    const { RestTransport } = await import('../lab/transport');
    const seen: { method: string; url: string; body: string }[] = [];
    const fetchFn = async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = input instanceof Request ? input : new Request(String(input), init);
      seen.push({ method: request.method, url: request.url, body: await request.text() });
      return new Response(JSON.stringify({ folder: 'stacks/new', dataset_id: 'new' }), {
        status: 201,
        headers: { 'Content-Type': 'application/json' }
      });
    };
    const settings = ServerConnection.makeSettings({ baseUrl: 'http://localhost:8888/', fetch: fetchFn as typeof fetch });
    const transport = new RestTransport('stacks/v2', settings);
    const regions = [
      { label: 'b', polygon: rectangle([0, 0], [1, 1]) },
      { label: 'a', polygon: [[0, 0], [2, 0], [2, 2]] as Point[] }
    ];
    const saved = await saveAnnotation(transport, {
      column: 'my_regions',
      title: 'Drawn',
      figure: 'fig-clusters',
      version: 4,
      regions
    });
    expect(saved).toEqual({ folder: 'stacks/new', dataset_id: 'new' });
    expect(seen.length).toBe(1);
    expect(seen[0].method).toBe('POST');
    expect(seen[0].url).toBe('http://localhost:8888/sds-jupyter/api/annotate');
    const body = JSON.parse(seen[0].body);
    expect(body.path).toBe('stacks/v2');
    expect(body.column).toBe('my_regions');
    expect(body.version).toBe(4);
    expect(Object.keys(body.regions)).toEqual(['b', 'a']);
    expect(body.regions.a).toEqual([[0, 0], [2, 0], [2, 2]]);
  });
});

describe('Annotate panel', () => {
  async function panel(onSaved?: (saved: unknown) => void, onSelection?: (cells: number[]) => void, onHide?: () => void) {
    const { AnnotatePanel } = await import('../app/figures/annotatepanel');
    const { ServerConnection } = await import('@jupyterlab/services');
    const { RestTransport } = await import('../lab/transport');
    const posted: { url: string; body: string }[] = [];
    const fetchFn = async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = input instanceof Request ? input : new Request(String(input), init);
      const url = request.url;
      if (url.includes('/cell?')) {
        const index = new URL(url).searchParams.get('index');
        return new Response(JSON.stringify({ index: Number(index), name: `cell_${index}`, columns: [], values: [] }));
      }
      posted.push({ url, body: await request.text() });
      return new Response(JSON.stringify({ folder: 'd/new', dataset_id: 'new' }), { status: 201 });
    };
    const settings = ServerConnection.makeSettings({ baseUrl: 'http://localhost:8888/', fetch: fetchFn as typeof fetch });
    const { x, y } = grid();
    const stageNode = document.createElement('div');
    // a 100 × 100 px view with the data's centre (5, 5) in the middle, 10 px per unit (zoom log2(10))
    Object.defineProperty(stageNode, 'clientWidth', { value: 100 });
    Object.defineProperty(stageNode, 'clientHeight', { value: 100 });
    document.body.append(stageNode);
    const p = new AnnotatePanel({
      transport: new RestTransport('d/v4', settings),
      version: 4,
      figure: 'fig',
      x,
      y,
      stageNode,
      camera: () => ({ target: [5, 5], zoom: Math.log2(10) }),
      columns: ['clusters'],
      cellName: async i => `cell_${i}`,
      onSaved,
      onSelection,
      onHide
    });
    document.body.append(p.node);
    p.toggle(true);
    return { p, posted, overlay: stageNode.querySelector('.sds-annotate-overlay') as SVGSVGElement };
  }

  const press = (el: Element, key: string, extra: KeyboardEventInit = {}) =>
    el.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true, cancelable: true, ...extra }));

  it('draws a polygon with the keyboard alone, shows its count and outline, and undoes it', async () => {
    const { p, overlay } = await panel();
    // the crosshair starts at the centre (data 5, 5); 10 px is one data unit
    press(overlay, 'ArrowLeft', { shiftKey: true }); // (0, 5)
    press(overlay, 'ArrowUp', { shiftKey: true }); // (0, 0)
    press(overlay, ' ');
    press(overlay, 'ArrowRight');
    press(overlay, 'ArrowRight');
    press(overlay, 'ArrowRight');
    press(overlay, 'ArrowRight'); // (4, 0)
    press(overlay, ' ');
    press(overlay, 'ArrowDown');
    press(overlay, 'ArrowDown'); // (4, 2)
    press(overlay, ' ');
    press(overlay, 'ArrowLeft');
    press(overlay, 'ArrowLeft');
    press(overlay, 'ArrowLeft');
    press(overlay, 'ArrowLeft'); // (0, 2)
    press(overlay, ' ');
    press(overlay, 'Enter');
    expect(p.drawing.regions.length).toBe(1);
    expect(p.node.querySelector('.sds-annotate-count')?.textContent).toBe(' 8 cells');
    expect(overlay.querySelector('.sds-annotate-outline')).not.toBeNull();
    expect(overlay.querySelector('.sds-annotate-label')?.textContent).toBe('region 1 (8)');
    await settle();
    expect(p.node.querySelector('.sds-annotate-selected')?.textContent).toBe('8 cells selected');
    expect(p.node.querySelector('.sds-annotate-ids')?.textContent).toBe('cell_0, cell_1, cell_2, cell_3, cell_10, …');
    press(overlay, 'z', { ctrlKey: true });
    expect(p.drawing.regions.length).toBe(0);
    expect(p.node.querySelectorAll('.sds-annotate-region').length).toBe(0);
  });

  it('a double-click closes the outline once, at its first click; after Escape the clicks draw again (issue 40, item 2)', async () => {
    const { p, overlay } = await panel();
    const click = (px: number, py: number, detail: number) =>
      overlay.dispatchEvent(new MouseEvent('click', { clientX: px, clientY: py, detail, bubbles: true }));
    for (let round = 0; round < 5; round++) {
      click(0, 0, 1);
      click(40, 0, 1);
      click(40, 20, 1);
      click(40, 20, 2); // the double-click's second click
      overlay.dispatchEvent(new MouseEvent('dblclick', { clientX: 40, clientY: 20, detail: 2, bubbles: true }));
      expect(p.drawing.regions.length).toBe(round + 1);
      const rounded = p.drawing.regions[round].polygon.map(([px, py]) => [Math.round(px * 1e6) / 1e6 + 0, Math.round(py * 1e6) / 1e6 + 0]);
      expect(rounded).toEqual([
        [0, 0],
        [4, 0],
        [4, 2]
      ]);
      expect(p.drawing.draft).toEqual([]);
    }
    // every selected cell counted as marked on the drawing (the cells under the triangles: 4 of them)
    expect(overlay.dataset.selected).toBe('4');
    expect(overlay.dataset.marked).toBe('4');
    // the outline reads on any tissue: a halo under it
    expect(overlay.querySelectorAll('.sds-annotate-halo').length).toBe(5);
    // Escape drops the outline in progress; the drawing goes on, clicks still add points
    click(10, 10, 1);
    press(overlay, 'Escape');
    expect(p.drawing.draft).toEqual([]);
    expect(p.node.hidden).toBe(false);
    click(20, 10, 1);
    expect(p.drawing.draft.map(([px, py]) => [Math.round(px), Math.round(py)])).toEqual([[2, 1]]);
  });

  it('a label given in the list is what is saved, and the saved version goes to the host', async () => {
    const saved: unknown[] = [];
    const { p, posted } = await panel(s => saved.push(s));
    p.use('rectangle');
    p.add([0, 0]);
    p.add([10, 5]);
    const input = p.node.querySelector('.sds-annotate-region input') as HTMLInputElement;
    input.value = 'top half';
    input.dispatchEvent(new Event('change'));
    (p.node.querySelector('.sds-annotate-column') as HTMLInputElement).value = 'my_regions';
    expect(await p.save()).toEqual({ folder: 'd/new', dataset_id: 'new' });
    expect(saved).toEqual([{ folder: 'd/new', dataset_id: 'new' }]);
    const body = JSON.parse(posted[0].body);
    expect(body).toMatchObject({ path: 'd/v4', column: 'my_regions', title: 'Annotated my_regions', figure: 'fig', version: 4 });
    expect(Object.keys(body.regions)).toEqual(['top half']);
  });

  it('tells the host the selected cells each time the regions change (the widget binds them)', async () => {
    const seen: number[][] = [];
    const { p } = await panel(undefined, cells => seen.push(cells));
    p.use('rectangle');
    p.add([0, 0]);
    p.add([2, 1]);
    p.add([8, 8]);
    p.add([10, 10]);
    expect(seen[seen.length - 2]).toEqual([0, 1]);
    expect(seen[seen.length - 1]).toEqual([0, 1, 88, 89, 98, 99]);
    p.undo();
    expect(seen[seen.length - 1]).toEqual([0, 1]);
  });

  it('refuses to save without a column or a region, saying which', async () => {
    const { p, posted } = await panel();
    expect(await p.save()).toBeNull();
    expect(p.node.querySelector('.sds-annotate-status')?.textContent).toMatch(/Name the obs column/);
    (p.node.querySelector('.sds-annotate-column') as HTMLInputElement).value = 'x';
    expect(await p.save()).toBeNull();
    expect(p.node.querySelector('.sds-annotate-status')?.textContent).toMatch(/Draw at least one region/);
    expect(posted).toEqual([]);
  });

  it('Escape drops the outline in progress, then stops drawing; the regions stay (issue 29)', async () => {
    let hidden = 0;
    const { p, overlay } = await panel(undefined, undefined, () => hidden++);
    p.use('rectangle');
    p.add([0, 0]);
    p.add([2, 1]);
    p.add([5, 5]); // a second rectangle begun
    press(overlay, 'Escape');
    expect(p.drawing.draft).toEqual([]);
    expect(p.node.hidden).toBe(false);
    expect(hidden).toBe(0);
    press(overlay, 'Escape');
    expect(p.node.hidden).toBe(true);
    expect(overlay.style.display).toBe('none');
    expect(hidden).toBe(1);
    expect(p.drawing.regions.length).toBe(1);
    // from the panel's own controls too
    p.toggle(true);
    press(p.node.querySelector('.sds-tool-lasso')!, 'Escape');
    expect(p.node.hidden).toBe(true);
    expect(hidden).toBe(2);
  });
});
