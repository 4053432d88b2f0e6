/** Vega-Lite charts through vega-embed (bundled, loaded on first use). */

export type ChartHandle = {
  dispose(): void;
  /** Call `listener` with the data behind a clicked mark (kept across redraws). */
  onClick?(listener: (datum: Record<string, unknown>) => void): void;
};

/** Draw a Vega-Lite spec into `el`. Swappable for tests. */
export type ChartRenderer = (el: HTMLElement, spec: object) => Promise<ChartHandle>;

/** Colours of the surrounding theme, so charts read in light and dark themes. */
function themeConfig(el: HTMLElement): object {
  const style = getComputedStyle(el);
  const fg = style.getPropertyValue('--jp-ui-font-color1').trim() || undefined;
  const muted = style.getPropertyValue('--jp-ui-font-color2').trim() || fg;
  const grid = style.getPropertyValue('--jp-border-color2').trim() || undefined;
  const font = style.getPropertyValue('--jp-ui-font-family').trim() || undefined;
  return {
    background: null,
    font,
    title: { color: fg },
    axis: {
      labelColor: muted,
      titleColor: fg,
      domainColor: muted,
      tickColor: muted,
      gridColor: grid
    },
    legend: { labelColor: muted, titleColor: fg },
    view: { stroke: grid }
  };
}

/** What a faceted chart built in Python says about one facet (`usermeta.fit`). */
type FacetFit = { facets: number; label: number; min: number };

/** Pixels between facets and around the chart (Vega-Lite's default spacing and padding). */
const FACET_GAP = 20;
const PAD = 12;

type Spec = Record<string, unknown> & {
  facet?: unknown;
  spec?: Record<string, unknown>;
  usermeta?: { fit?: FacetFit };
};

/** Vega-Lite's band step (px): a discrete axis without a size gives each category this much. */
const STEP = 20;
const DISCRETE = new Set(['nominal', 'ordinal']);

/**
 * The column a Vega-Lite `field` names: the Python builder escapes `.`, `[`, `]` and `\`
 * in column names (Vega reads them as nested access; `studio/charts.py` `vega_field`).
 */
export function columnOf(field: string): string {
  return field.replace(/\\(.)/g, '$1');
}

/** How many categories a discrete y without a height has (distinct values of its inline data), else null. */
function discreteRows(spec: Spec): number | null {
  const y = (spec.encoding as { y?: { field?: unknown; type?: unknown } } | undefined)?.y;
  const rows = (spec.data as { values?: unknown } | undefined)?.values;
  if (spec.height !== undefined || !y || typeof y.field !== 'string' || !DISCRETE.has(String(y.type)) || !Array.isArray(rows)) {
    return null;
  }
  const column = columnOf(y.field);
  return new Set(rows.map(row => (row as Record<string, unknown> | null)?.[column])).size || null;
}

/** Composite specs Vega-Lite cannot autosize to a width. */
function isComposite(spec: Spec): boolean {
  return ['facet', 'hconcat', 'vconcat', 'concat', 'repeat', 'layer'].some(k => k in spec);
}

/**
 * A copy of a Vega-Lite spec fitted to `width` pixels: facets wrap into as many
 * columns as fit (each needs its label axis plus its narrowest plot, as the
 * Python builder says in `usermeta.fit`) and share the width; a single view
 * takes the whole width (`autosize: fit-x`). Only the width is fitted: a discrete y
 * (a heatmap's rows, ranked bars) keeps a band per category, given as a height in
 * pixels, since Vega-Lite drops any fit over a stepped height, with a warning per
 * drawing. Specs that already set a width keep it.
 */
export function fitSpec(spec: object, width: number): object {
  const out = JSON.parse(JSON.stringify(spec)) as Spec;
  const room = Math.floor(width) - PAD;
  if (!(room > 0)) {
    return out;
  }
  const fit = out.usermeta?.fit;
  if (fit && out.facet && out.spec) {
    const cell = fit.label + fit.min + FACET_GAP;
    const columns = Math.max(1, Math.min(fit.facets, Math.floor(room / cell)));
    out.columns = columns;
    out.spec.width = Math.max(60, Math.floor(room / columns) - fit.label - FACET_GAP);
    return out;
  }
  if (!isComposite(out) && out.width === undefined) {
    out.width = room;
    const rows = discreteRows(out);
    if (rows) {
      out.height = rows * STEP;
    }
    out.autosize = { type: 'fit-x', contains: 'padding' };
  }
  return out;
}

/** Widths closer than this draw the same chart (no redraw for a scrollbar coming and going). */
const RESIZE_STEP = 24;

/**
 * Call `onChange` when JupyterLab switches theme (it sets `data-jp-theme-name` on the
 * body), so charts redraw in the new colors; returns the undo.
 */
export function watchTheme(onChange: () => void): () => void {
  if (typeof MutationObserver === 'undefined' || typeof document === 'undefined') {
    return () => undefined;
  }
  let last = document.body.dataset.jpThemeName;
  const observer = new MutationObserver(() => {
    const now = document.body.dataset.jpThemeName;
    if (now !== last) {
      last = now;
      // JupyterLab swaps the theme's CSS after the attribute: read the variables once it applied
      setTimeout(onChange, 150);
    }
  });
  observer.observe(document.body, { attributes: true, attributeFilter: ['data-jp-theme-name', 'data-jp-theme-light'] });
  return () => observer.disconnect();
}

export const vegaRenderer: ChartRenderer = async (el, spec) => {
  const { default: embed } = await import('vega-embed');
  let drawnWidth = el.clientWidth;
  const draw = () =>
    embed(el, fitSpec(spec, drawnWidth) as never, {
      actions: false,
      renderer: 'svg',
      config: themeConfig(el) as never
    });
  const clicks: ((datum: Record<string, unknown>) => void)[] = [];
  const listen = (r: Awaited<ReturnType<typeof embed>>) =>
    r.view.addEventListener('click', (_ev, item) => {
      const datum = (item as { datum?: Record<string, unknown> } | null | undefined)?.datum;
      if (datum && typeof datum === 'object') {
        for (const listener of clicks) {
          listener(datum);
        }
      }
    });
  let result = await draw();
  listen(result);
  let disposed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // one redraw for both reasons (a new width, a new theme); the newest drawing wins
  const redraw = async (): Promise<void> => {
    if (disposed) {
      return;
    }
    result.finalize();
    result = await draw();
    listen(result);
    el.dataset.theme = document.body.dataset.jpThemeName ?? '';
    if (disposed) {
      result.finalize();
    }
  };
  // the card follows the panel: redraw at the new width once resizing rests
  const observer =
    typeof ResizeObserver === 'undefined'
      ? null
      : new ResizeObserver(() => {
          const w = el.clientWidth;
          if (!w || Math.abs(w - drawnWidth) < RESIZE_STEP) {
            return;
          }
          clearTimeout(timer);
          timer = setTimeout(() => {
            drawnWidth = el.clientWidth;
            void redraw().catch(() => undefined);
          }, 150);
        });
  observer?.observe(el);
  const unwatch = watchTheme(() => void redraw().catch(() => undefined));
  return {
    onClick: listener => {
      clicks.push(listener);
    },
    dispose: () => {
      disposed = true;
      clearTimeout(timer);
      observer?.disconnect();
      unwatch();
      result.finalize();
    }
  };
};

/** The schema of the bundled Vega-Lite (v6): an older one makes the runtime log a version warning per chart. */
export const VEGA_LITE_SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json';
