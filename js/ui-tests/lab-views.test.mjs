// UI flows of the version panel's views in a real JupyterLab: opening by double-click (and the
// setting that turns it off), a missing parent, history, figures, results, compare, changes and
// contents. The spatial view is in lab-tissue.test.mjs, the narrow panels and layers in
// lab-layers.test.mjs, labels, compare on the Xenium demo and exports in lab-exports.test.mjs. The
// groups run side by side, each on its own server (package.json's test:ui); the shared set-up and
// steps are in harness.mjs.

import { spawnSync } from 'node:child_process';
import { cpSync } from 'node:fs';
import { dirname, join } from 'node:path';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  PYTHON,
  api,
  axeViolations,
  baseFolder,
  canvasChecksum,
  changes,
  checkAxe,
  exportFile,
  exportsOf,
  crumbs,
  inThemes,
  item,
  narrowTo,
  newPage,
  openListing,
  python,
  setLayer,
  setSetting,
  settled,
  shot,
  sizePanel,
  skip,
  stagePixels,
  startLab,
  stopLab,
  svgSummary,
  top,
  wearsTheme,
  work
} from './harness.mjs';

describe('JupyterLab version browser: the views', { skip, timeout: 1800000 }, () => {
  before(startLab);
  after(stopLab);

  it('double-click opens a version in the browser panel; an ordinary folder still opens', async () => {
    const page = await newPage();
    await openListing(page);
    await item(page, baseFolder).dblclick();
    await page.waitForFunction(f => document.querySelector('.jp-BreadCrumbs')?.textContent?.includes(f), baseFolder);
    await openListing(page);
    const name = top.split('/').pop();
    await item(page, name).dblclick();
    await page.waitForSelector('.sds-history-row', { timeout: 30000 });
    assert.equal(await crumbs(page), '/datasets/');
    const rows = await page.locator('.sds-history-row').count();
    assert.ok(rows >= 3, `${rows} rows`);
    const title = await page.locator('.sds-history-row').first().locator('.sds-row-title').innerText();
    await page.waitForFunction(t => document.querySelector('.lm-DockPanel .lm-TabBar-tab.lm-mod-current')?.textContent?.includes(t), title);
    await shot(page, 'panel-history');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  it('the setting turns the double-click interception off', async () => {
    await setSetting('sds-jupyter:plugin', { openVersionsOnDoubleClick: false });
    try {
      const page = await newPage();
      await openListing(page);
      const name = top.split('/').pop();
      await item(page, name).dblclick();
      await page.waitForFunction(n => document.querySelector('.jp-BreadCrumbs')?.textContent?.includes(n), name);
      assert.equal(await page.locator('.sds-app').count(), 0);
      await page.close();
    } finally {
      await setSetting('sds-jupyter:plugin', { openVersionsOnDoubleClick: true });
    }
  });

  it('a missing parent: the versions that resolve, the break named, figures say why', async () => {
    const name = top.split('/').pop();
    cpSync(join(work, 'root', top), join(work, 'root', 'orphan', name), { recursive: true });
    const page = await newPage();
    await openListing(page, 'orphan');
    await item(page, name).dblclick();
    await page.waitForSelector('.sds-missing-row:not([hidden])', { timeout: 30000 });
    assert.match(await page.locator('.sds-missing-row').innerText(), /^Dataset [0-9a-f-]+ below these versions is missing: add it to the workspace to read their data or Fetch from Cirro$/);
    assert.equal(await page.locator('.sds-history-row').count(), 1);
    // the version saved a figure, so it opens on Figures: each figure it saved needs the missing dataset
    await page.waitForFunction(() => /needs dataset [0-9a-f-]+, which is missing/.test(document.querySelector('.sds-figures')?.textContent ?? ''), null, { timeout: 30000 });
    await page.locator('.sds-tab[data-tab="changes"]').click();
    await page.waitForSelector('.sds-changes .sds-note');
    await page.waitForSelector('.sds-changes .sds-ops li');
    await shot(page, 'panel-missing-parent');
    await page.locator('.sds-tab[data-tab="figures"]').click();
    await page.waitForFunction(() => /add it to the workspace/.test(document.querySelector('.sds-figures')?.textContent ?? ''), null, { timeout: 30000 });
    assert.deepEqual(page.errors, []);
    await page.close();

    // issue 29 item 5: two readable versions above the gap (the top and its parent; the versions below missing)
    const chain = (await (await api(`/sds-jupyter/api/history?path=${encodeURIComponent(top)}`)).json()).versions;
    const [upper, lower] = chain; // top first
    cpSync(join(work, 'root', top), join(work, 'root', 'orphan2', name), { recursive: true });
    cpSync(join(work, 'root', dirname(top), lower.dataset_id), join(work, 'root', 'orphan2', lower.dataset_id), { recursive: true });
    const openGap = async p => {
      await openListing(p, 'orphan2');
      await item(p, name).dblclick();
      await p.waitForSelector('.sds-missing-row:not([hidden])', { timeout: 30000 });
      await p.waitForFunction(() => document.querySelectorAll('.sds-history-row').length === 2, null, { timeout: 30000 });
    };
    const gap = await newPage();
    try {
      await openGap(gap);
      // the versions keep their own numbers (depth from the base, the missing ones counted)
      assert.deepEqual(await gap.locator('.sds-history-row .sds-depth').allInnerTexts(), [`v${upper.depth}`, `v${lower.depth}`]);
      assert.deepEqual(await gap.locator('.sds-history-row .sds-row-title').allInnerTexts(), [upper.title, lower.title]);
      // said once, in plain words (the missing row), not in the library's words above
      assert.equal(await gap.locator('.sds-banner').innerText(), '');
      assert.doesNotMatch(await gap.locator('.sds-app').innerText(), /folder map|attach it|\bstack\b/);
      // its figures say which dataset they need, never "no figures"
      await gap.waitForFunction(() => /needs dataset [0-9a-f-]+, which is missing/.test(document.querySelector('.sds-figures')?.textContent ?? ''), null, { timeout: 30000 });
      assert.doesNotMatch(await gap.locator('.sds-figures').innerText(), /has no figures/);
      await shot(gap, 'issue29-missing-figures');
      // Compare between the two readable versions: what the upper one saved, and why cells cannot be compared
      await gap.locator('.sds-tab[data-tab="compare"]').click();
      await gap.waitForSelector('.sds-compare-out .sds-compare-ops li', { timeout: 30000 });
      const ops = await gap.locator('.sds-compare-out .sds-compare-ops li').allInnerTexts();
      assert.ok(ops.length >= 1 && ops.every(o => o.startsWith(`v${upper.depth} `)), ops.join(' | '));
      assert.match(await gap.locator('.sds-compare-out .sds-note').first().innerText(), /below these versions is missing/);
      assert.equal(await gap.locator('.sds-compare-out .sds-error').count(), 0);
      assert.deepEqual(await axeViolations(gap, '.sds-panel .sds-app'), [], 'Compare above the gap');
      await shot(gap, 'issue29-missing-compare');
      await sizePanel(gap, 420);
      await shot(gap, 'issue29-missing-compare-420');
      assert.deepEqual(gap.errors, []);
    } finally {
      await gap.close();
    }
    await inThemes(['dark'], async dark => {
      await openGap(dark);
      await dark.waitForFunction(() => /needs dataset [0-9a-f-]+, which is missing/.test(document.querySelector('.sds-figures')?.textContent ?? ''), null, { timeout: 30000 });
      await wearsTheme(dark);
      assert.deepEqual(await axeViolations(dark, '.sds-panel .sds-app'), [], 'a broken chain, dark');
      await shot(dark, 'issue29-missing-figures-dark');
      assert.deepEqual(dark.errors, []);
    });
  });

  it('figures, results and compare draw from the server', async () => {
    const page = await newPage();
    // Vega-Lite's complaints about a spec (a fit it drops, a field it cannot find) count as errors here
    const vegaWarnings = [];
    page.on('console', m => /Dropping|Infinite extent|cannot find/i.test(m.text()) && vegaWarnings.push(m.text()));
    await openListing(page);
    await item(page, top.split('/').pop()).dblclick();
    await page.waitForSelector('.sds-history-row');
    await page.locator('.sds-tab[data-tab="figures"]').click();
    await page.waitForSelector('.sds-figure', { timeout: 30000 });
    await page.waitForFunction(() => document.querySelectorAll('.sds-deck-stage[data-live="true"], canvas.sds-canvas, .sds-chart svg').length >= 2, null, { timeout: 30000 });
    assert.deepEqual(await page.locator('.sds-figures .sds-error').allInnerTexts(), []);
    // the spatial view drew with WebGL (software WebGL here) and has painted pixels
    assert.equal(await page.locator('.sds-spatial').first().getAttribute('data-renderer'), 'webgl');
    // the cells themselves are drawn: pixels change where the cells are hidden (the image
    // under them would paint the canvas on its own)
    const firstFigure = page.locator('.sds-figure').filter({ has: page.locator('.sds-deck-canvas') }).first();
    const snapshot = async () => (await stagePixels(firstFigure)).d;
    await settled(page);
    const withCells = await snapshot();
    const checksum = async () => canvasChecksum(firstFigure.locator('.sds-deck-canvas'));
    await changes(page, checksum, () => setLayer(firstFigure, 'Cells', false), 'cells off redraws the canvas');
    const withoutCells = await snapshot();
    await setLayer(firstFigure, 'Cells', true);
    let cellPixels = 0;
    for (let i = 0; i < withCells.length; i += 4) {
      if (withCells[i] !== withoutCells[i] || withCells[i + 1] !== withoutCells[i + 1] || withCells[i + 2] !== withoutCells[i + 2]) cellPixels++;
    }
    assert.ok(cellPixels > 200, `${cellPixels} pixels painted by the cells`);
    await shot(page, 'panel-figures');
    // exports: every button of a canvas and a chart figure downloads the file the service draws,
    // named after the version (depth and title) and the figure; SVGs that parse, with the title
    // and the legend (the categories, the image channels) as text
    const selected = page.locator('.sds-history-row.sds-selected');
    const depth = await selected.getAttribute('data-depth');
    const versionTitle = await selected.locator('.sds-row-title').innerText();
    const prefix = `v${depth}_${versionTitle.replace(/[^\w.-]+/g, '_').replace(/^[._]+|_+$/g, '')}`;
    const canvasFigure = page.locator('.sds-figure-canvas').first();
    const exported = await exportsOf(page, canvasFigure, prefix);
    const svgDoc = await svgSummary(page, exported.svg);
    assert.equal(svgDoc.error, null);
    assert.ok(svgDoc.texts.includes(exported.title), JSON.stringify(svgDoc.texts));
    assert.ok(svgDoc.shapes > 0, 'cells and legend as vector shapes');
    const onScreen = await canvasFigure.locator('.sds-legend-label').allInnerTexts();
    assert.ok(onScreen.length > 0 && onScreen.every(label => svgDoc.texts.includes(label.trim())), JSON.stringify({ onScreen, texts: svgDoc.texts }));
    if (await canvasFigure.locator('.sds-channel-list').count()) {
      const shown = await canvasFigure.locator('.sds-channel-list li').evaluateAll(rows =>
        rows.filter(r => r.querySelector('input.sds-channel-on')?.checked).map(r => r.querySelector('.sds-channel-name')?.textContent?.trim() ?? ''));
      assert.ok(shown.length > 0 && shown.every(name => svgDoc.texts.includes(name)), JSON.stringify({ shown, texts: svgDoc.texts }));
    }
    // colored by a gene: the legend on screen is a colorbar whose ends read as formatted numbers
    await canvasFigure.locator('.sds-gene').fill('channel_1_sum');
    await canvasFigure.locator('.sds-gene').press('Enter');
    await canvasFigure.locator('.sds-gradient-range').waitFor({ timeout: 30000 });
    const ends = await canvasFigure.locator('.sds-gradient-range span').allInnerTexts();
    await canvasFigure.scrollIntoViewIfNeeded();
    await shot(page, 'figures-colorbar');
    assert.ok(ends.every(t => /^-?[\d,]+(\.\d+)?(e[+-]\d+)?$/.test(t) && t.replace(/\D/g, '').length <= 8), ends.join(' '));
    // an export asked for now is colored by the gene too: its colorbar ends read as on screen
    const gene = await svgSummary(page, (await exportsOf(page, canvasFigure, prefix)).svg);
    assert.ok(ends.every(t => gene.texts.includes(t)), JSON.stringify({ ends, texts: gene.texts }));
    const chartExports = await exportsOf(page, page.locator('.sds-figure-chart').first(), prefix);
    const chartDoc = await svgSummary(page, chartExports.svg);
    assert.equal(chartDoc.error, null);
    assert.ok(chartDoc.texts.includes(chartExports.title) && chartDoc.texts.length > 3, 'the chart as vector text');
    // another version's exports of the same figure never collide
    const figureId = await page.locator('.sds-figure-canvas').first().getAttribute('data-figure');
    await page.locator('.sds-history-row').nth(1).click();
    await page.waitForFunction(() => document.querySelectorAll('.sds-figure-tools button').length > 0, null, { timeout: 30000 });
    const other = page.locator(`.sds-figure-canvas[data-figure="${figureId}"]`);
    if (await other.count()) {
      const download = await exportFile(other.locator('.sds-figure-tools button', { hasText: 'SVG' }));
      assert.notEqual(download.suggestedFilename(), exported.names.svg);
      assert.match(download.suggestedFilename(), new RegExp(`^v${await page.locator('.sds-history-row.sds-selected').getAttribute('data-depth')}_`));
    }
    await page.locator('.sds-history-row').first().click();
    await page.locator('.sds-tab[data-tab="results"]').click();
    await page.waitForSelector('.sds-result .sds-table tbody tr', { timeout: 30000 });
    await shot(page, 'panel-results');
    assert.deepEqual(await page.locator('.sds-results .sds-error').allInnerTexts(), []);
    await page.locator('.sds-tab[data-tab="compare"]').click();
    await page.waitForSelector('.sds-delta-figures', { timeout: 30000 });
    assert.deepEqual(await page.locator('.sds-compare .sds-error').allInnerTexts(), []);
    // the first version against the top: changed obs columns come with value counts
    await page.locator('.sds-compare select').first().selectOption('1');
    await page.waitForSelector('.sds-obs-change tbody tr', { timeout: 30000 });
    assert.ok((await page.locator('.sds-obs-change tbody tr').count()) >= 2);
    await shot(page, 'panel-compare');
    // arrow keys move the selection
    await page.locator('.sds-history').focus();
    await page.keyboard.press('ArrowDown');
    const second = await page.locator('.sds-history-row').nth(1).getAttribute('data-depth');
    assert.equal(await page.locator('.sds-history-row.sds-selected').getAttribute('data-depth'), second);
    assert.deepEqual(page.errors, []);
    assert.deepEqual(vegaWarnings, []);
    await page.close();
  });

  it('compare, changes and contents say what changed, in words, counts a crosstab confirms, accessibly', async () => {
    // the transitions of "regions" from v2 to v3, computed by pandas on the two AnnData objects
    const crosstab = spawnSync(
      PYTHON,
      [
        '-c',
        [
          'import json, sys, pandas as pd, sds_jupyter as sds',
          'stack = sds.Stack.resolve(sys.argv[1])',
          'a, b = (sds.open_anndata(stack.at(d)).obs["regions"] for d in (2, 3))',
          't = pd.crosstab(a.astype(str), b.astype(str))',
          'print(json.dumps(sorted(([x, y, int(t.loc[x, y])] for x in t.index for y in t.columns if t.loc[x, y] and x != y), key=lambda r: (-r[2], r[0], r[1]))))'
        ].join('\n'),
        join(work, 'root', top)
      ],
      { encoding: 'utf8' }
    );
    assert.equal(crosstab.status, 0, crosstab.stderr);
    const expected = JSON.parse(crosstab.stdout.trim().split('\n').pop());
    assert.ok(expected.length >= 2, crosstab.stdout);

    const page = await newPage();
    await openListing(page);
    await item(page, top.split('/').pop()).dblclick();
    await page.waitForSelector('.sds-history-row');
    // Changes of v3: sentences with their values, files closed (a version that saved a figure opens on it)
    await page.locator('.sds-history-row[data-depth="3"]').click();
    await page.locator('.sds-tab[data-tab="changes"]').click();
    await page.waitForFunction(() => /Set uns notes: 'Regions redrawn/.test(document.querySelector('.sds-changes')?.textContent ?? ''), null, { timeout: 30000 });
    const sentences = await page.locator('.sds-changes > .sds-ops > li').allInnerTexts();
    // regions redrawn over the ones below: its values, and how many cells moved to another group (checked below)
    const regrouped = sentences.find(s => /^Set obs regions \(categorical: left 16 · right 10\): \d+ cells? moved to another group$/.test(s));
    assert.ok(regrouped, sentences.join(' | '));
    assert.ok(sentences.includes("Added result 'Spatial autocorrelation' (morans_i, moran): 3 rows"), sentences.join(' | '));
    assert.equal(await page.locator('details.sds-files').evaluate(d => d.open), false);
    await checkAxe(page, 'Changes');
    await shot(page, 'panel-changes-sentences');

    // Compare follows the selection: A = v3, B = its parent v2
    await page.locator('.sds-tab[data-tab="compare"]').click();
    await page.waitForSelector('.sds-transitions tbody tr', { timeout: 30000 });
    assert.deepEqual(await page.locator('.sds-compare select').evaluateAll(s => s.map(x => x.value)), ['3', '2']);
    const rows = async () =>
      page.locator('.sds-obs-change[data-column="regions"] .sds-transitions tbody tr').evaluateAll(trs =>
        trs.map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent.trim()).filter(t => t && t !== '→'))
      );
    assert.deepEqual(await rows(), expected.map(([x, y, n]) => [x, y, String(n)]));
    // the headline counts the cells that moved (off the label pairs keeping the most cells
    // together: scipy's assignment on pandas' crosstab); the column's heading, the labels that differ
    const moved = Number(
      python(
        [
          'import pandas as pd, sds_jupyter as sds',
          'from scipy.optimize import linear_sum_assignment',
          `stack = sds.Stack.resolve(${JSON.stringify(join(work, 'root', top))})`,
          'a, b = (sds.open_anndata(stack.at(d)).obs["regions"].astype(str) for d in (2, 3))',
          'ct = pd.crosstab(a, b).to_numpy()',
          'r, c = linear_sum_assignment(ct, maximize=True)',
          'print(int(ct.sum() - ct[r, c].sum()))'
        ].join('\n')
      )
    );
    assert.equal(Number(/: (\d+) cells? moved/.exec(regrouped)[1]), moved, 'Changes counts the moved cells Compare counts');
    const headline = await page.locator('.sds-headline').innerText();
    assert.ok(headline.includes(moved ? `regions: ${moved} ${moved === 1 ? 'cell' : 'cells'} moved` : 'regions: same partition, renamed'), headline);
    // the column's heading tells the headline's story (moved cells, or a renaming), not the labels that differ
    assert.match(await page.locator('.sds-obs-change[data-column="regions"] h4').innerText(), moved ? new RegExp(`: ${moved} cells? moved`) : /same partition, renamed/);
    assert.ok(/uns added: notes/.test(headline) && /figure added: Redrawn regions/.test(headline), headline);
    await page.waitForSelector('.sds-compare-chart svg', { timeout: 30000 });
    await checkAxe(page, 'Compare');
    await shot(page, 'panel-compare-transitions');
    // swap: the same pairs, mirrored
    await page.locator('.sds-swap').click();
    await page.waitForFunction(() => document.querySelector('.sds-compare select')?.value === '2');
    await page.waitForSelector('.sds-transitions tbody tr');
    const swapped = await rows();
    assert.deepEqual(
      swapped.map(r => r.join(' ')).sort(),
      expected.map(([x, y, n]) => `${y} ${x} ${n}`).sort()
    );

    // Contents: every element of blobs, the table's columns, what v3 wrote marked
    await page.locator('.sds-tab[data-tab="contents"]').click();
    await page.waitForSelector('.sds-elements-table tbody tr', { timeout: 30000 });
    assert.equal(await page.locator('.sds-elements-table tbody tr').count(), 9);
    const regions = await page.locator('.sds-obs-columns tr[data-column="regions"]').innerText();
    assert.match(regions, /left 16 · right 10/);
    assert.match(regions, /changed/);
    await checkAxe(page, 'Contents');
    await shot(page, 'panel-contents');

    // narrow panel
    await narrowTo(page, 560);
    await shot(page, 'panel-contents-narrow');
    await checkAxe(page, 'Contents (narrow)');
    await page.locator('.sds-tab[data-tab="compare"]').click();
    await page.waitForSelector('.sds-transitions tbody tr');
    await shot(page, 'panel-compare-narrow');
    assert.deepEqual(page.errors, []);
    await page.close();

    // dark theme
    await inThemes(['dark'], async dark => {
      await openListing(dark);
      await item(dark, top.split('/').pop()).dblclick();
      await dark.waitForSelector('.sds-history-row');
      await dark.locator('.sds-history-row[data-depth="3"]').click();
      await dark.locator('.sds-tab[data-tab="changes"]').click();
      await dark.waitForSelector('.sds-changes > .sds-ops > li', { timeout: 30000 });
      await shot(dark, 'panel-changes-dark');
      await dark.locator('.sds-tab[data-tab="compare"]').click();
      await dark.waitForSelector('.sds-compare-chart svg', { timeout: 30000 });
      await checkAxe(dark, 'Compare (dark)');
      await shot(dark, 'panel-compare-dark');
      await dark.locator('.sds-tab[data-tab="contents"]').click();
      await dark.waitForSelector('.sds-elements-table tbody tr', { timeout: 30000 });
      await checkAxe(dark, 'Contents (dark)');
      await shot(dark, 'panel-contents-dark');
    });
  });
});
