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
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
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

export async function newPage(viewport = { width: 1400, height: 900 }) {
  const page = await browser.newPage({ viewport, acceptDownloads: true });
  page.errors = [];
  page.on('pageerror', e => page.errors.push(e.message));
  // the product's requests in flight, and how many were ever sent: `settled` waits for their answers
  page.sdsPending = new Set();
  page.sdsSent = 0;
  page.on('request', r => {
    if (r.url().includes('/sds-jupyter/')) {
      page.sdsPending.add(r);
      page.sdsSent++;
    }
  });
  for (const done of ['requestfinished', 'requestfailed']) page.on(done, r => page.sdsPending.delete(r));
  return page;
}

export async function openListing(page, folder = 'datasets', query = '') {
  await page.goto(`${base}/lab/tree/${folder}?token=${TOKEN}&reset${query}`);
  await page.waitForSelector('.jp-DirListing-item', { timeout: 60000 });
  await settled(page);
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
    await settled(page);
  }
  const got = await page.locator('.sds-panel:visible').first().evaluate(el => el.getBoundingClientRect().width);
  assert.ok(Math.abs(got - width) < 2, `panel ${got} px wide, not ${width}`);
}


/** The render tiers a spatial flow runs in, with what the URL adds for each: the software fallback, then deck.gl's stock layers. */
export const TIERS = [
  ['software', ''],
  ['gpu', '&sds-tier=gpu']
];

/** The Xenium-like demos of this file's run: folder -> { key, top } (`top` a promise of its top version's folder name). */
const demos = new Map();
/** The Python processes building them (stopped with the server if still running). */
const builders = new Set();

/**
 * Build Xenium-like demos (each `[folder, nCells, side]`: `nCells` cells over a `side` px, 3-channel
 * pyramid, under the server root's `folder`) in one Python process, one after another, answering a
 * promise per folder as each is written. Spatialdata is imported once for them all, and a flow file
 * that starts them in its `before` has them built while its first flows run (which wait on the
 * browser far more than they compute); `xeniumDemo` then only awaits its own.
 */
export function buildXeniumDemos(specs) {
  const todo = specs.filter(([folder]) => !demos.has(folder));
  if (todo.length === 0) return;
  const script = [
    'import json, sys, warnings',
    'warnings.simplefilter("ignore")',
    'from pathlib import Path',
    'from sds_jupyter.demo.xenium import build_xenium_demo',
    'for folder, out, n, side in json.loads(sys.argv[1]):',
    '    print(json.dumps([folder, str(build_xenium_demo(Path(out), n_cells=n, side=side))]), flush=True)'
  ].join('\n');
  const child = spawn(PYTHON, ['-c', script, JSON.stringify(todo.map(([folder, n, side]) => [folder, join(work, 'root', folder), n, side]))], {
    stdio: ['ignore', 'pipe', 'pipe']
  });
  builders.add(child);
  const waiting = new Map();
  for (const [folder, n, side] of todo) {
    const top = new Promise((ok, fail) => waiting.set(folder, { ok, fail }));
    top.catch(() => undefined); // a flow that never asks for it is not failed by it
    demos.set(folder, { key: `${n}x${side}`, top });
  }
  let out = '';
  let err = '';
  child.stdout.on('data', d => {
    out += d;
    for (let end = out.indexOf('\n'); end >= 0; end = out.indexOf('\n')) {
      const [folder, topPath] = JSON.parse(out.slice(0, end));
      out = out.slice(end + 1);
      waiting.get(folder)?.ok(topPath.split('/').pop());
      waiting.delete(folder);
    }
  });
  child.stderr.on('data', d => (err += d));
  child.on('exit', code => {
    builders.delete(child);
    for (const [folder, { fail }] of waiting) fail(new Error(`the ${folder} demo was not built (exit ${code}):\n${err.slice(-2000)}`));
  });
}

/**
 * A Xenium-like demo (`nCells` cells over a `side` px, 3-channel pyramid) under the server root's
 * `folder`: a promise of its top version's folder name. Built now unless the file's `before` started
 * it already (`buildXeniumDemos`); asked twice, built once.
 */
