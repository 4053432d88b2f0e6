/**
 * Payload types of the version-browser protocol.
 *
 * Mirrors docs/service-protocol.md and `sds_jupyter.service.REQUESTS`: a new
 * request is one line in `REQUESTS` below and one payload type.
 */

export type ErrorInfo = {
  kind: string;
  message: string;
  /** The dataset to attach, when one is missing. */
  dataset_id?: string;
};

/** One `changes` entry as stored in layer.json: `op` plus op-specific fields. */
export type Change = { op: string; [field: string]: unknown };

export type AppInfo = { id?: string; version?: string };

export type VersionSummary = {
  depth: number;
  dataset_id: string;
  title: string | null;
  message: string | null;
  created_at: string | null;
  created_by: string | null;
  app: AppInfo | null;
  changes: Change[];
  n_files: number;
  n_deleted: number;
  folder: string;
};

export type BaseSummary = {
  depth: 0;
  dataset_id: string | null;
  path: string;
  kind: 'folder' | 'zip';
  zarr_format: 2 | 3;
};

export type History = {
  top_depth: number;
  versions: VersionSummary[];
  base: BaseSummary | null;
  error?: ErrorInfo;
};

export type KeySize = { key: string; size: number };
export type Whiteout = { entry: string; node: boolean };

/** What an op set, read from the version: a column's counts, a short uns value, a title. */
export type OpDetail = {
  column?: ColumnSummary;
  value?: unknown;
  shape?: number[];
  title?: string | null;
  kind?: string | null;
  method?: string | null;
  n_rows?: number;
  /** set-figure, result set-uns: whether the version below had it (replaced, not added) */
  existed?: boolean;
};

export type Changes = {
  ops: Change[];
  /** One per op, in the same order ({} when there is nothing more to say). */
  details?: OpDetail[];
  added: KeySize[];
  replaced: KeySize[];
  deleted: Whiteout[];
  /** Why added and replaced could not be told apart (a missing parent below). */
  note?: string;
};

/** A version of the datasets folder on the opened version's base (`tree`). */
export type TreeNode = {
  dataset_id: string;
  /** The parent's dataset ID, or null when the parent is the base. */
  parent: string | null;
  depth: number;
  title: string | null;
  folder: string;
  created_at: string | null;
  created_by: string | null;
};

export type Tree = {
  /** The dataset ID of the opened version. */
  current: string | null;
  nodes: TreeNode[];
  base: BaseSummary | null;
  /** Folders skipped (unreadable or hostile manifests), one line each. */
  notes: string[];
};

export type Fingerprint = { fingerprint: string };

export type CanvasSummary = { [field: string]: unknown };

export type Figure = {
  id: string;
  title: string | null;
  caption: string | null;
  print_width: number | string | null;
  kind: 'chart' | 'canvas' | 'unsupported';
  vega_lite?: object;
  canvas?: CanvasSummary;
  reason?: string;
  spec: unknown;
};

export type Figures = { figures: Figure[]; error?: ErrorInfo };

/** A table column; numeric ones carry their finite range over the whole table (result_page). */
export type Column = { name: string; dtype: string; min?: number | null; max?: number | null };

export type ResultTable = { name: string; n_rows: number; columns: Column[] };

export type ResultMeta = {
  kind?: string;
  title?: string;
  method?: string;
  parameters?: Record<string, unknown>;
  summary?: Record<string, unknown>;
  created_by?: string;
  created_at?: string;
  app_version?: string;
  [field: string]: unknown;
};

export type Result = {
  id: string;
  kind: string | null;
  title: string | null;
  meta: ResultMeta | null;
  tables: ResultTable[];
  chart?: object;
  error?: ErrorInfo;
};

export type Results = { results: Result[]; error?: ErrorInfo };

export type ResultPage = {
  columns: Column[];
  rows: unknown[][];
  total: number;
  offset: number;
  /** Rows before the filter (`total` counts the matching rows). */
  unfiltered?: number;
};

export type ResultCsv = { csv: string; filename: string; rows: number };

export type Delta = { added: string[]; removed: string[]; changed: string[] };

export type ColumnKind = 'categorical' | 'numeric' | 'boolean' | 'string';
export type PartStatus = 'added' | 'removed' | 'changed';

export type ValueCount = { value: string; count: number };
export type NumericSummary = { min: number; median: number; mean: number; max: number };

/** An obs column: counts (categorical, boolean, string) or a summary (numeric). */
export type ColumnSummary = {
  column: string;
  kind: ColumnKind;
  dtype: string;
  n: number;
  n_missing: number;
  n_values?: number;
  counts?: ValueCount[];
  summary?: NumericSummary;
  /** contents only: what this version did to the column */
  status?: 'added' | 'changed';
};

/** Cells whose value went from `a` (in version a) to `b` (in version b); null is missing. */
export type Transition = { a: string | null; b: string | null; count: number };
export type Histogram = { edges: number[]; counts: number[] };

export type ObsChange = {
  column: string;
  kind: ColumnKind;
  n_changed: number;
  transitions?: Transition[];
  n_transitions?: number;
  max_abs_delta?: number | null;
  delta_histogram?: Histogram;
  counts_a?: Record<string, number>;
  counts_b?: Record<string, number>;
};

export type ObsDelta = {
  added: string[];
  removed: string[];
  changed: ObsChange[];
  added_columns: ColumnSummary[];
  removed_columns: ColumnSummary[];
  n_cells_a: number;
  n_cells_b: number;
  n_common: number;
};

export type ObsmChange = {
  key: string;
  change: PartStatus;
  shape_a: number[] | null;
  shape_b: number[] | null;
  n_rows_changed?: number;
  max_displacement?: number;
};

