// What every UI flow file shares: the demo stack, one `jupyter lab` on loopback, one headless
// Chromium (the system one, no browser download), and the steps flows are written in.
//
// Each `*.test.mjs` beside this file is one group of flows on its own server (`startLab` in its
// `before`, `stopLab` in its `after`); node's test runner runs the files side by side, so a
// group never sees another's writes. The state below is exported as live bindings: a flow reads
// `base`, `top` or `work` after `startLab` has set them.
//
//   npm run test:ui                     (after `pip install -e .` so the extension is installed)
//   SDS_PYTHON=/path/to/python  CHROMIUM=/usr/bin/chromium   to override the defaults

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';

export const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, '..', '..');
export const PYTHON =
  process.env.SDS_PYTHON ?? [join(repo, '.venv', 'bin', 'python')].find(p => existsSync(p)) ?? 'python3';
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const TOKEN = 'sds-ui-test';
export const skip = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM}`;
// Screenshots of each flow are kept as test artifacts.
export const SHOTS = process.env.SDS_TEST_OUTPUT ?? join(repo, 'test-output', 'ui');

export async function shot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
}

export let work;
export let server;
export let base;
export let browser;
export let top; // the top version folder, relative to the server root
export let baseFolder; // the base dataset folder

export function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

export async function api(path, init = {}) {
  const r = await fetch(`${base}${path}`, {
    ...init,
    headers: { Authorization: `token ${TOKEN}`, 'Content-Type': 'application/json', ...(init.headers ?? {}) }
  });
  return r;
}

export async function setSetting(plugin, values) {
  const r = await api(`/lab/api/settings/${plugin}`, { method: 'PUT', body: JSON.stringify({ raw: JSON.stringify(values) }) });
  assert.ok(r.ok, `settings ${plugin}: ${r.status}`);
}

export const AXE = resolve(here, '..', 'node_modules', 'axe-core', 'axe.min.js');

/** axe-core over the version panel: no serious or critical violation. */
export async function checkAxe(page, what) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) {
    await page.addScriptTag({ path: AXE });
  }
  const violations = await page.evaluate(async () => {
    const result = await window.axe.run(document.querySelector('.sds-app'), { resultTypes: ['violations'] });
    return result.violations
      .filter(v => v.impact === 'serious' || v.impact === 'critical')
      .map(v => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join('; ')}`);
  });
  assert.deepEqual(violations, [], `${what}: ${violations.join('\n')}`);
}

export async function newPage() {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
  page.errors = [];
  page.on('pageerror', e => page.errors.push(e.message));
  return page;
}

export async function openListing(page, folder = 'datasets', query = '') {
  await page.goto(`${base}/lab/tree/${folder}?token=${TOKEN}&reset${query}`);
  await page.waitForSelector('.jp-DirListing-item', { timeout: 60000 });
  await page.waitForTimeout(1000);
}

/** Write notebook `name` through the contents API: one code cell per source, for the python3 kernel. */
export async function putNotebook(name, sources) {
  const cells = sources.map((source, i) => ({ cell_type: 'code', id: `cell${i}`, metadata: {}, outputs: [], execution_count: null, source }));
  const content = { nbformat: 4, nbformat_minor: 5, metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } }, cells };
  const r = await api(`/api/contents/${name}`, { method: 'PUT', body: JSON.stringify({ type: 'notebook', format: 'json', content }) });
  assert.ok(r.ok, `writing ${name}: ${r.status}`);
}

/** Wait for the open notebook's cells, and for its kernel to be idle (as far as the page says within a minute). */
export async function notebookReady(page, selector = '.jp-Notebook .jp-Cell') {
  await page.waitForSelector(selector, { timeout: 60000 });
  await page.waitForSelector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', { timeout: 60000 }).catch(() => undefined);
}

/**
 * Run code cell `index` of the open notebook, and make sure it really started: a kernel
 * still connecting, or a dialog in the way, can swallow the first Shift+Enter.
 */