export function xeniumDemo(folder, nCells, side) {
  buildXeniumDemos([[folder, nCells, side]]);
  const demo = demos.get(folder);
  assert.equal(demo.key, `${nCells}x${side}`, `the ${folder} demo was started with other sizes`);
  return demo.top;
}

/**
 * The issue 29 and 41 flows' own copy of the small demo under `nav29b`, with a plain folder and a
 * corrupt version beside its versions: the folder name of its top version. Built once per file's
 * server (the first flow that asks), whichever of those flows comes first.
 */
let nav29b = null;
export function nav29bDemo() {
  if (!nav29b) {
    const ownTop = smallDemo('nav29b');
    const datasets = join(work, 'root', 'nav29b', 'datasets');
    mkdirSync(join(datasets, 'plain-folder'));
    writeFileSync(join(datasets, 'plain-folder', 'notes.txt'), 'not a version');
    mkdirSync(join(datasets, 'corrupt-version'));
    writeFileSync(join(datasets, 'corrupt-version', 'layer.json'), '{"parent": ');
    nav29b = ownTop.split('/').pop();
  }
  return nav29b;
}

/** Whether this run was narrowed to some flows by name (`--test-name-pattern`): then only what they ask for is built. */
export const narrowed = process.execArgv.some(a => /^--test-(name|skip)-pattern|^--test-only/.test(a));

/**
 * Open version `name` from the listing of `folder` (`query` adds to the URL, e.g. a tier) as a user
 * does, by double-click, and show its figures; answers once the panel lists the history, before any
 * tissue is drawn (`waitForTissue` waits for that).
 */
export async function openFigures(page, folder, name, query = '') {
  await page.goto(`${base}/lab/tree/${folder}?token=${TOKEN}&reset${query}`);
  // a double-click opens the version browser once the listing knows the folder is a version (its mark)
  await page.locator('.jp-DirListing-item.sds-version-item', { hasText: name }).first().waitFor({ timeout: 60000 });
  await settled(page);
  await item(page, name).dblclick();
  await page.waitForSelector('.sds-history-row', { timeout: 60000 });
  await page.locator('.sds-tab[data-tab="figures"]').click();
}

/**
 * The cells figure `figure` (a `.sds-spatial`) says are in view, once that count is of what its
 * drawing shows now (the figure counts a while after the camera rests): a read after a pan or a zoom.
 */
export async function inViewCount(figure) {
  await figure.page().waitForFunction(
    el => {
      const stage = el.sdsSpatial?.stage;
      return Boolean(stage) && el.dataset.inView === String(stage.countIn(stage.region()));
    },
    await figure.elementHandle(),
    { timeout: 30000 }
  );
  return Number(await figure.getAttribute('data-in-view'));
}

/**
 * A view that changes nothing costs nothing: once deck stage `stage` (a locator) has drawn and the
 * page is still, its frame loop rests (no animation frame asked for), and over one of the tree's
 * poll intervals it runs no loop frame and draws no frame. `what` names the case in a failure.
 */
export async function idleDrawsNothing(stage, what) {
  const page = stage.page();
  const loop = () => stage.evaluate(el => ({ ...el.closest('.sds-spatial').sdsSpatial.stage.loop, frames: el.dataset.frames }));
  try {
    await page.waitForFunction(el => el.closest('.sds-spatial').sdsSpatial.stage.loop?.resting === true, await stage.elementHandle(), { timeout: 30000, polling: 100 });
  } catch {
    assert.fail(`${what}: the frame loop of a still view never rests: ${JSON.stringify(await loop())}`);
  }
  const before = await loop();
  await pollIntervals(1);
  assert.deepEqual(await loop(), before, `${what}: a still view ran its frame loop or drew`);
}

/** Wait until a tissue is drawn: a deck stage is live (`extra` narrows it, e.g. `[data-tile-levels="5"]`). */
export async function waitForTissue(page, extra = '') {
  await page.waitForSelector(`.sds-deck-stage[data-live="true"]${extra}`, { timeout: 90000 });
}

