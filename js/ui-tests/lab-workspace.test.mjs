// UI flows of the workspace in a real JupyterLab: the tree written live by Python, datasets mounted
// read-only with saves in a versions folder, and Upload to Cirro and fetching back from it. The
// groups run side by side, each on its own server (package.json's test:ui); the shared set-up and
// steps are in harness.mjs.

import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  PYTHON,
  TOKEN,
  axeViolations,
  currentTab,
  freePort,
  item,
  newPage,
  openAndSave,
  openListing,
  python,
  repo,
  setSetting,
  shot,
  sizePanel,
  skip,
  startLab,
  stopLab,
  top,
  work
} from './harness.mjs';

describe('JupyterLab version browser: the tree written live, a read-only workspace and Cirro', { skip, timeout: 1800000 }, () => {
  before(startLab);
  after(stopLab);

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
});