export async function runCell(page, index) {
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

/**
 * From the file browser's home, open notebook `name` (an `%sds_open` cell, then an `%sds_save`
 * cell), run the first until the widget draws and the second until it answers; a screenshot
 * `failShot` if either never does. Answers a function reading the save cell's output.
 */
export async function openAndSave(page, name, failShot) {
  const visible = '.jp-NotebookPanel:not(.lm-mod-hidden)';
  await page.locator('.jp-BreadCrumbs-home').click();
  await item(page, name).dblclick();
  await notebookReady(page, `${visible} .jp-Cell`);
  try {
    await runCell(page, 0);
    await page.waitForSelector(`${visible} .jp-OutputArea .sds-history-row`, { timeout: 120000 });
    await runCell(page, 1);
    await page.waitForFunction(
      sel => /Saved `adata` as v\d+|rror/.test(document.querySelectorAll(`${sel} .jp-Cell`)[1]?.querySelector('.jp-OutputArea')?.textContent ?? ''),
      visible,
      { timeout: 120000 }
    );
  } catch (error) {
    await shot(page, failShot);
    throw error;
  }
  return () => page.locator(`${visible} .jp-Cell`).nth(1).locator('.jp-OutputArea').innerText();
}

/** Run Python (the package on the same path as the server) and answer its last line of output. */
export function python(code) {
  const run = spawnSync(PYTHON, ['-c', code], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return run.stdout.trim().split('\n').pop();
}

/** axe-core's serious and critical violations inside `selector` (its source injected into the page). */
export async function axeViolations(page, selector) {
  await page.addScriptTag({ content: readFileSync(join(here, '..', 'node_modules', 'axe-core', 'axe.min.js'), 'utf8') });
  return page.evaluate(async sel => {
    const result = await window.axe.run(document.querySelector(sel), { resultTypes: ['violations'] });
    return result.violations
      .filter(v => v.impact === 'serious' || v.impact === 'critical')
      .map(v => `${v.id} (${v.impact}): ${v.nodes.map(n => n.target.join(' ')).slice(0, 3).join(', ')}`);
  }, selector);
}

export const item = (page, name) => page.locator('.jp-DirListing-item', { hasText: name }).first();
export const crumbs = async page => (await page.locator('.jp-BreadCrumbs').innerText()).replace(/\s+/g, '');
export const currentTab = page => page.locator('.lm-DockPanel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel').first();

/** Resize the window until the visible version panel is `width` px wide (the sidebars keep theirs). */
export async function sizePanel(page, width) {
  for (let i = 0; i < 4; i++) {
    const have = await page.locator('.sds-panel:visible').first().evaluate(el => el.getBoundingClientRect().width);
    if (Math.abs(have - width) < 1) break;
    const vp = page.viewportSize();
    await page.setViewportSize({ width: Math.max(200, Math.round(vp.width + width - have)), height: vp.height });
    await page.waitForTimeout(500);
  }
  const got = await page.locator('.sds-panel:visible').first().evaluate(el => el.getBoundingClientRect().width);
  assert.ok(Math.abs(got - width) < 2, `panel ${got} px wide, not ${width}`);
}


/** Build the small demo, start JupyterLab on it and launch Chromium: each flow file's `before`. */
export async function startLab() {
  work = mkdtempSync(join(tmpdir(), 'sds-ui-'));
  // No "get notified about news?" toast over the screenshots.
  const notification = join(work, 'config', 'lab', 'user-settings', '@jupyterlab', 'apputils-extension');
  mkdirSync(notification, { recursive: true });
  writeFileSync(join(notification, 'notification.jupyterlab-settings'), JSON.stringify({ fetchNews: 'false' }));
  const demo = spawnSync(PYTHON, ['-m', 'sds_jupyter', 'demo', '--small', join(work, 'root')], { encoding: 'utf8' });
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
    assert.ok(i < 360, `jupyter lab did not start:\n${log.slice(-2000)}`);
    await new Promise(r => setTimeout(r, 500));
  }
  const history = await (await api(`/sds-jupyter/api/history?path=${encodeURIComponent(top)}`)).json();
  assert.ok(history.versions?.length >= 2, `history of ${top}: ${JSON.stringify(history).slice(0, 300)}`);
  baseFolder = history.base.dataset_id;
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
}

/** Close the browser, stop the server and remove the demo: each flow file's `after`. */
export async function stopLab() {
  await browser?.close();
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise(r => server.once('exit', r));
  }
  if (work) rmSync(work, { recursive: true, force: true });
}