/**
 * What deck stage `stage` shows, as RGBA bytes over black (so anything drawn is lit, whatever the
 * theme's background): `{ w, h, d }`, the whole drawing; or, given data point `at` ([x, y]), only the
 * `size` x `size` device pixels around where the stage draws it now (`d` row by row, `w` = `h` = `size`).
 * `d` is a Uint8Array. The bytes cross from the page as base64: a plain array of a drawing's
 * millions of numbers takes Playwright minutes to serialize on a loaded machine, base64 under a second.
 */
export async function stagePixels(stage, at = null, size = 1) {
  const { w, h, b64 } = await stage.locator('.sds-deck-canvas').evaluate(
    (c, [at, size]) => {
      const copy = document.createElement('canvas');
      copy.width = c.width;
      copy.height = c.height;
      const ctx = copy.getContext('2d');
      ctx.fillStyle = '#000';
      ctx.fillRect(0, 0, c.width, c.height);
      ctx.drawImage(c, 0, 0);
      let box = [0, 0, c.width, c.height];
      if (at) {
        const region = c.closest('.sds-spatial').sdsSpatial.stage.region();
        const sx = Math.round(((at[0] - region[0]) / (region[2] - region[0])) * c.width);
        const sy = Math.round(((at[1] - region[1]) / (region[3] - region[1])) * c.height);
        const half = Math.floor(size / 2);
        box = [sx - half, sy - half, size, size];
      }
      const d = ctx.getImageData(...box).data;
      let bytes = '';
      for (let i = 0; i < d.length; i += 0x8000) bytes += String.fromCharCode(...d.subarray(i, i + 0x8000));
      return { w: box[2], h: box[3], b64: btoa(bytes) };
    },
    [at, size]
  );
  return { w, h, d: new Uint8Array(Buffer.from(b64, 'base64')) };
}

/** A checksum of what `canvas` shows (a weighted sum of its pixels): equal before and after a step means the step changed nothing drawn. */
export function canvasChecksum(canvas) {
  return canvas.evaluate(glCanvas => {
    const c = document.createElement('canvas');
    c.width = glCanvas.width;
    c.height = glCanvas.height;
    const ctx = c.getContext('2d');
    ctx.drawImage(glCanvas, 0, 0);
    const d = ctx.getImageData(0, 0, c.width, c.height).data;
    let sum = 0;
    for (let i = 0; i < d.length; i += 4) sum += d[i] * 3 + d[i + 1] * 5 + d[i + 2] * 7;
    return sum;
  });
}

/**
 * Poll `read()` until `ok(value)` holds, and answer that value; fail with `what` and the last value
 * read if it never does within `timeout` ms. The flows' way to read what a step changes: a canvas,
 * an attribute or a box is read once the step's effect is there, never after a guessed pause.
 */
export async function until(read, ok, what, timeout = 30000) {
  const end = Date.now() + timeout;
  let value;
  for (;;) {
    value = await read();
    if (ok(value)) return value;
    if (Date.now() > end) assert.fail(`${what} (after ${timeout} ms: ${JSON.stringify(value)?.slice(0, 300)})`);
    await new Promise(r => setTimeout(r, 50)); // the poll's step, not a wait for anything
  }
}

/**
 * Wait until the page has settled: the product's requests answered, the fonts loaded, no finite CSS
 * animation or transition running, and the boxes of the panel, its figures and deck stages (with
 * each stage's frame count, zoom and what it drew, and the theme) the same over three animation
 * frames. What a screenshot, a pixel or a layout read needs after a resize, a theme switch, a
 * layer toggle or a scroll.
 */
export async function settled(page, timeout = 30000) {
  // the product's requests answered first (a reply may change what is drawn), and none sent meanwhile
  // (a flow that holds some requests back on purpose names them in `page.sdsHeld`: not waited for)
  const open = () => [...(page.sdsPending ?? [])].filter(r => !(page.sdsHeld ?? []).some(part => r.url().includes(part))).length;
  for (;;) {
    await until(open, n => n === 0, 'the product\'s requests answered', 120000);
    const sent = page.sdsSent;
    await steady(page, timeout);
    if (open() === 0 && page.sdsSent === sent) return;
  }
}

