// UI flows of the version panel at 700 and 420 px in both themes in a real JupyterLab, nucleus and
// cell outlines, and the spatial view linked to results and compare. The groups run side by side,
// each on its own server (package.json's test:ui); the shared set-up and steps are in harness.mjs.

import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  PYTHON,
  TIERS,
  base,
  buildXeniumDemos,
  checkAxe,
  closeLayers,
  here,
  inThemes,
  item,
  narrowTo,
  narrowed,
  newPage,
  openFigures,
  openLayers,
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
  top,
  waitForTissue,
  wearsTheme,
  work,
  xeniumDemo
} from './harness.mjs';
/**
 * At a 420 px panel, the figure in view, its Layers menu open and shot: whether the menu and its
 * labels row stay inside the figure's box, every control of the row whole (closed again after).
 */
describe('JupyterLab version browser: the views at 700 and 420 px, outlines and links', { skip, timeout: 1800000 }, () => {
  before(async () => {
    await startLab();
    // the Xenium-like demos the flows below read, built in one Python process while the first flows run
    if (!narrowed) {
      buildXeniumDemos([
        ['nuclei', 600, 1024]
      ]);
    }
  });
  after(stopLab);

  /** Open the top version's Results tab in a panel exactly `width` px wide (the left sidebar closed). */
  async function resultsAt(page, width) {
    await panelAt(page, width);
    await page.locator('.sds-tab[data-tab="results"]').click();
    await page.waitForSelector('.sds-result .sds-table tbody tr', { timeout: 30000 });
    // every default chart drawn (and redrawn at the settled width)
    await page.waitForFunction(() => {
      const charts = [...document.querySelectorAll('.sds-result .sds-chart')];
      return charts.length >= 3 && charts.every(c => c.querySelector('svg'));
    }, null, { timeout: 30000 });
    await settled(page);
  }

  /** Open the top version in a panel exactly `width` px wide (the left sidebar closed). */
  async function panelAt(page, width) {
    await openListing(page);
    await item(page, top.split('/').pop()).dblclick();
    await page.waitForSelector('.sds-history-row', { timeout: 30000 });
    await page.keyboard.press('Control+b'); // close the file browser: the panel takes the main area
    await settled(page);
    await sizePanel(page, width);
  }

  /** axe-core on the panel: serious and critical violations fail, with what and where. */
  async function axeProblems(page) {
    await page.addScriptTag({ path: join(here, '..', 'node_modules', 'axe-core', 'axe.min.js') });
    const found = await page.evaluate(async () => {
      const r = await window.axe.run(document.querySelector('.sds-panel'), { resultTypes: ['violations'] });
      return r.violations.map(v => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ')) }));
    });
    return found.filter(v => v.impact === 'serious' || v.impact === 'critical');
  }

  for (const theme of ['JupyterLab Light', 'JupyterLab Dark']) {
    it(`at a 700 px panel the tree, Contents and the channel sliders read (${theme})`, async () => {
      await setSetting('@jupyterlab/apputils-extension:themes', { theme });
      const page = await newPage();
      const tag = theme.includes('Dark') ? 'dark' : 'light';
      try {
        await panelAt(page, 700);
        await page.waitForFunction(d => document.body.dataset.jpThemeLight === String(!d), tag === 'dark', { timeout: 30000 });
        await page.waitForSelector('.sds-tree-row', { timeout: 30000 });
        // the opened version's node names it (at least a few letters), its whole title in a tooltip
        const opened = page.locator('.sds-tree-row.sds-tree-current .sds-tree-title').first();
        const { width, font } = await opened.evaluate(el => ({ width: el.clientWidth, font: parseFloat(getComputedStyle(el).fontSize) }));
        const tooltip = await opened.evaluate(el => el.closest('.sds-tree-row')?.getAttribute('title') ?? null);
        const label = await opened.textContent();
        await shot(page, `tree-700-${tag}`);
        // Contents: element and column names wrap between their parts, never inside one
        await page.locator('.sds-tab[data-tab="contents"]').click();
        await page.waitForSelector('.sds-elements-table tbody tr', { timeout: 30000 });
        await settled(page);
        await shot(page, `contents-700-${tag}`);
        const broken = await page.evaluate(() =>
          [...document.querySelectorAll('.sds-contents td.sds-name code')].flatMap(code =>
            [...code.childNodes]
              .filter(n => n.nodeType === Node.TEXT_NODE && n.textContent)
              .filter(n => {
                const range = document.createRange();
                range.selectNodeContents(n);
                return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size > 1;
              })
              .map(n => `${code.textContent} (at "${n.textContent}")`)
          )
        );
        // Figures: each channel's two contrast sliders share one line, inside the side column
        await page.locator('.sds-tab[data-tab="figures"]').click();
        await page.waitForSelector('.sds-channel', { timeout: 60000 });
        await settled(page);
        await page.locator('.sds-channel-list').first().scrollIntoViewIfNeeded();
        await settled(page);
        await shot(page, `figures-700-${tag}`);
        const rows = await page.evaluate(() =>
          [...document.querySelectorAll('.sds-channel')].map(li => {
            const [lo, hi] = [...li.querySelectorAll('.sds-contrast')].map(r => r.getBoundingClientRect());
            const side = li.closest('.sds-channel-slot').getBoundingClientRect();
            const name = li.querySelector('.sds-check').getBoundingClientRect();
            const mid = r => r.top + r.height / 2;
            return {
              sameLine: Math.abs(lo.top - hi.top) < 2,
              inside: hi.right <= side.right + 1 && lo.width >= 40,
              // where the side has room (20em), the whole channel is one line
              oneLine: side.width < 300 || Math.abs(mid(name) - mid(lo)) < 6,
              side: side.width
            };
          })
        );
        assert.ok(width >= 5 * font, `the opened node's label is ${width} px wide`);
        assert.ok(tooltip?.includes(label), `${tooltip} names ${label}`);
        assert.deepEqual(broken, [], 'names broken inside a part');
        assert.ok(rows.length > 0);
        // at 700 px the side sits below the drawing and takes its width
        assert.ok(rows[0].side >= 300, `the side below the drawing is ${rows[0].side} px wide`);
        assert.deepEqual(rows.map(r => r.sameLine && r.inside && r.oneLine), rows.map(() => true), JSON.stringify(rows));
        assert.deepEqual(page.errors, []);
      } finally {
        await page.close();
        await setSetting('@jupyterlab/apputils-extension:themes', { theme: 'JupyterLab Light' });
      }
    });
  }

  for (const theme of ['JupyterLab Light', 'JupyterLab Dark']) {
    it(`results at a 700 px panel fit without horizontal scrolling, axe clean (${theme})`, async () => {
      await setSetting('@jupyterlab/apputils-extension:themes', { theme });
      const page = await newPage();
      await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
      try {
        await resultsAt(page, 700);
        const dark = theme.includes('Dark');
        await page.waitForFunction(d => document.body.dataset.jpThemeLight === String(!d), dark, { timeout: 30000 });
        await shot(page, `results-700-${dark ? 'dark' : 'light'}`);
        const overflow = await page.evaluate(() =>
          [document.querySelector('.sds-panels'), ...document.querySelectorAll('.sds-result .sds-chart')]
            .filter(el => el.scrollWidth > el.clientWidth + 1)
            .map(el => `${el.className} ${el.scrollWidth}>${el.clientWidth}`)
        );
        assert.deepEqual(overflow, [], 'nothing scrolls sideways at 700 px');
        // the markers chart wraps its four facets into rows, 0 first
        const facets = await page.locator('[data-result="markers-leiden"] .sds-chart').evaluate(el => {
          const headers = [...el.querySelectorAll('.role-column-title text, .mark-text.role-title text, text')]
            .map(t => t.textContent.trim()).filter(t => /^[0-3]$/.test(t));
          return headers;
        });
        assert.ok(facets.length >= 4 && facets[0] === '0', `facet headers ${facets.join(',')}`);
        assert.deepEqual(await axeProblems(page), []);
        if (!dark) {
          // numbers per column, full value on hover
          const p = page.locator('[data-result="markers-leiden"] .sds-table tbody tr').first().locator('td').nth(4);
          assert.match(await p.innerText(), /^\d\.\d\de-\d+$|^0$/);
          assert.ok(await p.getAttribute('title'));
          // the filter runs in Python, the CSV comes whole from Python
          const card = page.locator('[data-result="markers-leiden"]');
          await card.locator('input.sds-filter').fill('channel_1');
          await page.waitForFunction(() => /of 4 \(filtered from 12\)/.test(document.querySelector('[data-result="markers-leiden"] .sds-page-status')?.textContent ?? ''), null, { timeout: 30000 });
          await shot(page, 'results-700-filtered');
          const [download] = await Promise.all([page.waitForEvent('download'), card.locator('.sds-csv').click()]);
          const csv = readFileSync(await download.path(), 'utf8').trim().split('\n');
          assert.equal(csv[0], 'group,gene,score,logfoldchange,pval_adj');
          assert.equal(csv.length, 5);
          // Copy code puts the line on the clipboard; it runs in Python and gives the table with its meta
          await card.locator('.sds-copy-code').click();
          await page.waitForFunction(() => /Copied|Copy this line/.test(document.querySelector('[data-result="markers-leiden"] .sds-code-status')?.textContent ?? ''));
          const line = await page.evaluate(() => navigator.clipboard.readText());
          assert.match(line, /VersionBrowser\(".*"\)\.result\("markers-leiden", version=\d+\)/);
          // the path is the server root's, joined: the line runs from a notebook in any folder, not only the root
          const opened = JSON.parse(/VersionBrowser\((".*?")\)/.exec(line)[1]);
          // absolute, or from the home folder as JupyterLab names a root inside it (a kernel has the server's HOME)
          assert.ok(/^(\/|~\/)/.test(opened) && opened.endsWith(`/root/${top}`), line);
          const elsewhere = join(work, 'root', 'analysis', 'week-2');
          mkdirSync(elsewhere, { recursive: true });
          const run = spawnSync(PYTHON, ['-c', `${line}\nprint(type(table).__name__, len(table), table.meta["kind"])`], {
            cwd: elsewhere, encoding: 'utf8', env: { ...process.env, HOME: work }
          });
          assert.equal(run.status, 0, run.stderr);
          assert.equal(run.stdout.trim(), 'ResultTable 12 markers');
          // keyboard: one Tab stop in the tab list, arrows move, the panel scrolls by keyboard
          await page.locator('.sds-tab[data-tab="results"]').focus();
          await page.keyboard.press('ArrowRight');
          assert.equal(await page.evaluate(() => document.activeElement?.dataset.tab), 'compare');
          await page.keyboard.press('Home');
          assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-selected')), 'true');
        }
        assert.deepEqual(page.errors, []);
      } finally {
        await page.close();
        await setSetting('@jupyterlab/apputils-extension:themes', { theme: 'JupyterLab Light' });
      }
    });
  }

  it('issue 39: nucleus and cell outlines together, in both tiers: a nucleus outline pixel inside its cell in the element colour, light, dark, 420 px', async () => {
    // 600 cells with their nucleus_boundaries (a shapes element no table annotates); from Python:
    // the first nucleus, a vertex of its outline, whether its cell's polygon holds that vertex, and the element's colour
    const name = await xeniumDemo('nuclei', 600, 1024);
    const [vx, vy, cx, cy, inside, colour] = JSON.parse(
      python(
        `import json, warnings; warnings.simplefilter("ignore")\nimport spatialdata\nfrom sds_jupyter.stack import Stack\nfrom sds_jupyter.studio.shapes import default_shape_color\n` +
          `sd = spatialdata.read_zarr(str(Stack.resolve(${JSON.stringify(join(work, 'root', 'nuclei', 'datasets', name))}).base.path))\n` +
          `nucleus = sd.shapes["nucleus_boundaries"].geometry.iloc[0]\ncell = sd.shapes["cell_boundaries"].geometry.iloc[0]\nx, y = nucleus.exterior.coords[0]\n` +
          `from shapely.geometry import Point\nprint(json.dumps([x, y, nucleus.centroid.x, nucleus.centroid.y, bool(cell.contains(Point(x, y))), default_shape_color("nucleus_boundaries")]))`
      )
    );
    assert.ok(inside, 'the nucleus vertex lies inside its cell');
    const rgb = [1, 3, 5].map(i => parseInt(colour.slice(i, i + 2), 16));
    const open = async query => {
      const page = await newPage();
      await openFigures(page, 'nuclei/datasets', name, query);
      await waitForTissue(page);
      const figure = page.locator('.sds-spatial[data-shapes-elements="nucleus_boundaries"]').first();
      await figure.waitFor({ timeout: 60000 });
      await figure.scrollIntoViewIfNeeded();
      return { page, figure, stage: figure.locator('.sds-deck-stage') };
    };
    /** The colour nearest `rgb` among the 3 x 3 device pixels around data point (x, y) of the drawing. */
    const nearest = async (stage, x, y) => {
      const { d } = await stagePixels(stage, [x, y], 3);
      let best = null;
      for (let i = 0; i < d.length; i += 4) {
        const px = [d[i], d[i + 1], d[i + 2]];
        const off = Math.max(...px.map((v, k) => Math.abs(v - rgb[k])));
        if (!best || off < best.off) best = { px, off };
      }
      return best;
    };
    const row = figure => figure.locator('.sds-shapes-controls[data-element="nucleus_boundaries"]');
    /** In the page: whether the drawing's 3 x 3 device pixels around data point (x, y) hold `want` (within 40), as `expected`. */
    const hasColour = ([el, x, y, want, expected]) => {
      const c = el.querySelector('.sds-deck-canvas');
      const copy = document.createElement('canvas');
      [copy.width, copy.height] = [c.width, c.height];
      const ctx = copy.getContext('2d');
      ctx.drawImage(c, 0, 0);
      const region = el.closest('.sds-spatial').sdsSpatial.stage.region();
      const sx = Math.round(((x - region[0]) / (region[2] - region[0])) * c.width);
      const sy = Math.round(((y - region[1]) / (region[3] - region[1])) * c.height);
      const d = ctx.getImageData(sx - 1, sy - 1, 3, 3).data;
      let found = false;
      for (let i = 0; i < d.length; i += 4) found ||= Math.max(...[0, 1, 2].map(k => Math.abs(d[i + k] - want[k]))) <= 40;
      return found === expected;
    };
    for (const [tier, query] of TIERS) {
      const { page, figure, stage } = await open(query);
      try {
        assert.equal(await stage.getAttribute('data-tier'), tier);
        await setLayer(figure, 'Image', false);
        const toggle = row(await openLayers(figure)).locator('.sds-shapes-toggle');
        assert.equal(await toggle.isChecked(), false, `${tier}: a figure saved without shapes outlines none`);
        await toggle.check();
        await closeLayers(figure); // the drawing under the menu uncovered
        // zoomed on the first nucleus, cells outlined around it: the tiles come, rings drawn
        await figure.evaluate((el, [x, y]) => el.sdsSpatial.stage.apply({ target: [x, y], zoom: el.sdsSpatial.stage.viewState.zoom + 4 }), [cx, cy]);
        await page.waitForFunction(el => Number(el.dataset.shapeRings) > 0, await stage.elementHandle(), { timeout: 60000 });
        await page.waitForFunction(hasColour, [await stage.elementHandle(), vx, vy, rgb, true], { timeout: 30000 });
        const got = await nearest(stage, vx, vy);
        assert.ok(got.off <= 40, `${tier}: the nucleus outline at its vertex in ${colour}: ${got.px}`);
        assert.equal(await figure.locator('.sds-shapes-legend').isVisible(), true);
        assert.match(await figure.locator('.sds-shapes-legend').innerText(), /nucleus_boundaries/);
        await shot(page, `shapes-${tier}-nuclei-in-cells`);
        // off again: the outline colour leaves that pixel
        await setLayer(figure, 'nucleus_boundaries', false);
        await page.waitForFunction(el => !(el.dataset.shapes ?? '').includes('nucleus_boundaries'), await stage.elementHandle(), { timeout: 30000 });
        await page.waitForFunction(hasColour, [await stage.elementHandle(), vx, vy, rgb, false], { timeout: 30000 });
        if (tier === 'software') {
          await checkAxe(page, 'shapes layers');
        }
        assert.deepEqual(page.errors, []);
      } finally {
        await page.close();
      }
    }
    // dark theme and a 420 px panel: the nuclei shown, axe finds nothing serious; the rows stay inside the figure
    await setSetting('@jupyterlab/apputils-extension:themes', { theme: 'JupyterLab Dark' });
    try {
      const { page, figure, stage } = await open('');
      try {
        await setLayer(figure, 'Image', false);
        await setLayer(figure, 'nucleus_boundaries', true);
        await figure.evaluate((el, [x, y]) => el.sdsSpatial.stage.apply({ target: [x, y], zoom: el.sdsSpatial.stage.viewState.zoom + 4 }), [cx, cy]);
        await page.waitForFunction(el => Number(el.dataset.shapeRings) > 0, await stage.elementHandle(), { timeout: 60000 });
        await checkAxe(page, 'shapes layers (dark)');
        await shot(page, 'shapes-dark');
        await sizePanel(page, 420);
        await figure.scrollIntoViewIfNeeded();
        await openLayers(figure);
        await shot(page, 'shapes-dark-narrow');
        const fits = await figure.evaluate(el => {
          const box = el.getBoundingClientRect();
          return [...el.querySelectorAll('.sds-shapes-controls, .sds-shapes-controls input')].every(c => {
            const r = c.getBoundingClientRect();
            return r.width > 0 && r.left >= box.left - 1 && r.right <= box.right + 1;
          });
        });
        assert.ok(fits, 'the shapes row fits a 420 px panel');
        assert.deepEqual(page.errors, []);
      } finally {
        await page.close();
      }
    } finally {
      await setSetting('@jupyterlab/apputils-extension:themes', { theme: 'JupyterLab Light' });
    }
  });

  it('linked to the tissue: a gene or a cluster of a result, and a compared column, shown in the spatial view', async () => {
    // what the tissue must show, from Python: the regions' cells that moved v2 → v3 (off the label
    // pairs that keep the most cells together, found by scipy on pandas' crosstab)
    const expected = JSON.parse(
      python(
        [
          'import json, sys, pandas as pd, sds_jupyter as sds',
          'from scipy.optimize import linear_sum_assignment',
          `stack = sds.Stack.resolve(${JSON.stringify(join(work, 'root', top))})`,
          'a, b = (sds.open_anndata(stack.at(d)).obs["regions"].astype(str) for d in (2, 3))',
          'ct = pd.crosstab(a, b)',
          'rows, cols = linear_sum_assignment(ct.to_numpy(), maximize=True)',
          'kept = {(ct.index[r], ct.columns[c]) for r, c in zip(rows, cols) if ct.iat[r, c] > 0}',
          'pairs = sorted({f"{x} → {y}" for x, y in zip(a, b) if (x, y) not in kept})',
          'print(json.dumps({"pairs": pairs}))'
        ].join('\n')
      )
    );
    // the categories of the tissue view's legend (the first list; image channels come after)
    const legend = page =>
      page.evaluate(() =>
        [...(document.querySelector('.sds-tissue:not([hidden]) .sds-legend-slot .sds-legend-cats')?.querySelectorAll('.sds-legend-label') ?? [])].map(
          l => l.textContent.trim()
        )
      );
    await inThemes(['light', 'dark'], async (page, tag) => {
      const dark = tag === 'dark';
      const theme = dark ? 'JupyterLab Dark' : 'JupyterLab Light';
      await openListing(page);
      await item(page, top.split('/').pop()).dblclick();
      await page.waitForSelector('.sds-history-row', { timeout: 30000 });
      await wearsTheme(page);
      await page.locator('.sds-tab[data-tab="results"]').click();
      const card = page.locator('[data-result="markers-leiden"]');
      await card.locator('.sds-tissue-link').first().waitFor({ timeout: 30000 });
      // a gene: a click colors the tissue by its expression, in the result's card
      await card.locator('.sds-tissue-link', { hasText: 'channel_1_sum' }).first().click();
      await page.waitForFunction(() => document.querySelector('[data-result="markers-leiden"] .sds-tissue')?.dataset.drawn === 'channel_1_sum expression', null, { timeout: 60000 });
      assert.equal(await card.locator('.sds-tissue .sds-spatial').getAttribute('data-color-by'), 'channel_1_sum');
      assert.match(await card.locator('.sds-tissue .sds-legend-slot .sds-legend-title').first().innerText(), /^channel_1_sum \(/);
      // the toolbar's color dropdown says what is shown, not the saved coloring
      const shown = sel => card.locator(sel).evaluate(s => s.selectedOptions[0]?.textContent);
      assert.equal(await shown('.sds-tissue .sds-color-by'), 'gene channel_1_sum');
      await card.locator('.sds-tissue').scrollIntoViewIfNeeded();
      await settled(page);
      await shot(page, `tissue-gene-${dark ? 'dark' : 'light'}`);
      await checkAxe(page, `Results with the tissue (${theme})`);
      // a cluster, by keyboard: its cells against grey; Escape goes back to the value
      const cluster = card.locator('td .sds-tissue-link', { hasText: /^0$/ }).first();
      await cluster.focus();
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.querySelector('[data-result="markers-leiden"] .sds-tissue')?.dataset.drawn === 'clusters 0', null, { timeout: 60000 });
      assert.deepEqual(await legend(page), ['0', 'other cells']);
      assert.equal(await shown('.sds-tissue .sds-color-by'), 'clusters: 0 highlighted');
      await settled(page);
      await shot(page, `tissue-cluster-${dark ? 'dark' : 'light'}`);
      await page.locator('[data-result="markers-leiden"] .sds-tissue .sds-tissue-back').focus();
      await page.keyboard.press('Escape');
      assert.equal(await card.locator('.sds-tissue').isHidden(), true);
      assert.equal(await cluster.evaluate(el => el === document.activeElement), true, 'the focus is back on the cluster');

      // Compare v3 with v2: Show on tissue colors v3's cells by the regions' transitions, unchanged grey
      await page.locator('.sds-history-row[data-depth="3"]').click();
      await page.locator('.sds-tab[data-tab="compare"]').click();
      await page.waitForSelector('.sds-obs-change[data-column="regions"] .sds-show-tissue', { timeout: 30000 });
      await page.locator('.sds-obs-change[data-column="regions"] .sds-show-tissue').click();
      await page.waitForFunction(() => document.querySelector('.sds-obs-change[data-column="regions"] .sds-tissue')?.dataset.drawn, null, { timeout: 60000 });
      const labels = await legend(page);
      assert.deepEqual(labels.filter(l => l !== 'unchanged' && l !== 'renamed, same group').sort(), [...expected.pairs].sort(), labels.join(' | '));
      await page.locator('.sds-obs-change[data-column="regions"] .sds-tissue').scrollIntoViewIfNeeded();
      await settled(page);
      await shot(page, `compare-on-tissue-${dark ? 'dark' : 'light'}`);
      await checkAxe(page, `Compare with the tissue (${theme})`);
      if (!dark) {
        await narrowTo(page, 620);
        await page.locator('.sds-obs-change[data-column="regions"] .sds-tissue').scrollIntoViewIfNeeded();
        await settled(page);
        await shot(page, 'compare-on-tissue-narrow');
        await checkAxe(page, 'Compare with the tissue (narrow)');
        // B can be a version on another branch of the tree (the demo's "Coarser clusters")
        const branch = await page.locator('.sds-compare select[aria-label^="Version B"] optgroup[label="Other branches"] option').first();
        const value = await branch.getAttribute('value');
        await page.locator('.sds-compare select[aria-label^="Version B"]').selectOption(value);
        await page.waitForFunction(() => /\(branch, v\d+\)\) to A/.test(document.querySelector('.sds-compare-intro')?.textContent ?? ''), null, { timeout: 60000 });
        assert.ok(await page.locator('.sds-headline li').count() > 0, 'the branch comparison has a headline');
        await shot(page, 'compare-branch-narrow');
      }
      assert.deepEqual(page.errors, []);
    });
  });

  it('results in a narrow panel (420 px) still fit', async () => {
    const page = await newPage();
    try {
      await resultsAt(page, 420);
      await shot(page, 'results-420-narrow');
      const overflow = await page.evaluate(() =>
        [document.querySelector('.sds-panels'), ...document.querySelectorAll('.sds-result .sds-chart')]
          .filter(el => el.scrollWidth > el.clientWidth + 1)
          .map(el => `${el.className} ${el.scrollWidth}>${el.clientWidth}`)
      );
      assert.deepEqual(overflow, []);
      // after Refresh the list's active descendant is a row that exists; "Refreshed" clears itself
      await page.locator('.sds-action[data-action="refresh"]').click();
      await page.waitForFunction(() => document.querySelector('.sds-action-msg')?.textContent === 'Refreshed');
      const active = await page.locator('.sds-history').getAttribute('aria-activedescendant');
      assert.ok(active && (await page.locator(`[id="${active}"]`).count()) === 1, `aria-activedescendant ${active}`);
      await page.waitForFunction(() => document.querySelector('.sds-action-msg')?.textContent === '', null, { timeout: 10000 });
      // Compare with v1: the added columns' values wrap instead of pushing the panel sideways
      await page.locator('.sds-tab[data-tab="compare"]').click();
      await page.locator('.sds-compare select[aria-label^="Version B"]').selectOption('1');
      await page.waitForSelector('.sds-compare table.sds-columns tbody tr', { timeout: 30000 });
      await settled(page);
      await shot(page, 'compare-420-narrow');
      // a long list of values (six niches of a big demo) wraps: the cell does not keep it on one line
      const whiteSpace = await page.locator('.sds-compare table.sds-columns td.sds-values').first().evaluate(td => getComputedStyle(td).whiteSpace);
      assert.equal(whiteSpace, 'normal', 'the values of an added column wrap');
      const compareOverflow = await page.evaluate(() =>
        [document.querySelector('.sds-panels')]
          .filter(el => el.scrollWidth > el.clientWidth + 1)
          .map(el => `${el.className} ${el.scrollWidth}>${el.clientWidth}`)
      );
      assert.deepEqual(compareOverflow, [], 'the compare view scrolls sideways at 420 px');
      assert.deepEqual(page.errors, []);
    } finally {
      await page.close();
    }
  });
});
