import { describe, expect, it } from 'vitest';
import { compile } from 'vega-lite';
import { parse, View } from 'vega';
import { agreementNode, agreementText, changeText, contingencySpec, drawable, score } from '../app/compare/agreement';
import { compareModel } from '../app/compare/compare';
import { VEGA_LITE_SCHEMA } from '../app/shared/chart';
import { percentileLimits, withLimits } from '../app/figures/colorlimits';
import { exactGene, geneEntries, matchGenes, nearestGenes } from '../app/figures/genebox';
import type { Comparison, ObsChange } from '../app/shared/types';

const merged: ObsChange = {
  column: 'leiden',
  kind: 'categorical',
  n_changed: 33504,
  agreement: {
    ari: 0.6234,
    nmi: 0.7111,
    matched: [
      { a: '0', b: '0', count: 40000 },
      { a: '3', b: '1', count: 20000 }
    ],
    n_moved: 13076
  },
  contingency: {
    a: ['0', '3', null],
    b: ['0', '1'],
    counts: [
      [40000, 13076],
      [0, 20000],
      [5, 0]
    ]
  }
};

describe('the agreement of two clusterings', () => {
  it('leads with the cells that moved, formatted, or says a renaming is only that', () => {
    expect(agreementText(merged.agreement!)).toBe('13,076 cells moved (ARI 0.62, NMI 0.71)');
    expect(agreementText({ ari: 1, nmi: 1, matched: [], n_moved: 0 })).toBe('same partition, renamed');
    const c = { a: 0, b: 1, obs: { changed: [merged] } } as unknown as Comparison;
    expect(compareModel(c).headline[0].text).toBe('leiden: 13,076 cells moved (ARI 0.62, NMI 0.71)');
    // a column without an agreement (a string column) still counts the cells whose value differs
    expect(changeText({ column: 'note', kind: 'string', n_changed: 1200 })).toBe('note: 1,200 cells changed');
  });

  it('shows enough digits to tell a few moved cells from none (scores from scikit-learn)', () => {
    // scikit-learn 1.9.1 adjusted_rand_score / normalized_mutual_info_score of a = arange(n) % 8 against
    // the same with 99 cells of cluster 0 moved to 1 (n = 100,000), and with 1 cell moved (n = 1,000,000)
    const moved99 = { ari: 0.9977459611361704, nmi: 0.9972204167014493, matched: [], n_moved: 99 };
    expect(agreementText(moved99)).toBe('99 cells moved (ARI 0.9977, NMI 0.9972)');
    expect(score(0.9999977142788571)).toBe('0.9999977');
    expect(score(0.9999938752454635)).toBe('0.9999939');
    // no change reads 1, and nothing short of it does, however close
    expect(score(1)).toBe('1');
    for (const x of [moved99.ari, moved99.nmi, 0.9999977142788571, 1 - 1e-12]) {
      expect(Number(score(x).replace('> ', ''))).toBeLessThan(1);
    }
    // ordinary scores keep two decimals; ARI may be negative
    expect(score(0.6234)).toBe('0.62');
    expect(score(-0.0123)).toBe('-0.01');
    const para = agreementNode({ column: 'leiden', kind: 'categorical', n_changed: 99, agreement: moved99 });
    expect(para?.textContent).toContain('Adjusted Rand index 0.9977, normalised mutual information 0.9972.');
  });

  it('draws every pair, matched pairs outlined on the diagonal, counts formatted, labels never cut', () => {
    const spec = contingencySpec(merged.contingency!, 2, 'v6', 'Coarser clusters (branch, v2)', VEGA_LITE_SCHEMA) as {
      data: { values: { from: string; to: string; cells: number; matched: boolean }[] };
      encoding: { x: { axis: { labelLimit: number } }; y: { axis: { labelLimit: number } } };
      layer: { encoding: { text?: { format: string } } }[];
    };
    expect(spec.data.values).toHaveLength(6);
    expect(spec.data.values.filter(v => v.matched).map(v => [v.from, v.to])).toEqual([
      ['0', '0'],
      ['3', '1']
    ]);
    expect(spec.data.values.find(v => v.from === '(missing)')?.cells).toBe(5);
    expect(spec.encoding.x.axis.labelLimit).toBe(0);
    expect(spec.encoding.y.axis.labelLimit).toBe(0);
    expect(spec.layer[1].encoding.text?.format).toBe(',');
    expect(() => compile(spec as never)).not.toThrow();
    // a table of 1,000 x 1,000 labels would stall the page: not drawn as a heatmap
    const labels = Array.from({ length: 1000 }, (_, i) => String(i));
    expect(drawable({ a: labels, b: labels, counts: [] })).toBe(false);
    expect(drawable(merged.contingency!)).toBe(true);
  });
});