/** The in-page half of `settled`: boxes, frame counts and theme unchanged over three animation frames, nothing animating. */
async function steady(page, timeout) {
  await page.evaluate(() => {
    delete window.__sdsSteady;
    delete window.__sdsLast;
  });
  await page.waitForFunction(
    () => {
      const boxes = [...document.querySelectorAll('.sds-panel, .sds-app, .sds-figure, .sds-deck-stage, .sds-embedding, .sds-side, .jp-DirListing')].map(n => {
        const r = n.getBoundingClientRect();
        return [r.x, r.y, r.width, r.height, n.dataset?.frames ?? '', n.dataset?.zoom ?? '', n.dataset?.drawn ?? ''];
      });
      const sig = JSON.stringify([boxes, document.body.dataset.jpThemeName, window.innerWidth, window.scrollY]);
      // (a notification's countdown bar runs as long as the note stands: not a movement to wait out)
      const moving = document
        .getAnimations()
        .some(a => a.playState === 'running' && a.effect?.getComputedTiming().iterations !== Infinity && !a.effect?.target?.closest?.('.Toastify__progress-bar'));
      const w = /** @type {any} */ (window);
      w.__sdsSteady = !moving && document.fonts.status === 'loaded' && w.__sdsLast === sig ? (w.__sdsSteady ?? 0) + 1 : 0;
      w.__sdsLast = sig;
      return w.__sdsSteady >= 3;
    },
    null,
    { polling: 'raf', timeout }
  );
}

/** The Jupyter workspace the page saves its layout into (Lab: the URL's workspace or "default"). */
function workspaceOf(page) {
  return page.evaluate(() => JSON.parse(document.getElementById('jupyter-config-data')?.textContent ?? '{}').workspace ?? 'default');
}

/**
 * Wait until the layout the page keeps on the server (its workspace) names `text`, e.g. the folder of
 * the version a panel shows: after that, a reload brings it back. JupyterLab saves the layout a
 * while after a change; this waits for the saved layout itself.
 */
export async function layoutSaved(page, text) {
  const workspace = await workspaceOf(page);
  await until(
    async () => JSON.stringify((await (await api(`/lab/api/workspaces/${encodeURIComponent(workspace)}`)).json()).data ?? {}),
    saved => saved.includes(text),
    `the layout of workspace ${workspace} saved with ${text}`,
    60000
  );
}

/** The history tree's poll interval (ms), read from the product's source: a flow that proves "not asked again" waits a number of these. */
export const POLL_INTERVAL = Number(/export const POLL_INTERVAL = (\d+)/.exec(readFileSync(join(here, '..', 'src', 'app', 'history', 'tree.ts'), 'utf8'))[1]);

/** Wait `n` of the tree's poll intervals: only to prove an absence (nothing asked again meanwhile). */
export function pollIntervals(n) {
  return new Promise(r => setTimeout(r, n * POLL_INTERVAL));
}

/**
 * Read `read()` once the page has settled, do `act()`, and answer what `read()` gives once it
 * differs from before and the page has settled again; fail with `what` if it never changes. How a
 * flow proves a step changed the drawing: against the frame just before the step, never a guess.
 */
export async function changes(page, read, act, what) {
  await settled(page);
  const before = JSON.stringify(await read());
  await act();
  await until(read, v => JSON.stringify(v) !== before, what);
  await settled(page);
  return read();
}

export const THEMES_PLUGIN = '@jupyterlab/apputils-extension:themes';

/**
 * The theme loop of the flows: for each of `themes` ('light', 'dark'), set it as the user's theme,
 * run `flow(page, tag)` on a fresh page (`viewport` its size), and close it; the light theme is put back whatever happens.
 * A flow opens its page, then `await wearsTheme(page)` before reading colours or taking shots.
 */
export async function inThemes(themes, flow, viewport = undefined) {
  try {
    for (const tag of themes) {
      await setSetting(THEMES_PLUGIN, { theme: tag === 'dark' ? 'JupyterLab Dark' : 'JupyterLab Light' });
      const page = await newPage(viewport);
      page.sdsTheme = tag;
      try {
        await flow(page, tag);
      } finally {
        await page.close();
      }
    }
  } finally {
    await setSetting(THEMES_PLUGIN, { theme: 'JupyterLab Light' });
  }
}

