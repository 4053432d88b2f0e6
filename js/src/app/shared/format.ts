/** Formatting of times, sizes and change ops for display. */

import type { Change, ColumnSummary } from './types';

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['week', 7 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
  ['second', 1]
];

/** "3 minutes ago", "yesterday", "in 2 hours"; `now` for tests. */
/** Milliseconds between two redraws of relative times ("3 minutes ago"): one tick for every view. */
export const RELATIVE_TIME_TICK = 60_000;

export function relativeTime(iso: string | null | undefined, now: number = Date.now()): string {
  if (!iso) {
    return '';
  }
  const t = Date.parse(iso);
  if (Number.isNaN(t)) {
    return iso;
  }
  const seconds = Math.round((t - now) / 1000);
  if (Math.abs(seconds) < 45) {
    return 'just now';
  }
  const rtf = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size || unit === 'second') {
      return rtf.format(Math.round(seconds / size), unit);
    }
  }
  return iso;
}

/** The exact time for a tooltip: local time plus the stored ISO text. */
export function exactTime(iso: string | null | undefined): string {
  if (!iso) {
    return '';
  }
  const t = Date.parse(iso);
  if (Number.isNaN(t)) {
    return iso;
  }
  return `${new Date(t).toLocaleString()} (${iso})`;
}

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) {
    return '';
  }
  if (n < 1024) {
    return `${n} B`;
  }
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** Fields that name what an op acts on, in order of preference. */
const NAME_FIELDS = [
  'column',
  'figure',
  'result',
  'key',
  'name',
  'id',
  'element',
  'table',
  'path'
];
/** Fields that qualify it, shown in parentheses. */
const KIND_FIELDS = ['dtype', 'kind', 'encoding', 'type'];

/** A readable one-liner for a change op: "set-obs regions (categorical)". */
export function changeLabel(change: Change): string {
  const parts: string[] = [String(change.op ?? '?')];
  const name = NAME_FIELDS.map(f => change[f]).find(v => typeof v === 'string' || typeof v === 'number');
  if (name !== undefined) {
    parts.push(String(name));
  }
  const kind = KIND_FIELDS.map(f => change[f]).find(v => typeof v === 'string');
  if (kind !== undefined) {
    parts.push(`(${kind})`);
  }
  if (name === undefined && kind === undefined) {
    const rest = Object.entries(change).filter(([k]) => k !== 'op');
    if (rest.length) {
      parts.push(
        rest
          .slice(0, 3)
          .map(([k, v]) => `${k}=${short(v)}`)
          .join(' ')
      );
    }
  }
  return parts.join(' ');
}

/** The op family for styling: "set", "delete", "add", ... */
export function changeFamily(change: Change): string {
  const op = String(change.op ?? '');
  const family = op.split(/[-_]/)[0];
  return /^[a-z]+$/.test(family) ? family : 'other';
}

/** Significant digits of a number shown on its own (a float32's 1.1540000438690186 reads 1.154). */
const DIGITS = 6;

/** A number with its meaningful digits: integers whole, others to DIGITS significant digits. */
function meaningful(v: number): number {
  return Number.isInteger(v) || !Number.isFinite(v) ? v : +v.toPrecision(DIGITS);
}

/** A value as JSON text, its numbers with their meaningful digits (an op's parameters, an uns value). */
export function jsonText(v: unknown): string {
  try {
    return JSON.stringify(v, (_key, x: unknown) => (typeof x === 'number' ? meaningful(x) : x)) ?? String(v);
  } catch {
    return String(v);
  }
}

