/**
 * The tissue a pane over a result or a comparison shows, as the tissue and side-by-side tests
 * fake it: one canvas figure of three cells coloured by `leiden`, and `color_values` answering
 * as the service does (a gene continuous, a highlight or a change categorical).
 */
import type { CanvasPayload, Comparison, Figure } from '../app/shared/types';
import { FakeTransport, history } from './fixtures';

export const CANVAS: Figure = {
  id: 'tissue',
  title: 'Clusters on the tissue',
  caption: null,
  print_width: null,
  kind: 'canvas',
  spec: { kind: 'canvas', color_by: 'leiden' }
} as Figure;

/** The whole figure in one reply (x, y, its codes): the three cells at (1, 1), (5, 5), (9, 9). */
export function canvasReply() {
  const payload: CanvasPayload = {
    n_cells: 3,
    bounds: [0, 0, 10, 10],
    viewport: { target: [5, 5], zoom: 0, rotation: 0 },
    color: { mode: 'categorical', column: 'leiden', categories: ['0', '1'], colors: ['#ff0000', '#00ff00'] },
    point_size: 2,
    image: null,
    obs_columns: ['leiden']
  } as CanvasPayload;
  const x = Float32Array.from([1, 5, 9]);
  const y = Float32Array.from([1, 5, 9]);
  const codes = Uint16Array.from([0, 1, 0]);
  return { data: payload, buffers: [new DataView(x.buffer), new DataView(y.buffer), new DataView(codes.buffer)] };
}

/** color_values as the service answers it: a gene continuous, a highlight or a change categorical. */
export function colorReply(p: { gene?: string; column?: string; highlight?: string | null; against?: unknown }) {
  if (p.gene) {
    const values = Float32Array.from([0, 3, 1]);
    return {
      data: { mode: 'continuous', column: p.gene, colormap: 'viridis', min: 0, max: 3, lut: ['#000000', '#ffffff'] },
      buffers: [new DataView(values.buffer)]
    };
  }
  const categories = p.highlight !== undefined ? [p.highlight, 'other cells'] : ['0 → 1', 'unchanged'];
  const codes = Uint16Array.from([0, 1, 1]);
  return {
    data: { mode: 'categorical', column: `${p.column}`, categories, colors: ['#d62728', '#c8c8c8'] },
    buffers: [new DataView(codes.buffer)]
  };
}

/** A version's history of two, its `figures`, and the tissue's `canvas` and `color_values`. */
export function tissueTransport(figures: Figure[] = [CANVAS]): FakeTransport {
  return new FakeTransport()
    .on('history', () => history(2))
    .on('figures', () => ({ figures }))
    .on('canvas', () => canvasReply() as never)
    .on('color_values', p => colorReply(p) as never);
}

/** A comparison of `a` (a depth, or a dataset ID as version 3) and `b` in which one cell moved from region 0 to 1. */
export function comparison(a: number | string, b: number): Comparison {
  return {
    a: typeof a === 'number' ? a : 3,
    b,
    obs: {
      added: [],
      removed: [],
      changed: [
        {
          column: 'regions',
          kind: 'categorical',
          n_changed: 1,
          transitions: [{ a: '0', b: '1', count: 1 }],
          n_transitions: 1,
          counts_a: {},
          counts_b: {}
        }
      ],
      added_columns: [],
      removed_columns: [],
      n_cells_a: 3,
      n_cells_b: 3,
      n_common: 3
    },
    obsm: { added: [], removed: [], changed: [] },
    uns: { added: [], removed: [], changed: [] },
    figures: { added: [], removed: [], changed: [] },
    results: { added: [], removed: [], changed: [] },
    obsm_changes: [],
    uns_changes: [],
    figure_changes: [],
    result_changes: []
  } as Comparison;
}