/** Wait until a page opened inside `inThemes` wears its theme and has settled in it. */
export async function wearsTheme(page) {
  const light = String((page.sdsTheme ?? 'light') === 'light');
  await page.waitForFunction(l => document.body.dataset.jpThemeLight === l, light, { timeout: 30000 });
  await settled(page);
}

/** Set the window `width` px wide and wait until the page has settled at it (a narrow-window screenshot). */
export async function narrowTo(page, width, height = 900) {
  await page.setViewportSize({ width, height });
  await settled(page);
}

/**
 * Drag the handle between the left sidebar `sidebar` (a selector) and the main area until the
 * sidebar is `px` wide, as a user does (the mouse, in steps), and wait until it is within 30 px of
 * that width and the page has settled. Answers the width reached.
 */
export async function dragSidebarTo(page, px, sidebar = '#sds-versions-sidebar') {
  const handle = page.locator('#jp-main-split-panel > .lm-SplitPanel-handle').first();
  const from = await handle.boundingBox();
  const left = (await page.locator(sidebar).boundingBox()).x;
  await page.mouse.move(from.x + from.width / 2, from.y + 200);
  await page.mouse.down();
  await page.mouse.move(left + px, from.y + 200, { steps: 8 });
  await page.mouse.up();
  const width = await until(async () => (await page.locator(sidebar).boundingBox()).width, w => Math.abs(w - px) < 30, `the sidebar dragged to ${px} px`);
  await settled(page);
  return width;
}

/** Switch JupyterLab's theme from the Settings menu, as a user does, and wait until the page wears it. */
export async function useTheme(page, theme) {
  await page.locator('.lm-MenuBar-itemLabel', { hasText: 'Settings' }).click();
  await page.locator('.lm-Menu-itemLabel', { hasText: /^Theme$/ }).hover();
  await page.locator('.lm-Menu-itemLabel', { hasText: new RegExp(`^${theme}$`) }).click();
  await page.waitForFunction(name => document.body.dataset.jpThemeName === name, theme, { timeout: 30000 });
  await settled(page);
}

/**
 * Where the small demo's builds are kept between the groups of a run (and runs soon after):
 * `small-<digest>-<built at, ms>/` holding the demo under `root/` and its top version's path
 * inside it in `top`. The digest is of what the build reads: the Python, every installed
 * distribution's version, and the sds_jupyter package's Python sources (wherever that Python
 * imports it from).
 */
const KEPT = join(tmpdir(), 'sds-ui-demos');
/** A kept build older than this is not used (its versions would say they were made long ago); one older than twice this is removed. */
const KEPT_FOR_MS = 3600_000;
const DIGEST = [
  'import hashlib, importlib.metadata as md, pathlib, sys',
  'import sds_jupyter',
  'h = hashlib.sha256(sys.version.encode())',
  'for d in sorted(f"{x.metadata[\'Name\']}=={x.version}" for x in md.distributions()):',
  '    h.update(d.encode() + b"\\0")',
  'pkg = pathlib.Path(sds_jupyter.__file__).parent',
  'for p in sorted(pkg.rglob("*.py")):',
  '    h.update(str(p.relative_to(pkg)).encode() + b"\\0" + p.read_bytes())',
  'print(h.hexdigest()[:24])'
].join('\n');

/** The kept small demo this run copies: its `root` folder and top version's path inside it. */
let keptSmall = null;

/**
 * The small demo (`sds-jupyter demo --small`, 26 cells, about 5 s of CPU to build) is built once
 * for every group of a run, not once a group and again for each flow's own copy (twelve builds a
 * run before): the first group to ask builds it under KEPT while the others wait (a lock folder
 * made atomically, its builder's pid inside; a lock whose builder is gone is taken over), then each
 * copies it. The build is the same every time but for its versions' times (dataset IDs are
 * derived, no path is written in), so a copy is what a build would have written.
 */