describe('the contingency heatmap as Vega draws it', () => {
  it("reads its colour legend's ticks as whole counts, never as 6e+2", async () => {
    const table = { a: ['0', '1', '2'], b: ['0', '1', '2'], counts: [[622, 0, 0], [0, 512, 312], [0, 0, 45]] };
    const spec = contingencySpec(table, 3, 'v6', 'Coarser clusters (branch, v2)', VEGA_LITE_SCHEMA);
    const view = new View(parse(compile(spec as never).spec), { renderer: 'none' });
    const svg = await view.toSVG();
    view.finalize();
    const texts = [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map(m => m[1]);
    expect(texts).toContain('622');
    const ticks = texts.filter(t => /^[\d,.e+]+$/.test(t) && !['622', '512', '312', '45'].includes(t));
    expect(ticks.length).toBeGreaterThan(1);
    expect(ticks.every(t => /^\d{1,3}(,\d{3})*$/.test(t))).toBe(true);
  });
});

describe('the gene box', () => {
  const entries = geneEntries({
    table: 'table',
    names: ['ENSG01', 'ENSG02', 'ENSG03', 'ENSG04'],
    symbol_column: 'gene_symbols',
    symbols: ['EPCAM', 'EPAS1', 'KRT8', 'CD3E']
  });

  it('finds a gene in any case, by var name or symbol, prefixes first', () => {
    for (const typed of ['Epcam', 'epcam', 'EPCAM']) {
      expect(exactGene(entries, typed)?.name).toBe('ENSG01');
    }
    expect(exactGene(entries, 'ensg03')?.symbol).toBe('KRT8');
    expect(matchGenes(entries, 'ep').map(e => e.symbol)).toEqual(['EPCAM', 'EPAS1']);
    expect(matchGenes(entries, 'rt').map(e => e.symbol)).toEqual(['KRT8']);
  });

  it('offers the nearest names for a wrong one', () => {
    expect(exactGene(entries, 'Epcm')).toBeNull();
    expect(nearestGenes(entries, 'Epcm', 1)[0].symbol).toBe('EPCAM');
  });
});

describe('colour limits', () => {
  it('clips to percentiles as numpy interpolates them', () => {
    const values = Float32Array.from([...Array.from({ length: 101 }, (_, i) => i), NaN]);
    // numpy.percentile(range(101), [1, 99]) == [1, 99]; NaN is left out
    expect(percentileLimits(values, 1, 99)).toEqual({ min: 1, max: 99 });
    expect(percentileLimits(Float32Array.from([0, 10]), 25, 50)).toEqual({ min: 2.5, max: 5 });
    expect(percentileLimits(Float32Array.from([NaN]), 1, 99)).toBeNull();
  });

  it('keeps a span when every value is the same', () => {
    const color = { mode: 'continuous' as const, column: 'g', colormap: 'viridis', min: 0, max: 1, lut: [] };
    const limited = withLimits(color, { min: 3, max: 3 });
    expect(limited.max).toBeGreaterThan(limited.min);
  });
});

describe('the contingency heatmap, drawn', () => {
  /** The SVG Vega draws for `spec` fitted to a panel `width` pixels wide, as the compare view does. */
  async function svgAt(spec: object, width: number): Promise<{ svg: string; width: number }> {
    const { fitSpec } = await import('../app/shared/chart');
    const vega = await import('vega');
    const view = new vega.View(vega.parse(compile(fitSpec(spec, width) as never).spec), { renderer: 'none' });
    const svg = await view.toSVG();
    const size = /<svg[^>]*\swidth="([\d.]+)"/.exec(svg);
    view.finalize();
    return { svg, width: Number(size?.[1]) };
  }

  it('reads cleanly at 700 and 420 px: every label whole, counts with thousands separators', async () => {
    const long = 'Tumour epithelium, hypoxic core (merged)';
    const table = {
      a: ['0', '3', long, null],
      b: ['0', '1', 'T cells'],
      counts: [
        [40000, 13076, 0],
        [0, 20000, 12],
        [7, 0, 1500],
        [5, 0, 0]
      ]
    };
    const spec = contingencySpec(table, 3, 'v6 Leiden', 'Coarser clusters (branch, v2)', VEGA_LITE_SCHEMA);
    for (const panel of [700, 420]) {
      const { svg } = await svgAt(spec, panel);
      const texts = [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map(m => m[1]);
      for (const label of ['0', '3', long, '(missing)', '1', 'T cells', '13,076', '40,000', '1,500']) {
        expect(texts, `${label} at ${panel} px`).toContain(label);
      }
      expect(texts.some(t => t.endsWith('…')), `a label cut at ${panel} px`).toBe(false);
      expect(texts).not.toContain('13076');
    }
  });
});

describe('the transitions heatmap (a column that is not a clustering)', () => {
  it('keeps labels whole and formats counts too', async () => {
    const { transitionSpec } = await import('../app/compare/compare');
    const spec = transitionSpec(
      [
        { a: 'a rather long free-text annotation of a cell', b: 'another long annotation', count: 13076 },
        { a: 'x', b: null, count: 2 }
      ],
      'v5',
      'v6'
    ) as { config: { axis: { labelLimit: number } }; layer: { encoding: { text?: { format: string } } }[] };
    expect(spec.config.axis.labelLimit).toBe(0);
    expect(spec.layer[1].encoding.text?.format).toBe(',');
    expect(() => compile(spec as never)).not.toThrow();
  });

  it('puts its legend above the grid, where a narrow panel cannot clip it (issue 41, item 5)', async () => {
    const { transitionSpec } = await import('../app/compare/compare');
    const spec = transitionSpec([{ a: 'x', b: 'y', count: 5 }], 'v1', 'v2') as {
      layer: { encoding: { color?: { legend?: { orient: string; direction: string } } } }[];
    };
    expect(spec.layer[0].encoding.color?.legend).toMatchObject({ orient: 'top', direction: 'horizontal' });
    expect(() => compile(spec as never)).not.toThrow();
  });
});
