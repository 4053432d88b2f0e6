/**
 * Colour limits of a continuous coloring: a few cells with a very high count
 * would otherwise squeeze everyone else into the bottom of the colormap, so a
 * gene's colors are clipped to its 1st–99th percentiles by default (as scanpy's
 * `vmin='p1'`, `vmax='p99'`). The control sets the percentiles or exact values;
 * the legend's colour bar shows the limits in use.
 */

import { h } from '../shared/dom';
import type { CanvasColor } from '../shared/types';

export type Limits = { min: number; max: number };
/** The default clipping of a gene's colors, in percent. */
export const DEFAULT_PERCENTILES: [number, number] = [1, 99];

/** The `lo`th and `hi`th percentiles of the finite values (linear between order statistics, as numpy's default). */
export function percentileLimits(values: ArrayLike<number>, lo: number, hi: number): Limits | null {
  // a typed sort is numeric and puts NaN last: no array of a million boxed numbers
  const sorted = Float64Array.from(values).sort();
  let first = 0;
  let end = sorted.length;
  while (first < end && !Number.isFinite(sorted[first])) first++; // -Infinity
  while (end > first && !Number.isFinite(sorted[end - 1])) end--; // NaN, +Infinity
  const n = end - first;
  if (!n) {
    return null;
  }
  const at = (p: number) => {
    const pos = (Math.min(100, Math.max(0, p)) / 100) * (n - 1);
    const below = Math.floor(pos);
    const above = Math.min(n - 1, below + 1);
    return sorted[first + below] + (sorted[first + above] - sorted[first + below]) * (pos - below);
  };
  return { min: at(lo), max: at(hi) };
}

type Continuous = Extract<CanvasColor, { mode: 'continuous' }>;

/** The coloring with its limits set (max kept above min, so the colormap has a span). */
export function withLimits<C extends Continuous>(color: C, limits: Limits): C {
  const max = limits.max > limits.min ? limits.max : limits.min + (Math.abs(limits.min) || 1) * 1e-6;
  return { ...color, min: limits.min, max };
}

/**
 * The limits control: percentiles (default 1–99) or exact min/max. `apply` receives the
 * limits to draw with; the control is rebuilt with each coloring.
 */
export function colorLimitsControl(
  values: ArrayLike<number>,
  current: Limits,
  percentiles: [number, number] | null,
  apply: (limits: Limits, percentiles: [number, number] | null) => void
): HTMLElement {
  const number = (label: string, value: number, step: string) =>
    h('input', { type: 'number', class: 'sds-limit', 'aria-label': label, value: String(round(value)), step, size: '5' }) as HTMLInputElement;
  const pLo = number('Lower percentile', percentiles?.[0] ?? 0, '0.5');
  const pHi = number('Upper percentile', percentiles?.[1] ?? 100, '0.5');
  const vMin = number('Minimum value', current.min, 'any');
  const vMax = number('Maximum value', current.max, 'any');
  const byPercentile = () => {
    const p: [number, number] = [Number(pLo.value), Number(pHi.value)];
    if (p.every(Number.isFinite) && p[0] < p[1]) {
      const limits = percentileLimits(values, p[0], p[1]);
      if (limits) {
        apply(limits, p);
      }
    }
  };
  const byValue = () => {
    const limits = { min: Number(vMin.value), max: Number(vMax.value) };
    if (Number.isFinite(limits.min) && Number.isFinite(limits.max) && limits.min < limits.max) {
      apply(limits, null);
    }
  };
  pLo.addEventListener('change', byPercentile);
  pHi.addEventListener('change', byPercentile);
  vMin.addEventListener('change', byValue);
  vMax.addEventListener('change', byValue);
  return h(
    'fieldset',
    { class: 'sds-color-limits' },
    h('legend', {}, 'Color limits'),
    h('label', {}, 'percentiles ', pLo, ' – ', pHi),
    h('label', {}, 'values ', vMin, ' – ', vMax)
  );
}

function round(x: number): number {
  return Number.isFinite(x) ? Number(x.toPrecision(4)) : 0;
}

/** A gene's coloring clipped to the default percentiles (other colorings are returned as they are). */
export function clippedByDefault(color: CanvasColor, values: ArrayLike<number>): CanvasColor {
  if (color.mode !== 'continuous') {
    return color;
  }
  const limits = percentileLimits(values, ...DEFAULT_PERCENTILES);
  return limits ? withLimits(color, limits) : color;
}
