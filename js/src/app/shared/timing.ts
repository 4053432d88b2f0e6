/**
 * The page's clock and its User Timing measures (what the benchmarks and DevTools read), in one
 * place that imports nothing: the stores that fetch a figure and the stage that draws it both
 * measure, and neither should pull in the other's modules to do so.
 */

/** Now in ms (the page's clock where there is one). */
export function now(): number {
  return typeof performance !== 'undefined' ? performance.now() : Date.now();
}

/** A User Timing measure; nothing without User Timing level 3. */
export function measure(name: string, start: number, end: number, detail: Record<string, unknown>): void {
  try {
    performance.measure(name, { start, end, detail });
  } catch {
    // no User Timing level 3
  }
}
