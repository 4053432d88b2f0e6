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

export const vegaRenderer: ChartRenderer = async (el, spec) => {
  const { default: embed } = await import('vega-embed');
  const result = await embed(el, spec as never, {
    actions: false,
    renderer: 'svg',
    config: themeConfig(el) as never
  });
  return {
    toSVG: () => result.view.toSVG(),
    toPNG: () => result.view.toImageURL('png', 2),
    dispose: () => result.finalize()
  };
};
