// UI flows around the panel in a real JupyterLab: opening versions from the file browser, notebooks
// and the widget, the tree written live, a read-only workspace, Cirro, and a save from a notebook
// shown in a panel open beside it. The Versions sidebar, Notebook 7, annotation, the embedding and
// the issue 29 and 41 flows are in lab-sidebar.test.mjs; a missing parent and the double-click
// setting in lab-views.test.mjs (groups of their own, each on its own server, so the groups run
// side by side); the shared set-up and steps are in harness.mjs.

import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  PYTHON,
  SHOTS,
  TOKEN,
  api,
  axeViolations,
  base,
  baseFolder,
  crumbs,
  currentTab,
  freePort,
  item,
  layoutSaved,
  narrowTo,
  newPage,
  notebookReady,
  openAndSave,
  openListing,
  putNotebook,
  python,
  repo,
  runCell,
  setSetting,
  settled,
  shot,
  sizePanel,
  skip,
  startLab,
  stopLab,
  top,
  until,
  useTheme,
  work
} from './harness.mjs';

describe('JupyterLab version browser: notebooks, the tree and the sidebar', { skip, timeout: 1800000 }, () => {
  before(startLab);
  after(stopLab);

  it('an open version panel comes back after a reload', async () => {
    const page = await newPage();
    await openListing(page);
    await item(page, top.split('/').pop()).dblclick();
    await page.waitForSelector('.sds-history-row');
    const label = await currentTab(page).innerText();
    await layoutSaved(page, top.split('/').pop());
    await page.goto(`${base}/lab/tree/datasets?token=${TOKEN}`);
    await page.waitForSelector('.sds-history-row', { timeout: 60000 });
    const tabs = await page.locator('.lm-DockPanel .lm-TabBar-tabLabel').allInnerTexts();
    assert.ok(tabs.includes(label), `${label} not in ${tabs.join(', ')}`);
    // moved to another version of its tree, the panel comes back on that version
    const branch = page.locator('.sds-tree-row', { hasText: 'Coarser clusters' });
    await branch.waitFor({ timeout: 30000 });
    const folder = await branch.getAttribute('data-id');
    await branch.click();
    await page.waitForFunction(id => document.querySelector('.sds-tree-row.sds-tree-current')?.getAttribute('data-id') === id, folder, { timeout: 60000 });
    await layoutSaved(page, folder);
    await page.goto(`${base}/lab/tree/datasets?token=${TOKEN}`);
    await page.waitForFunction(id => document.querySelector('.sds-tree-row.sds-tree-current')?.getAttribute('data-id') === id, folder, { timeout: 60000 });
    assert.equal((await currentTab(page).innerText()).trim(), 'Coarser clusters');
    assert.deepEqual(page.errors, []);
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
    await putNotebook('widget.ipynb', [
      `%load_ext sds_jupyter\n%sds_open ${JSON.stringify(top)} --as cells`,
      `print(type(cells).__name__, cells.n_obs)`,
      `cells.obs["my_annotation"] = ["left" if i % 2 else "right" for i in range(cells.n_obs)]\n%sds_save "My annotation" --from cells`
    ]);
    const page = await newPage();
    await page.goto(`${base}/lab/tree/widget.ipynb?token=${TOKEN}&reset`);
    await notebookReady(page);
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
    await page.waitForSelector('.jp-OutputArea .sds-deck-stage[data-live="true"], .jp-OutputArea canvas.sds-canvas', { timeout: 60000 });
    // the widget's bundle carries deck.gl too: the view draws with WebGL in the notebook
    assert.equal(await page.locator('.jp-OutputArea .sds-spatial').first().getAttribute('data-renderer'), 'webgl');
    await page.waitForSelector('.jp-OutputArea .sds-deck-stage[data-live="true"]', { timeout: 60000 });
    await page.waitForSelector('.jp-OutputArea .sds-chart svg', { timeout: 60000 });
    assert.ok((await page.locator('.jp-OutputArea .sds-history-row').count()) >= 3);
    await shot(page, 'notebook-sds-open');
    // the magic bound the top version's table under the name given with --as
    await runCell(page, 1);
    await page.waitForFunction(() => /AnnData \d+/.test(document.querySelectorAll('.jp-Cell')[1]?.querySelector('.jp-OutputArea')?.textContent ?? ''), null, { timeout: 60000 });
    // %sds_open said what it bound; the button names the variable; the bound version is marked
    assert.match(await page.locator('.jp-Cell').first().locator('.jp-OutputArea-output pre').first().innerText(), /^`cells` is the AnnData of v\d+ /);
    assert.equal(await page.locator('.jp-OutputArea [data-action="open-adata"]').innerText(), 'Bind as `cells`');
    assert.equal(await page.locator('.jp-OutputArea .sds-history-row .sds-bound').count(), 1);
    // edit obs and save: the widget shows the new version at once, selected and bound
    await runCell(page, 2);
    await page.waitForFunction(() => /Saved `cells` as v\d+|rror/.test(document.querySelectorAll('.jp-Cell')[2]?.querySelector('.jp-OutputArea')?.textContent ?? ''), null, { timeout: 120000 });
    assert.match(await page.locator('.jp-Cell').nth(2).locator('.jp-OutputArea').innerText(), /Saved `cells` as v\d+ “My annotation” \(1 set-obs\)/);
    const saved = page.locator('.jp-OutputArea .sds-history-row.sds-selected');
    await page.waitForFunction(() => /My annotation/.test(document.querySelector('.jp-OutputArea .sds-history-row.sds-selected')?.textContent ?? ''), null, { timeout: 60000 });
    assert.match(await saved.innerText(), /bound: cells/);
    assert.match(await page.locator('.jp-OutputArea .sds-action-msg').innerText(), /^v\d+ saved from the notebook; `cells` is bound to it\.$/);
    await page.locator('.jp-OutputArea .sds-tab[data-tab="changes"]').click();
    await page.waitForFunction(() => /my_annotation/.test(document.querySelector('.jp-OutputArea .sds-panels')?.textContent ?? ''), null, { timeout: 60000 });
    await shot(page, 'notebook-sds-save');
    // the divider between history and details: focus it, widen the history with the keyboard
    const side = page.locator('.jp-OutputArea .sds-side');
    const before = (await side.boundingBox()).width;
    await page.locator('.jp-OutputArea .sds-divider[role="separator"]').focus();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await until(async () => (await side.boundingBox()).width, w => w >= before + 24, `history ${before} px wider by two steps`);
    // the same in the dark theme and in a narrow window (looked at by hand)
    await useTheme(page, 'JupyterLab Dark');
    await shot(page, 'notebook-sds-save-dark');
    await narrowTo(page, 640);
    await shot(page, 'notebook-sds-save-narrow');
    await page.setViewportSize({ width: 1400, height: 900 });
    await useTheme(page, 'JupyterLab Light');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  it('the widget moves to a branch of its tree (no "saved" claim, Copy code names it); after a kernel restart it says to run the cell again', async () => {
    await putNotebook('move.ipynb', [
      `from sds_jupyter import VersionBrowser\nVersionBrowser(${JSON.stringify(top)})`
    ]);
    const page = await newPage();
    await page.goto(`${base}/lab/tree/move.ipynb?token=${TOKEN}&reset`);
    await notebookReady(page);
    await runCell(page, 0);
    const app = page.locator('.jp-OutputArea .sds-app').first();
    await app.locator('.sds-tree-row').first().waitFor({ timeout: 120000 });
    // a version off the opened line: the branch
    const branch = app.locator('.sds-tree-row:not(.sds-tree-chain):not(.sds-tree-current)').first();
    const title = (await branch.getAttribute('aria-label')) ?? '';
    const folder = await branch.getAttribute('data-id');
    // moved there and back and there again while the figures' requests are on their way: each view
    // keeps asking the folder it shows (a pinned comm), so no reply of a folder left becomes an error
    // (each step once the tree names where the widget is; back by the Back button, as a row of the
    // opened version's own line selects a depth instead of moving, and earlier flows may have saved
    // the branch on top of the opened version)
    const opened = await app.locator('.sds-tree-row.sds-tree-current').getAttribute('data-id');
    const isCurrent = id => page.waitForFunction(id => document.querySelector('.jp-OutputArea .sds-tree-row.sds-tree-current')?.getAttribute('data-id') === id, id, { timeout: 60000 });
    const figuresTab = app.locator('.sds-tab[data-tab="figures"]');
    const toBranch = () => app.locator(`.sds-tree-row[data-id="${folder}"]`).click();
    const back = () => app.locator('.sds-back').click();
    for (const [move, id] of [[toBranch, folder], [back, opened], [toBranch, folder]]) {
      await figuresTab.click(); // its figures ask for cells, tiles and charts: the move comes while they do
      await move();
      await isCurrent(id);
    }
    // the figures in view drawn (one further down waits, lazily, to be scrolled to)
    await figuresTab.click();
    await page.waitForFunction(() => [...document.querySelectorAll('.jp-OutputArea .sds-figures .sds-figure')].some(f => f.querySelector('.sds-figure-body canvas, .sds-figure-body svg')), null, { timeout: 60000 });
    await settled(page);
    const errors = await app.locator('.sds-error').allInnerTexts();
    assert.deepEqual(errors.filter(e => /no version at depth|has left/i.test(e)), [], `moved during requests: ${errors.join(' | ')}`);
    // the move's history has come back over the comm (its rows list the branch's chain) before the
    // line is read: a "saved" claim would be said on that reply's arrival
    await page.waitForFunction(() => document.querySelector('.jp-OutputArea .sds-history-row.sds-selected') && !document.querySelector('.jp-OutputArea .sds-app .sds-loading:not(.sds-figures .sds-loading)'), null, { timeout: 60000 });
    await app.locator('.sds-tab[data-tab="results"]').click();
    await app.locator('.sds-results').waitFor({ timeout: 60000 });
    await page.waitForFunction(() => !document.querySelector('.jp-OutputArea .sds-results .sds-loading'), null, { timeout: 60000 });
    assert.doesNotMatch(await app.locator('.sds-action-msg').innerText(), /saved from the notebook/, title);
    const copy = app.locator('.sds-copy-code').first();
    if (await copy.count()) {
      assert.match(await copy.getAttribute('title'), new RegExp(folder), 'Copy code names the branch');
    }
    await shot(page, 'widget-branch');
    await page.locator('.lm-MenuBar-itemLabel', { hasText: 'Kernel' }).click();
    await page.locator('.lm-Menu-itemLabel', { hasText: /^Restart Kernel/ }).first().click();
    // the restart is done (the old kernel and its comm gone) when the server answers its request
    const restarted = page.waitForResponse(r => /\/api\/kernels\/[^/]+\/restart/.test(r.url()) && r.request().method() === 'POST', { timeout: 120000 });
    await page.locator('.jp-Dialog .jp-mod-accept').click();
    assert.ok((await restarted).ok(), 'the kernel restarted');
    await app.locator('.sds-tab[data-tab="compare"]').click();
    await page.waitForFunction(() => /run its cell again/.test(document.querySelector('.jp-OutputArea .sds-panels')?.textContent ?? ''), null, { timeout: 60000 });
    await shot(page, 'widget-after-restart');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  it('a notebook with live widgets, reopened on a slow machine, draws them again (anywidget does not give up on them)', async () => {
    // anywidget rejects a model whose `_esm` is not imported and initialized within 2 s
    // ("[anywidget] Failed to initialize model."), and then drops that model's comm messages:
    // the reopened widget never got its history. CPU throttling stands in for a loaded machine
    // and a page restoring everything at once; the widget's entry has to load well within that.
    await putNotebook('reopen.ipynb', [
      `from sds_jupyter import VersionBrowser\nfor _ in range(3):\n    display(VersionBrowser(${JSON.stringify(top)}))`
    ]);
    const page = await newPage();
    // anywidget's own complaints count too, whether thrown or only logged
    page.on('console', m => m.type() === 'error' && /anywidget/.test(m.text()) && page.errors.push(m.text()));
    await page.goto(`${base}/lab/tree/reopen.ipynb?token=${TOKEN}&reset`);
    await notebookReady(page);
    await runCell(page, 0);
    await page.waitForFunction(() => document.querySelectorAll('.jp-OutputArea .sds-app .sds-history-row').length >= 3 * 2, null, { timeout: 120000 });
    // saved with its output (the widget's view), then reopened: the model comes back from the kernel
    await page.keyboard.press('Control+s');
    await page.waitForFunction(() => !document.querySelector('.jp-mod-dirty'), null, { timeout: 30000 }).catch(() => undefined);
    const cdp = await page.context().newCDPSession(page);
    // 4x. What this guards is anywidget's 2 s for our entry: the app as the entry (1.8 MB) took ~1 s to
    // import unthrottled under load 7 (commit 51086c8), so 4x puts it at twice the limit; the entry
    // (a few kB) stays far inside it. Past that the throttle tests JupyterLab, not us: its renderer asks
    // for a model for 2 s, polling every 100 ms, and if the restore from the kernel ends while that last
    // timer waits behind a long task, it finds the manager restored and shows "Error displaying widget:
    // model not found" for good (jupyterlab_widgets 3.0, renderModel). At 12x that came now and then,
    // at 6x once in four fresh-clone CI runs beside the other flows (issue 43, item 6); never anywidget.
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: 4 });
    try {
      await page.reload();
      await page.waitForSelector('.jp-Notebook .jp-Cell', { timeout: 120000 });
      // every widget got its history (a model anywidget gave up on hears no answer)
      await page.waitForFunction(
        () => [...document.querySelectorAll('.jp-OutputArea .sds-app')].filter(a => a.querySelector('.sds-history-row')).length === 3,
        null,
        { timeout: 120000 }
      );
      // every model came back (a model anywidget gave up on never gets its history): what is left to
      // wait for is the page at rest before its shot and its errors are read
      await settled(page);
    } catch (error) {
      await shot(page, 'FAILED-widget-reopened');
      const outputs = await page
        .$$eval('.jp-OutputArea-output', nodes => nodes.map(n => n.textContent?.trim().slice(0, 120) ?? ''))
        .catch(() => []);
      error.message += `\npage errors: ${page.errors.join(' | ')}\noutputs: ${outputs.join(' | ')}`;
      throw error;
    } finally {
      // (a page already closed, by a timeout, has nothing to reset; the error above says why)
      await cdp.send('Emulation.setCPUThrottlingRate', { rate: 1 }).catch(() => undefined);
    }
    await shot(page, 'widget-reopened');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  it('the tree shows both branches; a version written by Python appears live and opens on click', async () => {
    const page = await newPage();
    await openListing(page);
    await item(page, top.split('/').pop()).dblclick();
    await page.waitForSelector('.sds-history-row', { timeout: 30000 });
    await page.waitForFunction(() => document.querySelectorAll('.sds-tree-row').length >= 5, null, { timeout: 30000 });
    // the branch saved from an earlier version is in the tree, off the opened line, in its own lane
    const branch = page.locator('.sds-tree-row', { hasText: 'Coarser clusters' });
    assert.equal(await branch.count(), 1);
    assert.equal(await branch.evaluate(r => r.classList.contains('sds-tree-chain')), false);
    const lanes = await page.$$eval('.sds-tree-dot', dots => new Set(dots.map(d => d.getAttribute('cx'))).size);
    assert.ok(lanes >= 2, `${lanes} lanes`);
    const topTitle = await page.locator('.sds-history-row').first().locator('.sds-row-title').innerText();
    assert.equal(await page.locator('.sds-tree-row.sds-tree-current .sds-tree-title').innerText(), topTitle);
    assert.equal(await page.locator('.sds-tree-row.sds-tree-chain').count(), await page.locator('.sds-history-row:not(.sds-base-row)').count());
    await shot(page, 'panel-tree');
    // search narrows the history (author) and the tree
    await page.locator('.sds-search').fill('coarser');
    await page.waitForFunction(() => document.querySelectorAll('.sds-tree-row').length === 1);
    assert.equal(await page.locator('.sds-history-row').count(), 0);
    await page.locator('.sds-search').fill('author:ana');
    await page.waitForFunction(() => document.querySelectorAll('.sds-history-row').length === 2);
    await page.locator('.sds-search').fill('op:set-obs regions');
    await page.waitForFunction(() => document.querySelectorAll('.sds-history-row').length >= 1);
    for (const title of await page.locator('.sds-history-row .sds-row-title').allInnerTexts()) {
      assert.match(title, /region/i);
    }
    await page.locator('.sds-search').fill('');
    // a version saved from Python while the panel is open
    const saved = python(
      `from sds_jupyter.stack.write.writer import VersionWriter\n` +
        `w = VersionWriter(${JSON.stringify(join(work, 'root', top))})\n` +
        `w.set_uns('table', 'live_note', {'saved': 'while the panel is open'})\n` +
        `print(w.commit(title='Saved live', message='written while the panel was open', created_by='ui@example.org'))`
    );
    assert.ok(saved.endsWith(saved.split('/').pop()));
    await page.waitForSelector('.sds-new-versions:not([hidden])', { timeout: 30000 });
    assert.equal(await page.locator('.sds-new-versions').innerText(), '1 new version');
    const fresh = page.locator('.sds-tree-row', { hasText: 'Saved live' });
    assert.equal(await fresh.evaluate(r => r.classList.contains('sds-tree-newer')), true);
    await shot(page, 'panel-tree-new-version');
    await page.locator('.sds-new-versions').click();
    await page.waitForFunction(() => document.querySelector('.sds-history-row .sds-row-title')?.textContent === 'Saved live', null, { timeout: 30000 });
    await page.waitForFunction(() => document.querySelector('.sds-tree-row.sds-tree-current')?.textContent?.includes('Saved live'));
    assert.equal(await page.locator('.sds-new-versions').isHidden(), true);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  it('issue 26: datasets mounted read-only, %sds_save writes into the versions folder and the panel shows it live, not yet in Cirro', async t => {
    // a Cirro workspace: $HOME/datasets/<name> per dataset, SDS_CIRRO_DATASETS the map; the
    // server (and so its kernels) runs in a mount namespace where datasets/ is a read-only bind mount
    if (process.getuid?.() !== 0 || spawnSync('unshare', ['-m', 'true']).status !== 0) {
      t.skip('a bind mount needs root and unshare -m');
      return;
    }
    const home = join(work, 'workspace');
    const datasets = join(home, 'datasets');
    const folders = {};
    for (const id of readdirSync(join(work, 'root', 'datasets'))) {
      const manifest = join(work, 'root', 'datasets', id, 'layer.json');
      const title = existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')).title : 'Base';
      folders[id] = `${title.replace(/[^\w-]+/g, '-')}-${id.slice(0, 8)}`;
      cpSync(join(work, 'root', 'datasets', id), join(datasets, folders[id]), { recursive: true, verbatimSymlinks: true });
    }
    const topFolder = folders[top.split('/').pop()];
    const listing = dir => readdirSync(dir, { recursive: true }).sort().map(f => `${f}:${statSync(join(dir, f)).size}`).join('\n');
    const before = listing(datasets);
    const port = await freePort();
    const wbase = `http://127.0.0.1:${port}`;
    const mountAndRun = 'mount --bind "$SDS_MOUNT" "$SDS_MOUNT" && mount -o remount,bind,ro "$SDS_MOUNT" && exec "$@"';
    const lab = spawn(
      'unshare',
      [
        '-m', 'sh', '-c', mountAndRun, 'sh', PYTHON, '-m', 'jupyterlab', '--no-browser', '--allow-root', `--port=${port}`, '--ip=127.0.0.1',
        `--ServerApp.token=${TOKEN}`, `--ServerApp.root_dir=${home}`, '--ServerApp.jpserver_extensions={"sds_jupyter.server": True}',
        '--LabApp.news_url=None', '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate'
      ],
      {
        env: {
          ...process.env, JUPYTER_CONFIG_DIR: join(work, 'config'), HOME: home, SDS_MOUNT: datasets,
          SDS_CIRRO_DATASETS: JSON.stringify(folders), SDS_DATASETS_DIR: datasets, SDS_VERSIONS_DIR: join(home, 'sds-versions')
        },
        stdio: ['ignore', 'ignore', 'pipe']
      }
    );
    let log = '';
    lab.stderr.on('data', d => (log += d));
    const wapi = (path, init = {}) =>
      fetch(`${wbase}${path}`, { ...init, headers: { Authorization: `token ${TOKEN}`, 'Content-Type': 'application/json' } });
    const page = await newPage();
    try {
      for (let i = 0; ; i++) {
        try {
          if ((await wapi('/api/status')).ok) break;
        } catch {
          // not up yet
        }
        assert.ok(i < 360 && lab.exitCode === null, `the workspace's jupyter lab did not start:\n${log.slice(-2000)}`);
        await new Promise(r => setTimeout(r, 500));
      }
      const cells = [
        `%load_ext sds_jupyter\n%sds_open ${JSON.stringify(`datasets/${topFolder}`)}`,
        `adata.obs["workspace_note"] = ["kept" if i % 2 else "flagged" for i in range(adata.n_obs)]\n%sds_save "Workspace note" --message "saved with datasets/ read-only"`
      ].map((source, i) => ({ cell_type: 'code', id: `cell${i}`, metadata: {}, outputs: [], execution_count: null, source }));
      const content = { nbformat: 4, nbformat_minor: 5, metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } }, cells };
      assert.ok((await wapi('/api/contents/workspace.ipynb', { method: 'PUT', body: JSON.stringify({ type: 'notebook', format: 'json', content }) })).ok);
      await page.goto(`${wbase}/lab/tree/datasets?token=${TOKEN}&reset`);
      await page.waitForSelector('.jp-DirListing-item', { timeout: 60000 });
      await item(page, topFolder).dblclick();
      await page.waitForSelector('.sds-tree-row', { timeout: 60000 });
      const panelTab = (await currentTab(page).innerText()).trim();
      assert.equal(await page.locator('.sds-tree-tag-local').count(), 0, 'the mounted versions are in Cirro');
      const output = await openAndSave(page, 'workspace.ipynb', 'FAILED-issue26-save');
      // the version went to the versions folder, said so, and the read-only mount is as it was
      const [saved] = readdirSync(join(home, 'sds-versions')).filter(f => !f.startsWith('.'));
      assert.ok(saved && existsSync(join(home, 'sds-versions', saved, 'layer.json')), 'a version in the versions folder');
      assert.match(await output(), new RegExp(`Saved \`adata\` as v\\d+ “Workspace note” .* in .*sds-versions/${saved}`));
      assert.doesNotMatch(await output(), /rror|Traceback/);
      assert.equal(listing(datasets), before, 'nothing written under the read-only mount');
      assert.equal(JSON.parse(readFileSync(join(home, 'sds-versions', saved, 'layer.json'), 'utf8')).parent, `cirro:::dataset:${top.split('/').pop()}/layer.json`);
      // the panel shows it live, in the tree beside the mounted versions, marked not yet in Cirro
      await page.locator('.lm-DockPanel .lm-TabBar-tab', { hasText: panelTab }).first().click();
      await page.waitForSelector('.sds-panel .sds-new-versions:not([hidden])', { timeout: 60000 });
      const fresh = page.locator('.sds-panel .sds-tree-row', { hasText: 'Workspace note' });
      assert.equal(await fresh.locator('.sds-tree-tag-local').innerText(), 'not yet in Cirro');
      assert.equal(await page.locator('.sds-panel .sds-tree-tag-local').count(), 1);
      await shot(page, 'issue26-not-yet-in-cirro');
      // it opens, and reads back: its Changes name the column the notebook added
      await page.locator('.sds-panel .sds-new-versions').click();
      await page.waitForFunction(() => document.querySelector('.sds-panel .sds-history-row .sds-row-title')?.textContent === 'Workspace note', null, { timeout: 60000 });
      await page.locator('.sds-panel .sds-history-row').first().click();
      await page.locator('.sds-panel .sds-tab[data-tab="changes"]').click();
      await page.waitForFunction(() => /workspace_note/.test(document.querySelector('.sds-panel .sds-changes')?.textContent ?? ''), null, { timeout: 60000 });
      await shot(page, 'issue26-saved-version');
      assert.deepEqual(page.errors, []);
    } finally {
      await page.close();
      if (lab.exitCode === null) {
        lab.kill('SIGTERM');
        await new Promise(r => lab.once('exit', r));
      }
    }
  });

  it('issue 41: Upload to Cirro from the panel (its chain checked first, a project picked), the tag goes; a fresh folder fetches the parent from Cirro and opens; light, dark, 420 px, axe', async () => {
    // Cirro: the HTTPS stand-in and moto of tests/kit/cirro_standin.py, the real SDK in the server
    const standin = spawn(PYTHON, [join(repo, 'tests', 'kit', 'cirro_standin.py'), join(work, 'cirro-standin')], { stdio: ['pipe', 'pipe', 'pipe'] });
    mkdirSync(join(work, 'cirro-standin'), { recursive: true });
    let out = '';
    const said = [];
    standin.stdout.on('data', d => {
      out += d;
      const lines = out.split('\n');
      out = lines.pop();
      said.push(...lines);
    });
    const waitFor = async (test, what) => {
      for (let i = 0; !said.some(test); i++) {
        assert.ok(i < 600 && standin.exitCode === null, `the Cirro stand-in: no ${what}`);
        await new Promise(r => setTimeout(r, 200));
      }
      return said.splice(said.findIndex(test), 1)[0];
    };
    const cirroEnv = JSON.parse(await waitFor(l => l.startsWith('{'), 'environment'));
    // a workspace: the demo mounted under names (the folder map), two versions saved here, one on the other
    const home = join(work, 'cirro41');
    const datasets = join(home, 'datasets');
    const folders = {};
    for (const id of readdirSync(join(work, 'root', 'datasets'))) {
      const manifest = join(work, 'root', 'datasets', id, 'layer.json');
      folders[id] = existsSync(manifest) ? `${JSON.parse(readFileSync(manifest, 'utf8')).title.replace(/[^\w -]+/g, '')} ${id.slice(0, 4)}` : 'Blobs section';
      cpSync(join(work, 'root', 'datasets', id), join(datasets, folders[id]), { recursive: true, verbatimSymlinks: true });
    }
    const env = {
      ...process.env, ...cirroEnv, JUPYTER_CONFIG_DIR: join(work, 'config'), HOME: home,
      SDS_CIRRO_DATASETS: JSON.stringify(folders), SDS_DATASETS_DIR: datasets,
      SDS_VERSIONS_DIR: join(home, 'sds-versions'), SDS_CIRRO_CACHE: join(home, 'cirro-cache')
    };
    const save = (on, title) => {
      const code = `import sys\nfrom sds_jupyter import open_anndata, save_version\na = open_anndata(sys.argv[1])\na.obs[sys.argv[2].lower().replace(' ', '_')] = 1.0\nprint(save_version(sys.argv[1], a, title=sys.argv[2], into=sys.argv[3]))`;
      const run = spawnSync(PYTHON, ['-c', code, on, title, env.SDS_VERSIONS_DIR], { encoding: 'utf8', env });
      assert.equal(run.status, 0, run.stderr);
      return run.stdout.trim().split('\n').pop();
    };
    const first = save(join(datasets, folders[top.split('/').pop()]), 'Margins reviewed');
    const second = save(first, 'Tumour border');
    const [firstId, secondId] = [first, second].map(f => f.split('/').pop());
    const port = await freePort();
    const wbase = `http://127.0.0.1:${port}`;
    const lab = spawn(
      PYTHON,
      [
        '-m', 'jupyterlab', '--no-browser', '--allow-root', `--port=${port}`, '--ip=127.0.0.1',
        `--ServerApp.token=${TOKEN}`, `--ServerApp.root_dir=${home}`, '--ServerApp.jpserver_extensions={"sds_jupyter.server": True}',
        '--LabApp.news_url=None', '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate'
      ],
      { env, stdio: ['ignore', 'ignore', 'pipe'] }
    );
    let log = '';
    lab.stderr.on('data', d => (log += d));
    const pages = [];
    const open = async (folder, name) => {
      const page = await newPage();
      pages.push(page);
      await page.goto(`${wbase}/lab/tree/${folder}?token=${TOKEN}&reset`);
      await page.waitForSelector('.jp-DirListing-item', { timeout: 60000 });
      await item(page, name).dblclick();
      await page.waitForSelector('.sds-panel .sds-history-row', { timeout: 60000 });
      return page;
    };
    const box = page => page.locator('.sds-panel:visible .sds-cirro');
    try {
      for (let i = 0; ; i++) {
        try {
          if ((await fetch(`${wbase}/api/status`, { headers: { Authorization: `token ${TOKEN}` } })).ok) break;
        } catch {
          // not up yet
        }
        assert.ok(i < 360 && lab.exitCode === null, `the workspace's jupyter lab did not start:\n${log.slice(-2000)}`);
        await new Promise(r => setTimeout(r, 500));
      }
      const page = await open('sds-versions', secondId);
      await page.waitForSelector('.sds-panel .sds-tree-tag-local', { timeout: 60000 });
      assert.equal(await page.locator('.sds-panel .sds-tree-tag-local').count(), 2, 'both saved versions: not yet in Cirro');
      // item 3: the base is named as the folder map names it, never its UUID
      const told = await (await fetch(`${wbase}/sds-jupyter/api/history?path=${encodeURIComponent(`sds-versions/${secondId}`)}`, { headers: { Authorization: `token ${TOKEN}` } })).json();
      assert.equal(told.base?.name, 'Blobs section', JSON.stringify(told.base));
      await page.waitForFunction(() => /over Blobs section$/.test(document.querySelector('.sds-panel .sds-title-sub')?.textContent ?? ''), null, { timeout: 30000 });
      assert.equal(await page.locator('.sds-panel .sds-base-row .sds-row-title').innerText(), 'Blobs section');
      // item 1: the upload checks the chain first: the top's parent is not in Cirro yet, so nothing is offered
      const upload = page.locator('.sds-panel .sds-upload-cirro');
      await upload.waitFor({ timeout: 30000 });
      await upload.click();
      await box(page).locator('.sds-error').waitFor({ timeout: 60000 });
      assert.match(await box(page).locator('.sds-error').innerText(), new RegExp(`version ${firstId} in .* is not in Cirro yet: upload .*${firstId} first: it is “Margins reviewed”$`));
      assert.equal(await box(page).locator('select').count(), 0);
      assert.deepEqual(await axeViolations(page, '.sds-panel .sds-app'), [], 'the refused upload, light');
      await shot(page, 'issue41-upload-refused');
      await box(page).locator('.sds-cirro-close').click();
      // the parent first: a project picked (the workspace's own preselected), what goes up said, then progress and the new ID
      await page.locator('.sds-panel .sds-history-row', { hasText: 'Margins reviewed' }).click();
      await upload.click();
      const picker = box(page).locator('select.sds-cirro-project');
      await picker.waitFor({ timeout: 60000 });
      assert.deepEqual(await picker.locator('option').allInnerTexts(), ['A pilot', 'Breast atlas']);
      assert.equal(await picker.inputValue(), cirroEnv.CIRRO_PROJECT_ID);
      assert.match(await box(page).locator('.sds-cirro-status').innerText(), /^Its parent chain is in Cirro\. It sends \d+ files \(.+\) as the dataset “Margins reviewed”\.$/);
      assert.deepEqual(await axeViolations(page, '.sds-panel .sds-app'), [], 'the upload box, light');
      await shot(page, 'issue41-upload-box');
      await sizePanel(page, 420);
      assert.equal(await box(page).evaluate(el => el.scrollWidth <= el.clientWidth + 1), true, 'the box fits 420 px');
      await shot(page, 'issue41-upload-box-420');
      await page.setViewportSize({ width: 1400, height: 900 });
      await box(page).locator('.sds-cirro-go').click();
      await box(page).locator('.sds-cirro-done').waitFor({ timeout: 120000 });
      const record = JSON.parse(readFileSync(join(home, 'sds-versions', '.sds-uploaded', `${firstId}.json`), 'utf8'));
      assert.equal(await box(page).locator('.sds-cirro-done').innerText(), `Uploaded: now Cirro dataset ${record.dataset_id}.`);
      // the tag goes from the uploaded version; the top keeps it until it goes up too
      await page.waitForFunction(() => document.querySelectorAll('.sds-panel .sds-tree-tag-local').length === 1, null, { timeout: 60000 });
      await page.locator('.sds-panel .sds-history-row', { hasText: 'Tumour border' }).click();
      await upload.click();
      await box(page).locator('.sds-cirro-go').click();
      await box(page).locator('.sds-cirro-done').waitFor({ timeout: 120000 });
      await page.waitForFunction(() => document.querySelectorAll('.sds-panel .sds-tree-tag-local').length === 0, null, { timeout: 60000 });
      assert.equal(await upload.isHidden(), true);
      await shot(page, 'issue41-uploaded');
      assert.deepEqual(page.errors, []);
      const secondCirro = JSON.parse(readFileSync(join(home, 'sds-versions', '.sds-uploaded', `${secondId}.json`), 'utf8')).dataset_id;

      // a fresh folder holding only the top, as a colleague downloads it: its parent is fetched from Cirro (dark theme)
      standin.stdin.write(`${JSON.stringify({ download: secondCirro, to: join(home, 'fresh', secondCirro) })}\n`);
      await waitFor(l => l === 'ok', 'download');
      await setSetting('@jupyterlab/apputils-extension:themes', { theme: 'JupyterLab Dark' });
      try {
        const dark = await open('fresh', secondCirro);
        await dark.waitForFunction(() => document.body.dataset.jpThemeLight === 'false', null, { timeout: 30000 });
        await dark.waitForSelector('.sds-panel .sds-missing-row:not([hidden])', { timeout: 60000 });
        assert.match(await dark.locator('.sds-panel .sds-missing-row').innerText(), new RegExp(`^Dataset ${record.dataset_id} below these versions is missing`));
        await dark.locator('.sds-panel .sds-fetch-missing').click();
        const fetchPicker = box(dark).locator('select.sds-cirro-project');
        await fetchPicker.waitFor({ timeout: 60000 });
        assert.equal(await box(dark).locator('h3').innerText(), `Fetch ${record.dataset_id} from Cirro`);
        assert.deepEqual(await axeViolations(dark, '.sds-panel .sds-app'), [], 'the fetch box, dark');
        await shot(dark, 'issue41-fetch-box-dark');
        await sizePanel(dark, 420);
        await shot(dark, 'issue41-fetch-box-420-dark');
        await dark.setViewportSize({ width: 1400, height: 900 });
        await box(dark).locator('.sds-cirro-go').click();
        await box(dark).locator('.sds-cirro-done').waitFor({ timeout: 120000 });
        assert.equal(await box(dark).locator('.sds-cirro-done').innerText(), 'Fetched 1 dataset; the version reads whole now.');
        // the version opens whole: no missing row, its chain down to the base, named by the folder map
        await dark.waitForSelector('.sds-panel .sds-missing-row[hidden]', { state: 'attached', timeout: 60000 });
        await dark.waitForFunction(() => /over Blobs section$/.test(document.querySelector('.sds-panel .sds-title-sub')?.textContent ?? ''), null, { timeout: 60000 });
        assert.deepEqual((await dark.locator('.sds-panel .sds-history-row .sds-row-title').allInnerTexts()).slice(0, 2), ['Tumour border', 'Margins reviewed']);
        assert.ok(existsSync(join(home, 'cirro-cache', record.dataset_id)), 'fetched into the fetch folder');
        assert.deepEqual(await axeViolations(dark, '.sds-panel .sds-app'), [], 'fetched, dark');
        await shot(dark, 'issue41-fetched-dark');
        assert.deepEqual(dark.errors, []);
        // item 4: "Margins reviewed" downloaded by hand, by its Cirro ID, outside the folder map: only Cirro can
        // tell it from a version saved here, so it is tagged until the box asks; then it is said to be a copy,
        // no upload is offered, and the tag goes
        standin.stdin.write(`${JSON.stringify({ download: record.dataset_id, to: join(home, 'copy', record.dataset_id) })}\n`);
        await waitFor(l => l === 'ok', 'download');
        const copy = await open('copy', record.dataset_id);
        await copy.waitForFunction(() => document.body.dataset.jpThemeLight === 'false', null, { timeout: 30000 });
        await copy.waitForSelector('.sds-panel .sds-tree-row.sds-tree-current .sds-tree-tag-local', { timeout: 60000 });
        await copy.locator('.sds-panel .sds-upload-cirro').click();
        await box(copy).locator('.sds-cirro-status', { hasText: 'is in Cirro already' }).waitFor({ timeout: 60000 });
        assert.equal(await box(copy).locator('.sds-cirro-status').innerText(), `“Margins reviewed” is in Cirro already: this folder is a copy of Cirro dataset ${record.dataset_id}; nothing to upload (a version saved on it can be uploaded)`);
        assert.equal(await box(copy).locator('select, .sds-cirro-go, .sds-error').count(), 0, 'no project, no upload offered');
        await copy.waitForFunction(() => !document.querySelector('.sds-panel .sds-tree-row.sds-tree-current .sds-tree-tag-local'), null, { timeout: 60000 });
        assert.equal(await copy.locator('.sds-panel .sds-upload-cirro').isHidden(), true);
        assert.deepEqual(await axeViolations(copy, '.sds-panel .sds-app'), [], 'a copy of a Cirro dataset, dark');
        await shot(copy, 'issue41-copy-of-cirro-dark');
        await sizePanel(copy, 420);
        assert.equal(await box(copy).evaluate(el => el.scrollWidth <= el.clientWidth + 1), true, 'the box fits 420 px');
        await shot(copy, 'issue41-copy-of-cirro-420-dark');
        assert.deepEqual(copy.errors, []);
      } finally {
        await setSetting('@jupyterlab/apputils-extension:themes', { theme: 'JupyterLab Light' });
      }
    } finally {
      for (const p of pages) await p.close();
      if (lab.exitCode === null) {
        lab.kill('SIGTERM');
        await new Promise(r => lab.once('exit', r));
      }
      standin.stdin.end();
      if (standin.exitCode === null) await new Promise(r => standin.once('exit', r));
    }
  });

  it('version folders are marked in the file browser from one request per listing', async () => {
    const page = await newPage();
    const asked = [];
    page.on('request', r => asked.push(new URL(r.url()).pathname));
    await openListing(page);
    await page.waitForSelector('.jp-DirListing-item.sds-version-item', { timeout: 30000 });
    const name = top.split('/').pop();
    assert.match(await item(page, name).getAttribute('title'), /^Version: .+\n/);
    assert.equal(await item(page, baseFolder).evaluate(el => el.classList.contains('sds-version-item')), false);
    assert.ok((await page.locator('.jp-DirListing-item.sds-version-item').count()) >= 5);
    // no per-folder lookups: the listing's versions come in one request
    assert.deepEqual(asked.filter(p => p.includes('/api/contents/datasets/')), []);
    assert.ok(asked.filter(p => p.endsWith('/sds-jupyter/api/versions')).length <= 3, asked.join('\n'));
    await page.locator('.jp-DirListing').screenshot({ path: join(SHOTS, 'file-browser-versions.png') });
    await item(page, baseFolder).click({ button: 'right' });
    assert.ok(!(await page.locator('.lm-Menu-itemLabel').allInnerTexts()).includes('Open version'));
    await page.keyboard.press('Escape');
    await item(page, name).click({ button: 'right' });
    assert.ok((await page.locator('.lm-Menu-itemLabel').allInnerTexts()).includes('Open version'));
    await page.keyboard.press('Escape');
    await page.close();
  });

  it('a panel open in JupyterLab shows the version a notebook saves, as soon as its tab is chosen', async () => {
    await putNotebook('save-to-panel.ipynb', [
      `%load_ext sds_jupyter\n%sds_open ${JSON.stringify(top)}`,
      `adata.obs["panel_annotation"] = ["kept" if i % 3 else "flagged" for i in range(adata.n_obs)]\n%sds_save "Panel annotation" --message "saved from a notebook while the panel was open"`
    ]);
    const page = await newPage();
    await openListing(page);
    await item(page, top.split('/').pop()).dblclick();
    await page.waitForSelector('.sds-tree-row', { timeout: 30000 });
    const panelTab = (await currentTab(page).innerText()).trim();
    assert.equal(await page.locator('.sds-new-versions').isHidden(), true);
    // the notebook opens in a tab beside the panel (same page, no reload)
    const output = await openAndSave(page, 'save-to-panel.ipynb', 'FAILED-save-to-panel');
    assert.doesNotMatch(await output(), /rror/);
    // back to the panel: the new version shows (that it asks at once, before the next tick,
    // is livepoller.test.ts's job with the clock frozen; a wall clock here would only be flaky)
    await page.locator('.lm-DockPanel .lm-TabBar-tab', { hasText: panelTab }).first().click();
    await page.waitForSelector('.sds-panel .sds-new-versions:not([hidden])', { timeout: 30000 });
    assert.equal(await page.locator('.sds-panel .sds-new-versions').innerText(), '1 new version');
    const fresh = page.locator('.sds-panel .sds-tree-row', { hasText: 'Panel annotation' });
    assert.equal(await fresh.evaluate(r => r.classList.contains('sds-tree-newer')), true);
    assert.deepEqual(await axeViolations(page, '.sds-panel .sds-app'), [], 'the panel with a new version');
    await shot(page, 'save-to-panel-new');
    // open it: (issue 29 item 2) the header, the selection in the history and in the tree, Changes
    // and Compare all name the new version at once, with no click on its row
    await page.locator('.sds-panel .sds-new-versions').click();
    await page.waitForFunction(() => document.querySelector('.sds-panel .sds-history-row .sds-row-title')?.textContent === 'Panel annotation', null, { timeout: 30000 });
    await page.waitForFunction(() => document.querySelector('.sds-panel .sds-history-row.sds-selected .sds-row-title')?.textContent === 'Panel annotation', null, { timeout: 30000 });
    assert.equal(await page.locator('.sds-panel .sds-title-text').innerText(), 'Panel annotation');
    assert.match(await page.locator('.sds-panel .sds-tree-row.sds-tree-selected').innerText(), /Panel annotation/);
    await page.locator('.sds-panel .sds-tab[data-tab="changes"]').click();
    await page.waitForFunction(() => /panel_annotation/.test(document.querySelector('.sds-panel .sds-changes')?.textContent ?? ''), null, { timeout: 30000 });
    const sentences = await page.locator('.sds-panel .sds-changes > .sds-ops > li').allInnerTexts();
    assert.ok(sentences.some(t => /^Set obs panel_annotation \(categorical|^Set obs panel_annotation \(string/.test(t)), sentences.join(' | '));
    assert.deepEqual(await axeViolations(page, '.sds-panel .sds-app'), [], 'Changes of the saved version');
    await shot(page, 'save-to-panel-changes');
    await page.locator('.sds-panel .sds-tab[data-tab="compare"]').click();
    await page.waitForFunction(() => /panel_annotation/.test(document.querySelector('.sds-panel .sds-delta-obs')?.textContent ?? ''), null, { timeout: 30000 });
    assert.match(await page.locator('.sds-panel .sds-headline').innerText(), /panel_annotation/);
    assert.deepEqual(await axeViolations(page, '.sds-panel .sds-app'), [], 'Compare of the saved version');
    await shot(page, 'save-to-panel-compare');
    await sizePanel(page, 420);
    assert.match(await page.locator('.sds-panel .sds-headline').innerText(), /panel_annotation/);
    await shot(page, 'save-to-panel-compare-420');
    assert.deepEqual(page.errors, []);
    // dark (the theme switched in place, from the Settings menu): the same version in header and selection
    await page.setViewportSize({ width: 1400, height: 900 });
    try {
      await useTheme(page, 'JupyterLab Dark');
      assert.equal(await page.locator('.sds-panel .sds-title-text').innerText(), 'Panel annotation');
      assert.equal(await page.locator('.sds-panel .sds-history-row.sds-selected .sds-row-title').innerText(), 'Panel annotation');
      await page.locator('.sds-panel .sds-tab[data-tab="changes"]').click();
      await page.waitForFunction(() => /panel_annotation/.test(document.querySelector('.sds-panel .sds-changes')?.textContent ?? ''), null, { timeout: 30000 });
      assert.deepEqual(await axeViolations(page, '.sds-panel .sds-app'), [], 'Changes of the saved version, dark');
      await shot(page, 'save-to-panel-changes-dark');
    } finally {
      await setSetting('@jupyterlab/apputils-extension:themes', { theme: 'JupyterLab Light' });
    }
    await page.close();
  });
});