/** A value in at most `max` characters: a string as it is, a number by cell, anything else as JSON. */
export function short(v: unknown, max = 40): string {
  const s = typeof v === 'string' ? v : typeof v === 'number' ? cell(v) : jsonText(v);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** A value in a table cell or report. */
export function cell(v: unknown): string {
  if (v === null || v === undefined) {
    return '';
  }
  if (typeof v === 'number') {
    if (Number.isInteger(v)) {
      return String(v);
    }
    const a = Math.abs(v);
    return a !== 0 && (a < 1e-3 || a >= 1e6) ? v.toExponential(3) : String(meaningful(v));
  }
  if (typeof v === 'string') {
    return v;
  }
  return short(v, 200);
}

/**
 * A value of a clicked cell's row: meaningful digits (a float32 column's 1.1540000438690186
 * reads 1.154), NA for a missing one.
 */
export function rowValue(v: string | number | boolean | null): string {
  return v === null ? 'NA' : cell(v);
}

/** Print width as stored: millimetres, or "single"/"double" column. */
export function printWidth(w: number | string | null | undefined): string {
  if (w === null || w === undefined || w === '') {
    return '';
  }
  if (typeof w === 'number') {
    return `${w} mm`;
  }
  if (w === 'single' || w === 'double') {
    return `${w} column`;
  }
  return w;
}

/**
 * A dataset as people know it: the workspace's folder-map name ("Xenium breast section") when the
 * server sends one, else its ID, else (a base store of no dataset) its folder's name. One rule for
 * every place a base or a missing dataset is named: the panel's header, the history's base row,
 * Compare's choices and the Versions sidebar's headings.
 */
export function datasetName(
  d: { dataset_id?: string | null; name?: string; path?: string } | null | undefined,
  fallback = ''
): string {
  const folder = d?.path?.split('/').filter(Boolean).pop();
  return d?.name || d?.dataset_id || folder || fallback;
}

/** "1 key", "2 keys", "1,024 rows": one place for counted nouns (`many` for irregular plurals). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en')} ${n === 1 ? one : many}`;
}

/** Significant digits shown for the largest value of a float column. */
const SIGNIFICANT = 4;
/** Most decimals shown; smaller or larger magnitudes switch to scientific notation. */
const MAX_DECIMALS = 6;

export type CellFormat = (v: unknown) => string;

/** True for p-value and q-value columns by their name (pvals_adj, padj, qval, fdr, p_value, ...). */
export function isPValueColumn(name: string): boolean {
  const letters = name.toLowerCase().replace(/[^a-z]/g, '');
  return /^[pq]$/.test(letters) || /pval|qval|padj|fdr/.test(letters);
}

function isIntegerDtype(dtype: string): boolean {
  return /^u?int\d*$/i.test(dtype.trim());
}

function isFloatDtype(dtype: string): boolean {
  return /float|double|decimal/i.test(dtype);
}

/**
 * One format for a whole column, so every row (and every page) of it lines up:
 * integers as integers, p-/q-values in scientific notation, other floats with
 * the decimals that give the column's largest magnitude four significant digits
 * (from `range`, the column's finite min and max over the whole table).
 */
export function columnFormat(name: string, dtype: string, range: { min?: number | null; max?: number | null } = {}): CellFormat {
  if (isIntegerDtype(dtype)) {
    return v => (typeof v === 'number' && Number.isFinite(v) ? Math.round(v).toLocaleString('en') : cell(v));
  }
  if (!isFloatDtype(dtype)) {
    return cell;
  }
  if (isPValueColumn(name)) {
    return v => (typeof v === 'number' && Number.isFinite(v) ? (v === 0 ? '0' : v.toExponential(2)) : cell(v));
  }
  const largest = Math.max(Math.abs(range.min ?? 0), Math.abs(range.max ?? 0));
  if (!Number.isFinite(largest) || largest === 0) {
    return cell;
  }
  const magnitude = Math.floor(Math.log10(largest));
  if (magnitude >= 7 || SIGNIFICANT - 1 - magnitude > MAX_DECIMALS) {
    return v => (typeof v === 'number' && Number.isFinite(v) ? (v === 0 ? '0' : v.toExponential(SIGNIFICANT - 1)) : cell(v));
  }
  const decimals = Math.min(MAX_DECIMALS, Math.max(0, SIGNIFICANT - 1 - magnitude));
  return v => {
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      return cell(v);
    }
    const text = v.toLocaleString('en', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
    return text === '-0' || /^-0\.0*$/.test(text) ? text.slice(1) : text;
  };
}

/** A value with every digit it has (hover text and copies of formatted cells). */
export function fullValue(v: unknown): string {
  if (typeof v === 'number') {
    return String(v);
  }
  return cell(v);
}

/**
 * One format for the numbers of a colorbar over `column` from `min` to `max` (its ends, its ticks,
 * a hovered cell's value): integers when both ends are and they span at least 10 (counts, not
 * a 0 to 1 score), else the column's table format (columnFormat), so a colorbar, its print and
 * SVG legends and the column in a table agree.
 */
export function rangeFormat(column: string, min: number, max: number): CellFormat {
  const integral = Number.isInteger(min) && Number.isInteger(max) && (max - min >= 10 || min === max);
  return columnFormat(column, integral ? 'int64' : 'float64', { min, max });
}

/** Ticks of a colorbar: its two ends and up to `inner` evenly spaced values between, as [value, label]. */
export function rangeTicks(column: string, min: number, max: number, inner = 1): [number, string][] {
  const format = rangeFormat(column, min, max);
  if (!(Number.isFinite(min) && Number.isFinite(max)) || max <= min) {
    return [[min, format(min)]];
  }
  const values = Array.from({ length: inner + 2 }, (_, i) => min + ((max - min) * i) / (inner + 1));
  return values.map(v => [v, format(v)]);
}

/** "core 80 · margin 75 · stroma 85" or "min 1 · median 3 · max 9". */
export function valuesText(c: ColumnSummary, max = 8): string {
  if (c.summary) {
    return `min ${cell(c.summary.min)} · median ${cell(c.summary.median)} · max ${cell(c.summary.max)}`;
  }
  const counts = c.counts ?? [];
  const parts = counts.slice(0, max).map(v => `${v.value} ${v.count.toLocaleString('en')}`);
  const more = (c.n_values ?? counts.length) - Math.min(max, counts.length);
  return parts.join(' · ') + (more > 0 ? ` · … ${more} more` : '');
}

/** A small uns value as text: strings quoted, lists joined. */
export function valueText(v: unknown, max = 160): string {
  let s: string;
  if (typeof v === 'string') {
    s = `'${v}'`;
  } else if (Array.isArray(v)) {
    s = `[${v.map(x => valueText(x, 40)).join(', ')}]`;
  } else if (typeof v === 'number') {
    s = cell(v);
  } else {
    s = jsonText(v);
  }
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}
