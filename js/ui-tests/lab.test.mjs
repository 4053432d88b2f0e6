// UI flows in a real JupyterLab, driven with playwright-core and the system Chromium
// (no browser download). Builds the demo stack, starts `jupyter lab` on loopback,
// and checks each flow a person would follow.
//
//   npm run test:ui                     (after `pip install -e .` so the extension is installed)
//   SDS_PYTHON=/path/to/python  CHROMIUM=/usr/bin/chromium   to override the defaults

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const PYTHON =
  process.env.SDS_PYTHON ?? [join(repo, '.venv', 'bin', 'python')].find(p => existsSync(p)) ?? 'python3';
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const TOKEN = 'sds-ui-test';
const skip = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM}`;
// Screenshots of each flow are kept as test artifacts.
const SHOTS = process.env.SDS_TEST_OUTPUT ?? join(repo, 'test-output', 'ui');

async function shot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
}

let work;
let server;
let base;
let browser;
let top; // the top version folder, relative to the server root
let baseFolder; // the base dataset folder

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

async function api(path, init = {}) {
  const r = await fetch(`${base}${path}`, {
    ...init,
    headers: { Authorization: `token ${TOKEN}`, 'Content-Type': 'application/json', ...(init.headers ?? {}) }
  });
  return r;
}

async function setSetting(plugin, values) {
  const r = await api(`/lab/api/settings/${plugin}`, { method: 'PUT', body: JSON.stringify({ raw: JSON.stringify(values) }) });
  assert.ok(r.ok, `settings ${plugin}: ${r.status}`);
}

async function newPage() {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
  page.errors = [];
  page.on('pageerror', e => page.errors.push(e.message));
  return page;
}

async function openListing(page, folder = 'datasets') {
  await page.goto(`${base}/lab/tree/${folder}?token=${TOKEN}&reset`);
  await page.waitForSelector('.jp-DirListing-item', { timeout: 60000 });
  await page.waitForTimeout(1000);
}

/**
 * Run code cell `index` of the open notebook, and make sure it really started: a kernel
 * still connecting, or a dialog in the way, can swallow the first Shift+Enter.
 */
async function runCell(page, index) {
  const prompt = () =>
    page.evaluate(i => document.querySelectorAll('.jp-Notebook .jp-Cell')[i]?.querySelector('.jp-InputPrompt')?.textContent ?? '', index);
  for (let attempt = 0; attempt < 4; attempt++) {
    const dialog = page.locator('.jp-Dialog .jp-mod-accept');
    if (await dialog.count()) await dialog.first().click();
    await page.locator('.jp-Notebook .jp-Cell .jp-InputArea-editor').nth(index).click();
    await page.keyboard.press('Shift+Enter');
    try {
      await page.waitForFunction(
        i => /\[(\*|\d+)\]/.test(document.querySelectorAll('.jp-Notebook .jp-Cell')[i]?.querySelector('.jp-InputPrompt')?.textContent ?? ''),
        index,
        { timeout: 20000 }
      );
      return;
    } catch {
      // not started: try again
    }
  }
  throw new Error(`cell ${index} never started (prompt ${JSON.stringify(await prompt())})`);
}

const item = (page, name) => page.locator('.jp-DirListing-item', { hasText: name }).first();
const crumbs = async page => (await page.locator('.jp-BreadCrumbs').innerText()).replace(/\s+/g, '');
const currentTab = page => page.locator('.lm-DockPanel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel').first();

describe('JupyterLab version browser', { skip, timeout: 600000 }, () => {
  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'sds-ui-'));
    // No "get notified about news?" toast over the screenshots.
    const notification = join(work, 'config', 'lab', 'user-settings', '@jupyterlab', 'apputils-extension');
    mkdirSync(notification, { recursive: true });
    writeFileSync(join(notification, 'notification.jupyterlab-settings'), JSON.stringify({ fetchNews: 'false' }));
    const demo = spawnSync(PYTHON, ['-m', 'sds_jupyter', 'demo', join(work, 'root')], { encoding: 'utf8' });
    assert.equal(demo.status, 0, demo.stderr);
    const topPath = demo.stdout.trim().split('\n').pop();
    top = topPath.slice(join(work, 'root').length + 1);
    const layer = JSON.parse(readFileSync(join(topPath, 'layer.json'), 'utf8'));
    assert.ok(layer, 'the top version has a layer.json');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    server = spawn(
      PYTHON,
      [
        '-m', 'jupyterlab', '--no-browser', '--allow-root', `--port=${port}`, '--ip=127.0.0.1',
        `--ServerApp.token=${TOKEN}`, `--ServerApp.root_dir=${join(work, 'root')}`,
        '--ServerApp.jpserver_extensions={"sds_jupyter.server": True}',
        '--LabApp.news_url=None', '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate'
      ],
      { env: { ...process.env, JUPYTER_CONFIG_DIR: join(work, 'config'), HOME: work }, stdio: ['ignore', 'ignore', 'pipe'] }
    );
    let log = '';
    server.stderr.on('data', d => (log += d));
    for (let i = 0; ; i++) {
      try {
        if ((await api('/api/status')).ok) break;
      } catch {
        // not up yet
      }
      assert.ok(i < 120, `jupyter lab did not start:\n${log.slice(-2000)}`);
      await new Promise(r => setTimeout(r, 500));
    }
    const history = await (await api(`/sds-jupyter/api/history?path=${encodeURIComponent(top)}`)).json();
    assert.ok(history.versions?.length >= 2, `history of ${top}: ${JSON.stringify(history).slice(0, 300)}`);
    baseFolder = history.base.dataset_id;
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
  });

  after(async () => {
    await browser?.close();
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise(r => server.once('exit', r));
    }
    if (work) rmSync(work, { recursive: true, force: true });
  });

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

  it('figures, results and compare draw from the server', async () => {
    const page = await newPage();
    await openListing(page);
    await item(page, top.split('/').pop()).dblclick();
    await page.waitForSelector('.sds-history-row');
    await page.locator('.sds-tab[data-tab="figures"]').click();
    await page.waitForSelector('.sds-figure', { timeout: 30000 });
    await page.waitForFunction(() => document.querySelectorAll('canvas.sds-canvas, .sds-chart svg').length >= 2, null, { timeout: 30000 });
    assert.deepEqual(await page.locator('.sds-figures .sds-error').allInnerTexts(), []);
    // the canvas has drawn pixels
    const painted = await page.locator('canvas.sds-canvas').first().evaluate(c => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
      return n;
    });
    assert.ok(painted > 1000, `${painted} painted pixels`);
    await shot(page, 'panel-figures');
    // exports: the canvas as SVG circles, the chart as SVG and PNG
    const saved = async button => {
      const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
      return readFileSync(await download.path());
    };
    const canvasFigure = page.locator('.sds-figure-canvas').first();
    const svg = (await saved(canvasFigure.locator('.sds-figure-tools button', { hasText: 'SVG' }))).toString('utf8');
    assert.match(svg, /^<svg[^>]*>.*<circle /s);
    const png = await saved(canvasFigure.locator('.sds-figure-tools button', { hasText: 'PNG' }));
    assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
    const chartFigure = page.locator('.sds-figure-chart').first();
    const chartSvg = (await saved(chartFigure.locator('.sds-figure-tools button', { hasText: 'SVG' }))).toString('utf8');
    assert.match(chartSvg, /<svg/);
    const chartPng = await saved(chartFigure.locator('.sds-figure-tools button', { hasText: 'PNG' }));
    assert.equal(chartPng.subarray(1, 4).toString('latin1'), 'PNG');
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
    await page.close();
  });

  /** Open the top version's Results tab in a panel exactly `width` px wide (the left sidebar closed). */
  async function resultsAt(page, width) {
    await openListing(page);
    await item(page, top.split('/').pop()).dblclick();
    await page.waitForSelector('.sds-history-row', { timeout: 30000 });
    await page.keyboard.press('Control+b'); // close the file browser: the panel takes the main area
    await page.waitForTimeout(500);
    for (let i = 0; i < 3; i++) {
      const have = await page.locator('.sds-panel').evaluate(el => el.getBoundingClientRect().width);
      if (Math.abs(have - width) < 1) break;
      const vp = page.viewportSize();
      await page.setViewportSize({ width: Math.round(vp.width + width - have), height: vp.height });
      await page.waitForTimeout(400);
    }
    await page.locator('.sds-tab[data-tab="results"]').click();
    await page.waitForSelector('.sds-result .sds-table tbody tr', { timeout: 30000 });
    // every default chart drawn (and redrawn at the settled width)
    await page.waitForFunction(() => {
      const charts = [...document.querySelectorAll('.sds-result .sds-chart')];
      return charts.length >= 3 && charts.every(c => c.querySelector('svg'));
    }, null, { timeout: 30000 });
    await page.waitForTimeout(800);
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
          const run = spawnSync(PYTHON, ['-c', `${line}\nprint(type(table).__name__, len(table), table.meta["kind"])`], {
            cwd: join(work, 'root'), encoding: 'utf8'
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
      assert.deepEqual(page.errors, []);
    } finally {
      await page.close();
    }
  });

  it('an open version panel comes back after a reload', async () => {
    const page = await newPage();
    await openListing(page);
    await item(page, top.split('/').pop()).dblclick();
    await page.waitForSelector('.sds-history-row');
    const label = await currentTab(page).innerText();
    await page.waitForTimeout(1500); // the layout is saved shortly after a change
    await page.goto(`${base}/lab/tree/datasets?token=${TOKEN}`);
    await page.waitForSelector('.sds-history-row', { timeout: 60000 });
    const tabs = await page.locator('.lm-DockPanel .lm-TabBar-tabLabel').allInnerTexts();
    assert.ok(tabs.includes(label), `${label} not in ${tabs.join(', ')}`);
    await page.close();
  });

  it('Enter opens a version; the context menu can enter it instead', async () => {
    const page = await newPage();
    await openListing(page);
    const name = top.split('/').pop();
    await item(page, name).click();
    await page.keyboard.press('Enter');
    await page.waitForSelector('.sds-history-row', { timeout: 30000 });
    assert.equal(await crumbs(page), '/datasets/');
    await item(page, name).click({ button: 'right' });
    const labels = await page.locator('.lm-Menu-itemLabel').allInnerTexts();
    assert.ok(labels.includes('Open version') && labels.includes('Open folder contents'), labels.join(', '));
    await page.locator('.lm-Menu-item', { hasText: 'Open folder contents' }).click();
    await page.waitForFunction(n => document.querySelector('.jp-BreadCrumbs')?.textContent?.includes(n), name);
    await page.close();
  });

  it('"Open in notebook" creates, opens and runs a notebook; a second time reuses it', async () => {
    const notebooks = async () =>
      (await (await api('/api/contents/')).json()).content.filter(f => f.type === 'notebook').map(f => f.path).sort();
    const before = await notebooks();
    const page = await newPage();
    await openListing(page);
    await item(page, top.split('/').pop()).dblclick();
    await page.waitForSelector('.sds-history-row');
    await page.locator('.sds-app [data-action="open-in-notebook"]').click();
    await page.waitForSelector('.jp-NotebookPanel', { timeout: 60000 });
    try {
      // the cell ran: the browser is drawn in its output, from the path relative to the notebook
      await page.waitForSelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea .sds-history-row', { timeout: 120000 });
    } catch (error) {
      await shot(page, 'FAILED-open-in-notebook');
      throw error;
    }
    assert.match(await currentTab(page).innerText(), /\.ipynb$/);
    await shot(page, 'open-in-notebook');
    const made = (await notebooks()).filter(p => !before.includes(p));
    assert.equal(made.length, 1, `new notebooks: ${made.join(', ')}`);
    const model = await (await api(`/api/contents/${encodeURIComponent(made[0])}`)).json();
    const source = model.content.cells.map(c => c.source).join('\n');
    assert.ok(source.includes(`VersionBrowser('${top}')`), source);
    assert.equal(model.content.metadata.sds_jupyter.version, top);
    // a second time: the same notebook, no "-1" copy
    const history = await (await api(`/sds-jupyter/api/history?path=${encodeURIComponent(top)}`)).json();
    await page.locator('.lm-DockPanel .lm-TabBar-tab', { hasText: history.versions[0].title }).first().click();
    const again = page.waitForResponse(r => r.url().includes('/sds-jupyter/api/notebook'), { timeout: 60000 });
    await page.locator('.sds-app:visible [data-action="open-in-notebook"]').click();
    const answer = await again;
    assert.equal(answer.status(), 200);
    assert.deepEqual(await answer.json(), { notebook_path: made[0], created: false, run: true });
    await page.waitForFunction(t => document.querySelector('.lm-DockPanel .lm-TabBar-tab.lm-mod-current')?.textContent?.includes(t), made[0].split('/').pop());
    assert.deepEqual((await notebooks()).filter(p => !before.includes(p)), made);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  it('%sds_open draws the browser in a notebook and binds an AnnData', async () => {
    const nb = {
      type: 'notebook',
      format: 'json',
      content: {
        nbformat: 4, nbformat_minor: 5,
        metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
        cells: [{ cell_type: 'code', id: 'c1', metadata: {}, outputs: [], execution_count: null,
          source: `%load_ext sds_jupyter\n%sds_open ${JSON.stringify(top)} --as cells` },
          { cell_type: 'code', id: 'c2', metadata: {}, outputs: [], execution_count: null,
          source: `print(type(cells).__name__, cells.n_obs)` }]
      }
    };
    assert.ok((await api('/api/contents/widget.ipynb', { method: 'PUT', body: JSON.stringify(nb) })).ok);
    const page = await newPage();
    await page.goto(`${base}/lab/tree/widget.ipynb?token=${TOKEN}&reset`);
    await page.waitForSelector('.jp-Notebook .jp-Cell', { timeout: 60000 });
    await page.waitForSelector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', { timeout: 60000 }).catch(() => undefined);
    try {
      await runCell(page, 0);
      await page.waitForSelector('.jp-OutputArea .sds-history-row', { timeout: 120000 });
    } catch (error) {
      await shot(page, 'FAILED-notebook-sds-open');
      throw error;
    }
    await page.locator('[data-action="open-adata"]').click();
    await page.waitForFunction(() => /cells ×|rror/.test(document.querySelector('.sds-action-msg')?.textContent ?? ''), null, { timeout: 60000 });
    assert.match(await page.locator('.sds-action-msg').innerText(), /cells ×/);
    await page.locator('.jp-OutputArea .sds-tab[data-tab="figures"]').click();
    await page.waitForSelector('.jp-OutputArea canvas.sds-canvas', { timeout: 60000 });
    await page.waitForSelector('.jp-OutputArea .sds-chart svg', { timeout: 60000 });
    assert.ok((await page.locator('.jp-OutputArea .sds-history-row').count()) >= 3);
    await shot(page, 'notebook-sds-open');
    // the magic bound the top version's table under the name given with --as
    await runCell(page, 1);
    await page.waitForFunction(() => /AnnData \d+/.test(document.querySelectorAll('.jp-Cell')[1]?.querySelector('.jp-OutputArea')?.textContent ?? ''), null, { timeout: 60000 });
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
});
