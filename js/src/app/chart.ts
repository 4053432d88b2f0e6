/** Vega-Lite charts through vega-embed (bundled, loaded on first use). */

export type ChartHandle = {
  toSVG(): Promise<string>;
  /** A PNG data URL. */
  toPNG(): Promise<string>;
  dispose(): void;
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
  const draw = () =>
    embed(el, spec as never, {
      actions: false,
      renderer: 'svg',
      config: themeConfig(el) as never
    });
  let result = await draw();
  let disposed = false;
  const unwatch = watchTheme(() => {
    if (disposed) {
      return;
    }
    draw().then(
      next => {
        result.finalize();
        result = next;
        el.dataset.theme = document.body.dataset.jpThemeName ?? '';
      },
      () => undefined
    );
  });
  return {
    toSVG: () => result.view.toSVG(),
    toPNG: () => result.view.toImageURL('png', 2),
    dispose: () => {
      disposed = true;
      unwatch();
      result.finalize();
    }
  };
};
