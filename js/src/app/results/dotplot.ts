/**
 * A gene dot plot in the Results tab: for up to three genes and a grouping
 * column, each group's fraction of cells expressing the gene (dot size) and its
 * mean expression (dot color), as scanpy's `sc.pl.dotplot` draws it. The
 * numbers are computed by the service (`dot_plot`); the plot exports as SVG and
 * PNG (as drawn) and its numbers as CSV.
 */

import { VEGA_LITE_SCHEMA, type ChartHandle, type ChartRenderer } from '../shared/chart';
import { download, empty, errorBox, fill, h } from '../shared/dom';
import { GeneBox } from '../figures/genebox';
import { loadInto } from '../shared/load';
import { TransportError, type Transport } from '../shared/transport';
import type { DotPlot } from '../shared/types';

/** The Vega-Lite spec: groups down, genes across, size = fraction expressing, color = mean. */
export function dotPlotSpec(plot: DotPlot): object {
  return {
    $schema: VEGA_LITE_SCHEMA,
    data: { values: plot.rows.map(r => ({ ...r, percent: r.fraction * 100 })) },
    width: { step: 44 },
    height: { step: 22 },
    config: { axis: { labelLimit: 0 } },
    mark: { type: 'circle', stroke: '#555', strokeWidth: 0.5, opacity: 1 },
    encoding: {
      x: { field: 'gene', type: 'nominal', sort: plot.genes, title: null, axis: { labelAngle: -40 } },
      y: { field: 'group', type: 'nominal', sort: plot.groups, title: plot.groupby },
      size: { field: 'percent', type: 'quantitative', title: '% expressing', scale: { domain: [0, 100], range: [0, 400] } },
      color: { field: 'mean', type: 'quantitative', title: 'mean', scale: { scheme: 'reds' } },
      tooltip: [
        { field: 'group', title: plot.groupby },
        { field: 'gene' },
        { field: 'percent', title: '% expressing', format: '.1f' },
        { field: 'mean', format: '.3g' },
        { field: 'n_cells', title: 'cells', format: ',' }
      ]
    }
  };
}

/** An export's file name: the plot's column and genes (data) kept to letters, digits, `.`, `-` and `_`. */
export function dotPlotFile(plot: DotPlot, ext: string): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '') || 'x';
  return `dotplot-${safe(plot.groupby)}-${plot.genes.map(safe).join('-')}.${ext}`;
}

/** The plot's numbers as CSV (one row per group and gene); group and gene texts are data, quoted. */
export function dotPlotCsv(plot: DotPlot): string {
  const quote = (s: string) => `"${(/^[=+\-@\t\r]/.test(s) ? `'${s}` : s).replace(/"/g, '""')}"`;
  const lines = plot.rows.map(r => [quote(r.group), quote(r.gene), r.fraction, r.mean, r.n_cells].join(','));
  return [`${quote(plot.groupby)},gene,fraction_expressing,mean,n_cells`, ...lines].join('\n') + '\n';
}

export class DotPlotPanel {
  readonly node: HTMLElement;
  private readonly groupby: HTMLSelectElement;
  private readonly out: HTMLElement;
  private readonly genes: GeneBox;
  private chart: ChartHandle | null = null;

  constructor(
    private readonly transport: Transport,
    private readonly version: number,
    private readonly renderChart: ChartRenderer
  ) {
    this.genes = new GeneBox(
      () => transport.request('genes', { version }).then(r => r.data),
      () => void this.draw(),
      'Genes of the dot plot (up to 3)',
      false
    );
    this.groupby = h('select', { class: 'sds-select', 'aria-label': 'Group cells by' }) as HTMLSelectElement;
    this.groupby.addEventListener('change', () => void this.draw());
    this.out = h('div', { class: 'sds-dotplot-out', 'aria-live': 'polite' });
    const headingId = `sds-dotplot-${version}`;
    this.node = h(
      'section',
      { class: 'sds-result sds-dotplot', 'aria-labelledby': headingId },
      h('header', { class: 'sds-result-head' }, h('h3', { class: 'sds-result-title', id: headingId }, 'Gene dot plot')),
      h(
        'div',
        { class: 'sds-dotplot-pick' },
        h('span', { class: 'sds-dotplot-genes' }, 'genes ', this.genes.node),
        h('label', {}, 'by ', this.groupby)
      ),
      this.out
    );
    void this.fillGroupings();
  }

  /** The grouping columns: the table's categorical and boolean obs columns. */
  private async fillGroupings(): Promise<void> {
    try {
      const [contents, genes] = await Promise.all([
        this.transport.request('contents', { version: this.version }),
        this.transport.request('genes', { version: this.version })
      ]);
      const table = contents.data.tables.find(t => t.name === genes.data.table);
      const columns = (table?.obs ?? []).filter(c => c.kind === 'categorical' || c.kind === 'boolean').map(c => c.column);
      fill(this.groupby, columns.map(c => h('option', { value: c }, c)));
      if (!genes.data.names.length) {
        this.node.hidden = true;
      } else if (!columns.length) {
        fill(this.out, empty('This table has no categorical obs column to group by.'));
      }
    } catch {
      this.node.hidden = true; // no table with genes here: nothing to plot
    }
  }

  /** Pick genes for the plot (for a flow or a link from elsewhere). */
  async show(genes: string[], groupby: string): Promise<void> {
    this.genes.picked = genes.slice(0, 3);
    this.groupby.value = groupby;
    await this.draw();
  }

  private async draw(): Promise<void> {
    const genes = this.genes.picked;
    if (!genes.length || !this.groupby.value) {
      return;
    }
    this.chart?.dispose();
    this.chart = null;
    await loadInto(
      this.out,
      () => this.transport.request('dot_plot', { version: this.version, gene: genes.join(','), groupby: this.groupby.value }),
      plot => this.render(plot)
    );
  }

  private render(plot: DotPlot): void {
    const target = h('div', {
      class: 'sds-chart sds-dotplot-chart',
      role: 'img',
      'aria-label': `Dot plot of ${plot.genes.join(', ')} by ${plot.groupby}: dot size the percent of cells expressing, color the mean`
    });
    const csv = h('button', { type: 'button', class: 'sds-button' }, 'Download CSV');
    csv.addEventListener('click', () => download(new Blob([dotPlotCsv(plot)], { type: 'text/csv' }), dotPlotFile(plot, 'csv')));
    // the numbers go out as CSV; pictures of figures come from the one export renderer (saved figures only)
    fill(this.out, target, h('div', { class: 'sds-dotplot-actions' }, csv));
    this.renderChart(target, dotPlotSpec(plot)).then(
      handle => {
        this.chart = handle;
      },
      err => target.replaceWith(errorBox(`chart failed: ${TransportError.from(err).message}`, 'chart'))
    );
  }

  dispose(): void {
    this.chart?.dispose();
  }
}