/** `a`/`b` are present only when the value is small enough to read at a glance. */
export type UnsChange = { key: string; change: PartStatus; a?: unknown; b?: unknown };
export type FigureChange = { id: string; change: PartStatus; title: string | null };
export type ResultChange = {
  id: string;
  change: PartStatus;
  title: string | null;
  kind: string | null;
  n_rows_a?: number;
  n_rows_b?: number;
  table_changed?: boolean;
  n_rows_changed?: number;
};

export type Comparison = {
  a: number;
  b: number;
  obs: ObsDelta;
  obsm: Delta;
  uns: Delta;
  figures: Delta;
  results: Delta;
  obsm_changes: ObsmChange[];
  uns_changes: UnsChange[];
  figure_changes: FigureChange[];
  result_changes: ResultChange[];
};

export type ElementKind = 'images' | 'labels' | 'shapes' | 'points' | 'tables';

export type ElementSummary = {
  kind: ElementKind;
  name: string;
  status?: 'added' | 'changed';
  shape?: number[];
  dtype?: string;
  axes?: string[];
  levels?: number;
  channels?: string[];
  n?: number;
  geometry?: string[];
  n_obs?: number;
  n_vars?: number;
  annotates?: string[];
  error?: string;
};

export type KeyEntry = { key: string; shape?: number[]; status?: 'added' | 'changed' };

export type TableContents = {
  name: string;
  n_obs: number;
  n_vars: number;
  annotates: string[];
  status: 'added' | 'changed' | null;
  obs: ColumnSummary[];
  removed_obs: string[];
  obsm: KeyEntry[];
  uns: KeyEntry[];
};

export type Contents = { depth: number; elements: ElementSummary[]; tables: TableContents[] };

export type Bounds = [number, number, number, number];

export type CanvasColor =
  | { mode: 'categorical'; column: string; categories: string[]; colors: string[] }
  | {
      mode: 'continuous';
      column: string;
      colormap: string;
      min: number;
      max: number;
      lut: string[];
    }
  | { mode: 'none' };

export type CanvasImage = {
  width: number;
  height: number;
  bounds: Bounds;
  channels: { name: string; color: string }[];
};

export type CanvasPayload = {
  n_cells: number;
  bounds: Bounds;
  viewport: { target: [number, number]; zoom: number; rotation: number };
  color: CanvasColor;
  point_size: number;
  image: CanvasImage | null;
  /** The coordinate system's unit (e.g. "micrometer"), when it names a physical one: the scale bar's. */
  unit?: string | null;
  /** The table's obs columns (what the view can color by). */
  obs_columns?: string[];
  /** What the cells are drawn as when not points: their polygons, or circles of their radius (buffers after the image). */
  shapes?: { kind: 'polygons' | 'circles'; element: string; n_vertices?: number } | null;
};

/** An image channel as the `channels` request describes it (raw values in contrast_limits and range). */
export type ChannelInfo = {
  name: string;
  color: string;
  visible: boolean;
  contrast_limits: [number, number];
  range: [number, number];
};

export type ChannelsData = { width: number; height: number; bounds: Bounds; channels: ChannelInfo[] };

/** One cell's obs row (the `cell` request): its position, its obs name (ID), every column's value. */
export type CellRow = {
  index: number;
  name: string;
  columns: string[];
  values: (string | number | boolean | null)[];
};

/** Request name → [params, data]. */
export interface Requests {
  history: [Record<string, never>, History];
  changes: [{ version: number }, Changes];
  figures: [{ version: number }, Figures];
  canvas: [{ version: number; figure: string }, CanvasPayload];
  results: [{ version: number }, Results];
  result_page: [
    {
      version: number;
      result: string;
      table?: string;
      offset: number;
      limit: number;
      sort?: string;
      descending?: boolean;
      filter?: string;
    },
    ResultPage
  ];
  result_csv: [
    { version: number; result: string; table?: string; sort?: string; descending?: boolean; filter?: string },
    ResultCsv
  ];
  compare: [{ a: number; b: number }, Comparison];
  /** One gene per cell (buffer: float32, obs order, as the canvas's cells). */
  expression: [{ version: number; gene: string; layer?: string }, Expression];
  /** The cells of one group (buffer: uint8 per cell, obs order). */
  cell_mask: [{ version: number; column: string; value: string }, CellMask];
  tree: [Record<string, never>, Tree];
  fingerprint: [Record<string, never>, Fingerprint];
  contents: [{ version: number }, Contents];
  cell: [{ version: number; figure: string; index: number }, CellRow];
  channels: [{ version: number; figure: string }, ChannelsData];
  /** One raw object of a version's store (buffer: its bytes, when found): what a zarr reader asks for. */
  store_key: [{ version: number; key: string }, StoreKeyData];
  color_values: [{ version: number; figure: string; column?: string; gene?: string }, CanvasColor];
}

export type Expression = {
  gene: string;
  layer: string | null;
  n_cells: number;
  min: number | null;
  max: number | null;
  dtype: 'float32';
};

export type StoreKeyData = { key: string; found: boolean; size: number };

export type CellMask = { column: string; value: string; n_cells: number; n_selected: number; dtype: 'uint8' };

export type RequestName = keyof Requests;
export type Params<N extends RequestName> = Requests[N][0];
export type Data<N extends RequestName> = Requests[N][1];

/** The request names, in the order of the protocol table. */
export const REQUESTS: readonly RequestName[] = [
  'history',
  'changes',
  'figures',
  'canvas',
  'results',
  'result_page',
  'result_csv',
  'compare',
  'expression',
  'cell_mask',
  'tree',
  'fingerprint',
  'contents',
  'cell',
  'color_values',
  'channels',
  'store_key'
];