async function keepSmallDemo() {
  const digest = python(DIGEST);
  mkdirSync(KEPT, { recursive: true });
  const lock = join(KEPT, `small-${digest}.lock`);
  for (;;) {
    const now = Date.now();
    const builds = readdirSync(KEPT)
      .map(name => ({ name, at: Number(/^small-[0-9a-f]+-(\d+)$/.exec(name)?.[1] ?? NaN) }))
      .filter(b => Number.isFinite(b.at));
    const fresh = builds.filter(b => b.name.startsWith(`small-${digest}-`) && now - b.at < KEPT_FOR_MS).sort((a, b) => b.at - a.at)[0];
    if (fresh) {
      const dir = join(KEPT, fresh.name);
      return { root: join(dir, 'root'), top: readFileSync(join(dir, 'top'), 'utf8') };
    }
    try {
      mkdirSync(lock);
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      // another group builds it: wait for the build, unless its builder is gone
      let holder = NaN;
      try {
        holder = Number(readFileSync(join(lock, 'pid'), 'utf8'));
      } catch {
        // the lock is being made: its pid comes next
      }
      if (Number.isInteger(holder) && holder > 0 && !alive(holder)) rmSync(lock, { recursive: true, force: true });
      await new Promise(r => setTimeout(r, 200));
      continue;
    }
    try {
      writeFileSync(join(lock, 'pid'), String(process.pid));
      for (const b of builds) {
        if (now - b.at > 2 * KEPT_FOR_MS) rmSync(join(KEPT, b.name), { recursive: true, force: true });
      }
      const building = join(KEPT, `building-${digest}-${process.pid}`);
      rmSync(building, { recursive: true, force: true });
      const demo = spawnSync(PYTHON, ['-m', 'sds_jupyter', 'demo', '--small', join(building, 'root')], { encoding: 'utf8' });
      assert.equal(demo.status, 0, demo.stderr);
      writeFileSync(join(building, 'top'), relative(join(building, 'root'), demo.stdout.trim().split('\n').pop()));
      renameSync(building, join(KEPT, `small-${digest}-${Date.now()}`));
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/**
 * A copy of the small demo under the server root's `folder` ('' for the root itself), as
 * `sds-jupyter demo --small` would write it there: answers the path of its top version.
 */
export function smallDemo(folder) {
  assert.ok(keptSmall, 'startLab keeps the small demo first');
  cpSync(keptSmall.root, join(work, 'root', folder), { recursive: true });
  return join(work, 'root', folder, keptSmall.top);
}

/** Copy the small demo, start JupyterLab on it and launch Chromium: each flow file's `before`. */
export async function startLab() {
  work = mkdtempSync(join(tmpdir(), 'sds-ui-'));
  // No "get notified about news?" toast over the screenshots.
  const notification = join(work, 'config', 'lab', 'user-settings', '@jupyterlab', 'apputils-extension');
  mkdirSync(notification, { recursive: true });
  writeFileSync(join(notification, 'notification.jupyterlab-settings'), JSON.stringify({ fetchNews: 'false' }));
  keptSmall = await keepSmallDemo();
  const topPath = smallDemo('');
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

/**
 * Click export button `button` (a locator) and answer the file it downloads. The export is waited
 * for as long as the button says it is under way (aria-busy, its seconds counting: a loaded machine
 * draws a large figure slowly), never for a guessed time; it fails once the export ends without a
 * file (the button marked failed, or no download following the end).
 */
export async function exportFile(button) {
  const page = button.page();
  const handle = await button.elementHandle();
  const download = page.waitForEvent('download', { timeout: 0 });
  download.catch(() => undefined); // answered below, or the page closed with the flow
  await handle.click();
  const ended = page.waitForFunction(el => el.getAttribute('aria-busy') !== 'true', handle, { timeout: 0, polling: 200 });
  ended.catch(() => undefined);
  const first = await Promise.race([download, ended.then(() => null)]);
  if (first) return first;
  assert.ok(!(await handle.evaluate(el => el.classList.contains('sds-failed'))), 'the export failed (its button says so)');
  // the export ended well: its download event is on its way
  let timer;
  const late = new Promise((_, fail) => (timer = setTimeout(() => fail(new Error('the export ended without a download')), 30000)));
  try {
    return await Promise.race([download, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Close the browser, stop the server and remove the demo: each flow file's `after`. */
export async function stopLab() {
  for (const child of builders) child.kill('SIGTERM');
  await browser?.close();
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise(r => server.once('exit', r));
  }
  if (work) rmSync(work, { recursive: true, force: true });
}

/**
 * The Layers menu of spatial view `figure` (a locator), opened as a user does (its button) when
 * closed: its panel, to find a layer's controls in. Answers once the panel is on screen.
 */
export async function openLayers(figure) {
  const button = figure.locator('.sds-layers-toggle').first();
  if ((await button.getAttribute('aria-expanded')) !== 'true') {
    await button.click();
  }
  const panel = figure.locator('.sds-layers-menu').first();
  await panel.waitFor({ state: 'visible' });
  return panel;
}

/** Close `figure`'s Layers menu from the keyboard (Escape, the focus in the menu) and wait until it is gone. */
export async function closeLayers(figure) {
  const panel = figure.locator('.sds-layers-menu').first();
  if (await panel.isVisible()) {
    await panel.locator('input, select').first().focus();
    await figure.page().keyboard.press('Escape');
  }
  await panel.waitFor({ state: 'hidden' });
}

/**
 * Tick (`on`) or clear layer `name`'s checkbox (Cells, Image, Transcripts, Labels) of `figure`
 * through its Layers menu, then close the menu (the drawing under it uncovered again).
 */
export async function setLayer(figure, name, on) {
  const box = (await openLayers(figure)).getByRole('checkbox', { name, exact: true });
  await (on ? box.check() : box.uncheck());
  await closeLayers(figure);
}

/**
 * Click each export button of `figure`: SVG, PNG and PDF download the files the service draws
 * (the renderer of `sds-jupyter export`), named `<prefix>-<figure id>` (the PNG `-300dpi.png`);
 * the PNG has its 300 dpi written in (pHYs) and, for a canvas, is the print width (the
 * figure's chip, in mm) at 300 dpi. Returns the SVG text and the names.
 */
export async function exportsOf(page, figure, prefix) {
  const id = await figure.getAttribute('data-figure');
  const title = await figure.locator('.sds-figure-title').innerText();
  const chip = await figure.locator('.sds-chip').innerText();
  const mm = Number(/([\d.]+) mm/.exec(chip)?.[1] ?? (/double/.test(chip) ? 183 : 89));
  const save = async label => {
    const button = figure.locator('.sds-figure-tools button', { hasText: label });
    const download = await exportFile(button);
    const bytes = readFileSync(await download.path());
    // kept beside the screenshots, to look at
    mkdirSync(join(SHOTS, 'exports'), { recursive: true });
    writeFileSync(join(SHOTS, 'exports', download.suggestedFilename()), bytes);
    return { name: download.suggestedFilename(), bytes };
  };
  const svg = await save(/^SVG$/);
  const png = await save(/^PNG$/);
  const pdf = await save(/^PDF$/);
  assert.equal(svg.name, `${prefix}-${id}.svg`);
  assert.equal(png.name, `${prefix}-${id}-300dpi.png`);
  assert.equal(pdf.name, `${prefix}-${id}.pdf`);
  assert.equal(pdf.bytes.subarray(0, 5).toString('latin1'), '%PDF-');
  assert.equal(png.bytes.subarray(1, 4).toString('latin1'), 'PNG');
  const phys = png.bytes.indexOf('pHYs');
  assert.ok(phys > 0, 'the dpi written in the PNG');
  assert.equal(png.bytes.readUInt32BE(phys + 4), 11811, '300 dpi in pixels per metre');
  if ((await figure.getAttribute('class')).includes('sds-figure-canvas')) {
    assert.equal(png.bytes.readUInt32BE(16), Math.round((mm / 25.4) * 300), `print width of ${mm} mm in pixels`);
  }
  return { svg: svg.bytes.toString('utf8'), title, names: { svg: svg.name, png: png.name, pdf: pdf.name } };
}

/** What an exported SVG holds, parsed by the browser as a reader would: its text, and its drawn shapes. */
export async function svgSummary(page, svg) {
  return page.evaluate(text => {
    const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    if (doc.querySelector('parsererror') || doc.documentElement.nodeName !== 'svg') {
      return { error: doc.querySelector('parsererror')?.textContent ?? doc.documentElement.nodeName };
    }
    return {
      error: null,
      texts: [...doc.querySelectorAll('text')].map(t => t.textContent.trim()),
      shapes: doc.querySelectorAll('path').length
    };
  }, svg);
}
