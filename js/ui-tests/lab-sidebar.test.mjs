// UI flows around the panel in a real JupyterLab and Notebook 7, continued from lab-notebooks.test.mjs
// on a server of its own (the groups run side by side): the Versions sidebar, the history and tree
// in both themes and narrow, Notebook 7, annotation and the embedding, and the issue 29 and 41
// flows. The shared set-up and steps are in harness.mjs.

import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
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
  checkAxe,
  crumbs,
  dragSidebarTo,
  inThemes,
  inViewCount,
  item,
  layoutSaved,
  narrowTo,
  newPage,
  notebookReady,
  openListing,
  pollIntervals,
  putNotebook,
  python,
  runCell,
  settled,
  shot,
  sizePanel,
  skip,
  startLab,
  stopLab,
  top,
  until,
  wearsTheme,
  work
} from './harness.mjs';
/**
 * Rows of `list` (a selector) shown whole: inside the list's box, its section's, the side's and the
 * panel's. What a narrow panel gives the tree and the history, measured rather than read from the style.
 */
const rowsShown = (page, list, row) =>
  page.locator(list).first().evaluate((el, row) => {
    const boxes = [el, el.closest('.sds-tree-section'), el.closest('.sds-side'), el.closest('.sds-panel')].filter(Boolean).map(b => b.getBoundingClientRect());
    const [top, bottom] = [Math.max(...boxes.map(b => b.top)), Math.min(...boxes.map(b => b.bottom))];
    return [...el.querySelectorAll(row)].filter(r => {
      const b = r.getBoundingClientRect();
      return b.height > 0 && b.top >= top - 1 && b.bottom <= bottom + 1;
    }).length;
  }, row);

/**
 * A 420 px panel with the versions side open (the flows' stack: five versions and a base): the tree
 * shows two rows whole and the history at least one beside the views' first screen in the flows'
 * 900 px window, and four in a 1,200 px one (the side grows with a tall panel). Shot at both heights.
 */
async function narrowSideReads(page, name) {
  const treeRows = () => until(() => rowsShown(page, '.sds-tree', '.sds-tree-row'), n => n >= 2, 'two tree rows whole at 420 px');
  const historyRows = least => until(() => rowsShown(page, '.sds-history', '.sds-history-row'), n => n >= least, `${least} history rows whole at 420 px`);
  const width = await page.locator('.sds-panel:visible').first().evaluate(el => Math.round(el.getBoundingClientRect().width));
  assert.equal(width, 420);
  await settled(page);
  await shot(page, name);
  const shown = { tree: await treeRows(), history: await historyRows(1) };
  const viewport = page.viewportSize();
  await page.setViewportSize({ width: viewport.width, height: 1200 });
  await settled(page);
  await shot(page, `${name}-tall`);
  const tall = { tree: await treeRows(), history: await historyRows(4) };
  await page.setViewportSize(viewport);
  await settled(page);
  return { shown, tall };
}

describe('JupyterLab version browser: the sidebar, Notebook 7, annotation and the embedding', { skip, timeout: 1800000 }, () => {
  before(startLab);
  after(stopLab);

  it('issue 29: the Versions sidebar lists the folder by title, by base, newest first; search; Enter and double-click open', async () => {
    const SIDEBAR = '#sds-versions-sidebar';
    const tab = page => page.locator('.jp-SideBar .lm-TabBar-tab[data-id="sds-versions-sidebar"]');
    const rows = page => page.locator(`${SIDEBAR} .sds-tree-row`);
    const status = page => page.locator(`${SIDEBAR} .sds-sidebar-status`);
    const showSidebar = async page => {
      await tab(page).click();
      await page.waitForFunction(s => document.querySelectorAll(`${s} .sds-tree-row`).length >= 5, SIDEBAR, { timeout: 60000 });
      await settled(page);
    };
    // its own copy of the small demo: earlier flows add versions (and branch tops) to the shared one
    const own = spawnSync(PYTHON, ['-m', 'sds_jupyter', 'demo', '--small', join(work, 'root', 'sidebar')], { encoding: 'utf8' });
    assert.equal(own.status, 0, own.stderr);
    const ownTop = own.stdout.trim().split('\n').pop().slice(join(work, 'root').length + 1);
    const page = await newPage();
    await openListing(page, 'sidebar/datasets');
    await showSidebar(page);
    try {
      assert.equal(await page.locator(`${SIDEBAR} .sds-sidebar-where`).innerText(), 'in sidebar/datasets');
      // by title, never a bare ID: every demo version has one
      const titles = await rows(page).locator('.sds-tree-title').allInnerTexts();
      for (const t of titles) assert.doesNotMatch(t, /^[0-9a-f]{8}-[0-9a-f-]{27}$/, `a bare ID: ${titles.join(', ')}`);
      assert.ok(titles.includes('Coarser clusters'), titles.join(', '));
      // one base in the demo: one group, newest first, the top of each line marked (the top and the branch)
      assert.equal(await page.locator(`${SIDEBAR} .sds-sidebar-group`).count(), 1);
      const times = await rows(page).locator('time').evaluateAll(ts => ts.map(t => t.getAttribute('datetime')));
      assert.equal(times[0], [...times].sort().pop(), `newest first: ${times.join(', ')}`);
      const tops = await page.locator(`${SIDEBAR} .sds-tree-row.sds-tree-top .sds-tree-title`).allInnerTexts();
      const history = await (await api(`/sds-jupyter/api/history?path=${encodeURIComponent(ownTop)}`)).json();
      assert.deepEqual(new Set(tops), new Set([history.versions[0].title, 'Coarser clusters']));
      assert.deepEqual(await axeViolations(page, SIDEBAR), [], 'the sidebar, light');
      await shot(page, 'sidebar-versions-light');
      // search: a column (the branch's too), an op only one version did; then nothing
      const box = page.locator(`${SIDEBAR} .sds-sidebar-search`);
      await box.fill('column:clusters');
      await page.waitForFunction(s => document.querySelectorAll(`${s} .sds-tree-row`).length === 2, SIDEBAR);
      assert.deepEqual(new Set(await rows(page).locator('.sds-tree-title').allInnerTexts()), new Set(['Coarser clusters', 'Leiden clusters']));
      await box.fill('op:delete-obs');
      await page.waitForFunction(s => document.querySelectorAll(`${s} .sds-tree-row`).length === 1, SIDEBAR);
      assert.equal(await rows(page).first().locator('.sds-tree-title').innerText(), 'Redrawn regions');
      await box.fill('nothing-like-this');
      await page.waitForFunction(s => document.querySelectorAll(`${s} .sds-tree-row`).length === 0, SIDEBAR);
      assert.equal(await status(page).innerText(), 'No matches for “nothing-like-this”');
      await shot(page, 'sidebar-versions-no-matches');
      await box.fill('');
      await page.waitForFunction(s => document.querySelectorAll(`${s} .sds-tree-row`).length >= 5, SIDEBAR);
      // a single click only moves to a row; Enter opens it in its panel, by its title
      await rows(page).nth(1).click();
      // the click has landed (its row is the active one: an open on click would start in that same
      // handler) and whatever it set off has been answered and drawn
      await page.waitForFunction(s => document.querySelectorAll(`${s} .sds-tree-row`)[1]?.getAttribute('aria-selected') === 'true', SIDEBAR, { timeout: 30000 });
      await settled(page);
      assert.equal(await page.locator('.sds-panel').count(), 0, 'a click opens nothing');
      const second = await rows(page).nth(1).locator('.sds-tree-title').innerText();
      await page.keyboard.press('Enter');
      await page.waitForSelector('.sds-panel .sds-history-row', { timeout: 30000 });
      await page.waitForFunction(t => document.querySelector('.lm-DockPanel .lm-TabBar-tab.lm-mod-current')?.textContent?.includes(t), second, { timeout: 30000 });
      // a double-click opens the branch in a tab of its own
      await rows(page).filter({ hasText: 'Coarser clusters' }).dblclick();
      await page.waitForFunction(() => document.querySelector('.lm-DockPanel .lm-TabBar-tab.lm-mod-current')?.textContent?.includes('Coarser clusters'), null, { timeout: 30000 });
      assert.equal(await page.locator('.lm-DockPanel .lm-TabBar-tab', { hasText: second }).count(), 1);
      // 420 px wide: the handle between the sidebar and the main area dragged; nothing scrolls sideways
      await dragSidebarTo(page, 420, SIDEBAR);
      const overflow = await page.evaluate(s =>
        [document.querySelector(s), ...document.querySelectorAll(`${s} .sds-sidebar, ${s} .sds-tree`)]
          .filter(el => el.scrollWidth > el.clientWidth + 1)
          .map(el => `${el.className} ${el.scrollWidth}>${el.clientWidth}`), SIDEBAR);
      assert.deepEqual(overflow, [], 'nothing scrolls sideways at 420 px');
      await shot(page, 'sidebar-versions-420');
      // it follows the file browser: the server root holds no versions
      await page.locator('.jp-SideBar .lm-TabBar-tab[data-id="filebrowser"]').click();
      await page.locator('.jp-BreadCrumbs-home').click();
      await page.waitForFunction(() => document.querySelector('.jp-BreadCrumbs')?.textContent?.replace(/\s+/g, '') === '/');
      await tab(page).click();
      // the tab's click has shown the sidebar (a failure here is the click, not the sidebar's reading)
      await page.locator(SIDEBAR).waitFor({ state: 'visible', timeout: 30000 });
      // (read until it says so: a failure names what it said instead)
      try {
        await until(() => page.locator(`${SIDEBAR} .sds-sidebar-status`).textContent(), t => t === 'No versions in this folder.', 'the sidebar says the server root holds no versions', 60000);
      } catch (err) {
        await shot(page, 'sidebar-root-failed');
        const seen = await page.evaluate(s => ({ where: document.querySelector(`${s} .sds-sidebar-where`)?.textContent, shown: !!document.querySelector(s)?.checkVisibility?.(), crumbs: document.querySelector('.jp-BreadCrumbs')?.textContent }), SIDEBAR);
        throw new Error(`${err.message}; the sidebar ${JSON.stringify(seen)}`, { cause: err });
      }
      assert.equal(await page.locator(`${SIDEBAR} .sds-sidebar-where`).innerText(), 'in the server root');
      assert.deepEqual(page.errors, []);
    } finally {
      await page.close();
    }
    await inThemes(['dark'], async dark => {
      await openListing(dark, 'sidebar/datasets');
      await showSidebar(dark);
      await wearsTheme(dark);
      assert.deepEqual(await axeViolations(dark, SIDEBAR), [], 'the sidebar, dark');
      await shot(dark, 'sidebar-versions-dark');
      assert.deepEqual(dark.errors, []);
    });
  });

  it('the history and tree pass axe in the light and dark themes, and read in a narrow panel', async () => {
    const open = async page => {
      await openListing(page);
      await item(page, top.split('/').pop()).dblclick();
      await page.waitForSelector('.sds-tree-row', { timeout: 30000 });
      await wearsTheme(page);
    };
    const page = await newPage();
    await open(page);
    assert.deepEqual(await axeViolations(page, '.sds-side'), []);
    await shot(page, 'panel-tree-light');
    // issue 29 item 6: one clock: each version's relative time reads the same in the tree and the history
    const when = await page.evaluate(() => {
      const tree = Object.fromEntries([...document.querySelectorAll('.sds-tree-row')].map(r => [r.querySelector('.sds-tree-title')?.textContent, r.querySelector('time')?.textContent]));
      return [...document.querySelectorAll('.sds-history-row:not(.sds-base-row)')].map(r => [r.querySelector('.sds-row-title')?.textContent, r.querySelector('time')?.textContent, tree[r.querySelector('.sds-row-title')?.textContent]]);
    });
    assert.ok(when.length >= 3, JSON.stringify(when));
    for (const [title, history, tree] of when) assert.equal(tree, history, `${title}: tree ${tree}, history ${history}`);
    // the version selected in the history is marked in the tree
    const older = page.locator('.sds-history-row[data-depth="1"]');
    const olderTitle = await older.locator('.sds-row-title').innerText();
    await older.click();
    await page.waitForFunction(t => document.querySelector('.sds-tree-row.sds-tree-selected .sds-tree-title')?.textContent === t, olderTitle, { timeout: 10000 });
    assert.equal(await page.locator('.sds-tree-row.sds-tree-selected').count(), 1);
    // at 420 px the tree and the history split the side (narrowSideReads: what each shows, at two window heights)
    await sizePanel(page, 420);
    await narrowSideReads(page, 'panel-tree-420-split');
    await page.setViewportSize({ width: 1400, height: 900 });
    await settled(page);
    // taller than five rows, and the user drags it taller (its corner)
    const tree = page.locator('.sds-tree');
    const treeRowsFit = await tree.evaluate(el => Math.floor(el.clientHeight / el.querySelector('.sds-tree-row').getBoundingClientRect().height));
    const rowsThere = await page.locator('.sds-tree-row').count();
    assert.ok(treeRowsFit >= Math.min(rowsThere, 10), `${treeRowsFit} of ${rowsThere} rows shown`);
    const dragTreeBy = async dy => {
      const box = await tree.boundingBox();
      await page.mouse.move(box.x + box.width - 3, box.y + box.height - 3);
      await page.mouse.down();
      await page.mouse.move(box.x + box.width - 3, box.y + box.height + dy, { steps: 6 });
      await page.mouse.up();
      return box;
    };
    const tb = await dragTreeBy(120);
    await until(async () => (await tree.boundingBox()).height, h => h > tb.height + 60, `the tree dragged taller than ${tb.height} px`);
    // dragged far past the window's foot, the tree stops where the history keeps its rows: wide, then at 420 px (below)
    await dragTreeBy(1500);
    await settled(page);
    // the history keeps two rows of its 72 px (a row whole however it is scrolled), and the tree stays taller than before
    const historyKept = async () => {
      await until(async () => (await page.locator('.sds-history').first().boundingBox()).height, h => h >= 143, 'the history two 72 px rows tall below a tree dragged tall');
      await until(() => rowsShown(page, '.sds-history', '.sds-history-row'), n => n >= 1, 'a history row whole below a tree dragged tall');
    };
    await historyKept();
    assert.ok((await tree.boundingBox()).height > tb.height + 60, 'the tree kept its drag');
    await sizePanel(page, 420);
    // a narrow panel's side is short: the tree keeps two rows whole, the history a row whole
    await until(() => rowsShown(page, '.sds-tree', '.sds-tree-row'), n => n >= 2, 'two tree rows whole, dragged tall at 420 px');
    await until(() => rowsShown(page, '.sds-history', '.sds-history-row'), n => n >= 1, 'a history row whole below a tree dragged tall at 420 px');
    await shot(page, 'panel-tree-dragged-tall-420');
    await page.setViewportSize({ width: 1400, height: 900 });
    await settled(page);
    // search matches the branch by a column it set, and says when nothing matches
    await page.locator('.sds-search').fill('column:clusters');
    await page.waitForFunction(() => [...document.querySelectorAll('.sds-tree-row .sds-tree-title')].some(t => t.textContent === 'Coarser clusters'), null, { timeout: 10000 });
    await shot(page, 'issue29-tree-search-column');
    await page.locator('.sds-search').fill('nothing-like-this');
    await page.waitForSelector('.sds-no-matches:not([hidden])', { timeout: 10000 });
    assert.equal(await page.locator('.sds-no-matches').innerText(), 'No matches for “nothing-like-this”');
    assert.equal(await page.locator('.sds-tree-row').count(), 0);
    await shot(page, 'issue29-tree-no-matches');
    await page.locator('.sds-search').fill('');
    await sizePanel(page, 420);
    await shot(page, 'panel-tree-420');
    await page.close();
    await inThemes(['dark'], async dark => {
      await open(dark);
      assert.deepEqual(await axeViolations(dark, '.sds-side'), []);
      await shot(dark, 'panel-tree-dark');
      await sizePanel(dark, 420);
      await narrowSideReads(dark, 'panel-tree-420-split-dark');
      assert.deepEqual(await axeViolations(dark, '.sds-side'), []);
    });
  });

  describe('Jupyter Notebook 7', () => {
    // The server the JupyterLab flows start serves Notebook 7's pages too (/tree, /notebooks):
    // the notebook package is installed, so its server extension is on. These flows drive
    // Notebook 7's own front end, which loads the same prebuilt extensions.
    const treeTab = page => page.locator('.jp-TreePanel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel').first();
    // Notebook 7.6 (with JupyterLab 4.6) throws these itself, from its own bundle
    // (notebook_core.js): its keyboard-shortcut plugin reads `plugins[id].schema` of a
    // plugin the setting registry reloaded and emitted before it was there (the settings
    // of application-extension:shell, codemirror-extension:plugin and notebook-extension:panel
    // are fetched one by one on every page), an open upstream race (jupyter/notebook#7862);
    // its file browser's restore runs filebrowser:open-path on a notebook page that has no
    // such command. Both come with this extension disabled too. Anything else fails the flow.
    const NOTEBOOK_OWN = [
      "Cannot read properties of undefined (reading 'schema')",
      "Command 'filebrowser:open-path' not registered."
    ];
    const ours = page => page.errors.filter(e => !NOTEBOOK_OWN.includes(e));

    async function openTree(page, folder = 'datasets') {
      await page.goto(`${base}/tree/${folder}?token=${TOKEN}`);
      await page.waitForSelector('.jp-DirListing-item', { timeout: 60000 });
      await page.waitForSelector('.jp-DirListing-item[data-sds-version="true"]', { timeout: 30000 });
    }

    it('a click on a version opens the browser as a tab of the tree page; a folder still opens', async () => {
      // Notebook 7 navigates on a single click (its settings turn singleClickNavigation on),
      // so a click opens a version there, as it enters a folder
      const page = await newPage();
      await openTree(page);
      await item(page, baseFolder).click();
      await page.waitForFunction(f => document.querySelector('.jp-BreadCrumbs')?.textContent?.includes(f), baseFolder);
      await openTree(page);
      // issue 29 item 1 here too: each version's title drawn before its folder name
      const titled = page.locator('.jp-DirListing-item[data-sds-version="true"] .jp-DirListing-itemText[data-sds-title]');
      assert.ok((await titled.count()) >= 2, `${await titled.count()} titled versions`);
      const [label, said] = await titled.first().evaluate(el => [getComputedStyle(el, '::before').content, el.dataset.sdsTitle]);
      assert.equal(label, JSON.stringify(`${said} · `));
      await page.locator('.jp-DirListing').screenshot({ path: join(SHOTS, 'notebook7-file-browser-titles.png') });
      await item(page, top.split('/').pop()).click();
      try {
        await page.waitForSelector('.jp-TreePanel .sds-history-row', { timeout: 30000 });
      } catch (error) {
        await shot(page, 'FAILED-notebook7-tree');
        throw error;
      }
      const title = await page.locator('.sds-history-row').first().locator('.sds-row-title').innerText();
      assert.ok((await treeTab(page).innerText()).includes(title), `tab ${await treeTab(page).innerText()}`);
      const tabs = await page.locator('.jp-TreePanel .lm-TabBar-tabLabel').allInnerTexts();
      assert.ok(tabs.includes('Files'), tabs.join(', '));
      assert.ok((await page.locator('.sds-history-row').count()) >= 3);
      await page.waitForSelector('.sds-tree-row', { timeout: 30000 });
      await checkAxe(page, 'Notebook 7 tree page');
      await shot(page, 'notebook7-tree-panel');
      // the Files tab is one click away and the listing still there; the panel comes back
      await page.locator('.jp-TreePanel .lm-TabBar-tab', { hasText: 'Files' }).click();
      await page.waitForSelector('.jp-DirListing-item:visible');
      assert.equal(await crumbs(page), '/datasets/');
      // a double-click opens it too (its second click lands in the panel); still one tab
      await item(page, top.split('/').pop()).dblclick();
      await page.waitForSelector('.sds-history-row:visible');
      assert.equal(await page.locator('.jp-TreePanel .lm-TabBar-tab', { hasText: title }).count(), 1);
      await narrowTo(page, 640);
      await shot(page, 'notebook7-tree-panel-narrow');
      // issue 29 item 3 here too: a branch opened from the tree keeps a Back; the header names it
      await page.setViewportSize({ width: 1400, height: 900 });
      await page.locator('.sds-panel:visible .sds-tree-row', { hasText: 'Coarser clusters' }).click();
      await page.locator('.sds-panel:visible .sds-back:not([hidden])').waitFor({ timeout: 30000 });
      assert.equal(await page.locator('.sds-panel:visible .sds-back').innerText(), `← Back to ${title}`);
      await page.locator('.sds-panel:visible .sds-title-text').filter({ hasText: 'Coarser clusters' }).waitFor({ timeout: 30000 });
      await narrowTo(page, 420);
      await shot(page, 'notebook7-back-420');
      // item 4 here too: a corrupt layer.json is marked in the file browser, with the reason
      nav29bDemo();
      await openTree(page, 'nav29b/datasets');
      const corrupt = item(page, 'corrupt-version');
      await page.waitForSelector('.jp-DirListing-item.sds-version-broken', { timeout: 30000 });
      assert.match(await corrupt.getAttribute('title'), /^Not readable as a version: layer\.json is not valid JSON/);
      await page.locator('.jp-DirListing').screenshot({ path: join(SHOTS, 'notebook7-file-browser-420.png') });
      assert.deepEqual(ours(page), []);
      await page.close();
      await inThemes(['dark'], async dark => {
        await openTree(dark);
        await item(dark, top.split('/').pop()).click();
        await dark.waitForSelector('.sds-tree-row', { timeout: 30000 });
        await wearsTheme(dark);
        await checkAxe(dark, 'Notebook 7 tree page, dark');
        await shot(dark, 'notebook7-tree-panel-dark');
        await openTree(dark, 'nav29b/datasets');
        await dark.waitForSelector('.jp-DirListing-item.sds-version-broken', { timeout: 30000 });
        await settled(dark);
        await dark.locator('.jp-DirListing').screenshot({ path: join(SHOTS, 'notebook7-file-browser-dark.png') });
      });
    });

    it('in a Notebook 7 notebook the widget draws, binds an AnnData and shows a saved version', async () => {
      await putNotebook('notebook7.ipynb', [
        `%load_ext sds_jupyter\n%sds_open ${JSON.stringify(top)}`,
        `adata.obs["nb7_annotation"] = ["a" if i % 2 else "b" for i in range(adata.n_obs)]\n%sds_save "Notebook 7 annotation"`
      ]);
      const page = await newPage();
      await page.goto(`${base}/notebooks/notebook7.ipynb?token=${TOKEN}`);
      await notebookReady(page);
      try {
        await runCell(page, 0);
        await page.waitForSelector('.jp-OutputArea .sds-history-row', { timeout: 120000 });
      } catch (error) {
        await shot(page, 'FAILED-notebook7-widget');
        throw error;
      }
      assert.match(await page.locator('.jp-Cell').first().locator('.jp-OutputArea-output pre').first().innerText(), /^`adata` is the AnnData of v\d+ /);
      await page.locator('.jp-OutputArea [data-action="open-adata"]').click();
      await page.waitForFunction(() => /cells ×|rror/.test(document.querySelector('.sds-action-msg')?.textContent ?? ''), null, { timeout: 60000 });
      assert.match(await page.locator('.sds-action-msg').innerText(), /cells ×/);
      await checkAxe(page, 'the widget in Notebook 7');
      await shot(page, 'notebook7-widget');
      await runCell(page, 1);
      await page.waitForFunction(() => /Saved `adata` as v\d+|rror/.test(document.querySelectorAll('.jp-Cell')[1]?.querySelector('.jp-OutputArea')?.textContent ?? ''), null, { timeout: 120000 });
      // textContent: Notebook 7 may not render an output scrolled out of view (innerText is empty then)
      assert.match(await page.locator('.jp-Cell').nth(1).locator('.jp-OutputArea').textContent(), /Saved `adata` as v\d+ “Notebook 7 annotation” \(1 set-obs\)/);
      await page.waitForFunction(() => /Notebook 7 annotation/.test(document.querySelector('.jp-OutputArea .sds-history-row.sds-selected')?.textContent ?? ''), null, { timeout: 60000 });
      await page.locator('.jp-OutputArea .sds-tab[data-tab="changes"]').click();
      await page.waitForFunction(() => /nb7_annotation/.test(document.querySelector('.jp-OutputArea .sds-panels')?.textContent ?? ''), null, { timeout: 60000 });
      await checkAxe(page, 'the widget in Notebook 7 after a save');
      await shot(page, 'notebook7-widget-saved');
      assert.deepEqual(ours(page), []);
      await page.close();
    });
  });

  it('issue 27: draw two regions, save them as my_regions, the new version has the counts', async () => {
    const page = await newPage();
    await openListing(page);
    await item(page, top.split('/').pop()).dblclick();
    await page.waitForSelector('.sds-history-row');
    await page.locator('.sds-tab[data-tab="figures"]').click();
    await page.waitForSelector('.sds-deck-stage[data-live="true"]', { timeout: 30000 });
    const figure = page.locator('.sds-spatial[data-renderer="webgl"]').first();
    await figure.locator('.sds-annotate-toggle').click();
    const overlay = figure.locator('.sds-annotate-overlay');
    // a rectangle dragged over the left half, then a polygon clicked around the middle (drawn last: it wins);
    // the drawing is measured once the tool is chosen (choosing it may scroll the panel)
    await figure.locator('.sds-tool-rectangle').click();
    await overlay.scrollIntoViewIfNeeded();
    const box = await overlay.boundingBox();
    await page.mouse.move(box.x + 2, box.y + 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height - 2, { steps: 5 });
    await page.mouse.up();
    await figure.locator('.sds-tool-polygon').click();
    await overlay.focus();
    // the keyboard path: the crosshair starts at the centre; Space adds points, Enter closes
    for (const key of ['ArrowLeft', 'ArrowUp', 'Space', 'ArrowRight', 'ArrowRight', 'ArrowRight', 'Space', 'ArrowDown', 'ArrowDown', 'ArrowDown', 'Space', 'Enter']) {
      await page.keyboard.press(key);
    }
    try {
      await page.waitForFunction(() => document.querySelectorAll('.sds-annotate-region').length === 2, null, { timeout: 30000 });
    } catch (error) {
      await shot(page, 'FAILED-annotate-regions');
      throw new Error(`${error.message}\nregions: ${await figure.locator('.sds-annotate-region').count()}; the panel says: ${await figure.locator('.sds-annotate-panel, .sds-annotate').first().innerText().catch(() => '?')}`, { cause: error });
    }
    const shown = await figure.locator('.sds-annotate-count').allInnerTexts();
    const counts = shown.map(t => Number(t.replace(/\D/g, '')));
    assert.ok(counts[0] > 0, `the rectangle holds cells: ${shown}`);
    const labels = figure.locator('.sds-annotate-region input');
    await labels.nth(0).fill('left');
    await labels.nth(0).press('Enter');
    await labels.nth(1).fill('centre');
    await labels.nth(1).press('Enter');
    assert.match(await figure.locator('.sds-annotate-selection').innerText(), /cells selected/);
    await shot(page, 'annotate-drawn');
    await figure.locator('.sds-annotate-column').fill('my_regions');
    await figure.locator('.sds-annotate-title').fill('My regions');
    await figure.locator('.sds-annotate-save').click();
    // the panel moves to the new version at once
    await page.waitForFunction(() => /My regions/.test(document.querySelector('.sds-history-row')?.textContent ?? ''), null, { timeout: 60000 });
    // the server's Changes of the new version: one set-obs of my_regions with the counts the outlines showed
    const tree = await (await api(`/sds-jupyter/api/tree?path=${encodeURIComponent(top)}`)).json();
    const saved = tree.nodes.find(n => n.title === 'My regions');
    assert.ok(saved, `the tree lists the new version: ${JSON.stringify(tree.nodes.map(n => n.title))}`);
    const changes = await (await api(`/sds-jupyter/api/changes?path=${encodeURIComponent(saved.folder)}`)).json();
    assert.deepEqual(changes.ops.map(o => [o.op, o.column ?? o.key]), [['set-obs', 'my_regions'], ['set-uns', 'sds_regions']]); // the regions kept beside the column (issue 40, item 3)
    const stored = Object.fromEntries(changes.details[0].column.counts.map(c => [c.value, c.count]));
    assert.deepEqual(stored, { left: counts[0], centre: counts[1] });
    await page.locator('.sds-tab[data-tab="changes"]').click();
    await page.waitForFunction(() => /my_regions/.test(document.querySelector('.sds-panels')?.textContent ?? ''), null, { timeout: 30000 });
    await checkAxe(page, 'the annotate panel after a save');
    await shot(page, 'annotate-saved');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  it('issue 27: the Leiden version shows X_pca beside the tissue; a cluster selected on it is the same cells on the tissue, saved as a version', async () => {
    // the Xenium demo, small; the largest Leiden cluster's hull on X_pca and the cells it holds (shapely)
    const facts = JSON.parse(
      python(
        [
          'import json, warnings, numpy as np, shapely, sds_jupyter as sds',
          'from pathlib import Path',
          'from sds_jupyter.demo import demo_dataset_id',
          'from sds_jupyter.demo.xenium import build_xenium_demo',
          'warnings.simplefilter("ignore")',
          `top = build_xenium_demo(Path(${JSON.stringify(join(work, 'root', 'emb'))}), n_cells=1500, side=1024)`,
          'leiden = top.parent / demo_dataset_id("xenium-Leiden clusters")',
          'adata = sds.open_anndata(sds.Stack.resolve(leiden))',
          'pca = np.asarray(adata.obsm["X_pca"], dtype=np.float32).astype(float)[:, :2]',
          'labels = adata.obs["leiden"].astype(str).to_numpy()',
          'cluster = max(sorted(set(labels)), key=lambda c: int((labels == c).sum()))',
          'own = pca[labels == cluster]',
          'distance = np.hypot(*(own - np.median(own, axis=0)).T)',
          'core = own[distance < 3 * np.median(distance)]  # the cluster\'s blob, not the few cells labelled by noise elsewhere',
          'hull = shapely.MultiPoint(core).convex_hull.buffer(0.02 * float(np.ptp(pca[:, 0]))).simplify(0.01 * float(np.ptp(pca[:, 0])))',
          'polygon = [[float(x), float(y)] for x, y in hull.exterior.coords[:-1]]',
          'inside = shapely.contains(shapely.Polygon(polygon), shapely.points(pca))',
          'print(json.dumps({"leiden": leiden.name, "cluster": cluster, "members": len(core), "polygon": polygon, "inside": int(inside.sum())}))'
        ].join('\n')
      )
    );
    assert.ok(facts.inside >= facts.members && facts.polygon.length >= 3, JSON.stringify({ ...facts, polygon: facts.polygon.length }));
    const openFigure = async page => {
      await openListing(page, 'emb/datasets');
      await item(page, facts.leiden).dblclick();
      await page.waitForSelector('.sds-history-row', { timeout: 60000 });
      await page.locator('.sds-tab[data-tab="figures"]').click();
      const card = page.locator('.sds-figure[data-figure="fig-leiden"]');
      await card.waitFor({ timeout: 60000 });
      await card.scrollIntoViewIfNeeded(); // figures load as they come into view
      const figure = card.locator('.sds-spatial[data-renderer="webgl"]');
      try {
        // drawn (cells counted in view) and told the table's embeddings
        await card.locator('.sds-spatial[data-renderer="webgl"][data-in-view][data-embeddings]').waitFor({ timeout: 60000 });
      } catch (error) {
        await shot(page, 'FAILED-issue27-embedding-open');
        const html = await card.evaluate(el => el.outerHTML.slice(0, 1500)).catch(() => '?');
        throw new Error(`${error.message}\nthe figure: ${html}`, { cause: error });
      }
      await figure.locator('.sds-embedding-pick').waitFor({ timeout: 30000 });
      await figure.locator('.sds-embedding-pick').selectOption('X_pca');
      await page.waitForFunction(() => Number(document.querySelector('.sds-figure[data-figure="fig-leiden"] .sds-embedding')?.dataset.drawn) > 0, null, { timeout: 30000 });
      return figure;
    };
    /** Where data point (x, y) of the embedding is on the page. */
    const onEmbedding = (figure, points) =>
      figure.evaluate((el, pts) => {
        const view = el.sdsSpatial.embedding;
        const box = view.stage.getBoundingClientRect();
        const at = view.projection();
        return pts.map(([x, y]) => {
          const [sx, sy] = at.toScreen(x, y);
          return [box.left + sx, box.top + sy];
        });
      }, points);
    /**
     * The veil's pixels under each cell of a surface ('' the tissue, else an embedding key), read back from its canvas:
     * the selected cells in view (by the panel's codes), those whose centre pixel is clear, and the others veiled.
     */
    const veilPixels = (figure, space) =>
      figure.evaluate((el, key) => {
        const panel = el.sdsSpatial.annotation;
        const { surface, veil } = panel.surfaces.get(key);
        const view = surface.projection();
        const [w, hgt] = [veil.width, veil.height];
        const alpha = w && hgt ? veil.getContext('2d').getImageData(0, 0, w, hgt).data : new Uint8ClampedArray(0);
        // the others counted where no selected cell's hole can reach (beyond its radius and a pixel)
        const reach = (surface.radius ? surface.radius() : 1.5) + 2;
        const at = [];
        for (let i = 0; i < panel.codes.length; i++) at.push(view.toScreen(surface.x[i], surface.y[i]));
        const chosen = at.filter((_, i) => panel.codes[i] >= 0);
        const out = { selected: 0, clear: 0, others: 0, veiled: 0 };
        for (let i = 0; i < panel.codes.length; i++) {
          const [sx, sy] = at[i];
          if (!(sx >= 0 && sy >= 0 && sx < w && sy < hgt)) continue;
          const a = alpha[(Math.floor(sy) * w + Math.floor(sx)) * 4 + 3];
          if (panel.codes[i] >= 0) {
            out.selected += 1;
            out.clear += a === 0 ? 1 : 0;
          } else if (chosen.every(([cx, cy]) => Math.hypot(cx - sx, cy - sy) > reach)) {
            out.others += 1;
            out.veiled += a > 0 ? 1 : 0;
          }
        }
        return out;
      }, space);
    const page = await newPage();
    try {
      const figure = await openFigure(page);
      const embedding = figure.locator('.sds-embedding');
      assert.equal(await embedding.getAttribute('data-key'), 'X_pca');
      // hover a cell on the embedding: the tissue marks it and names it; hover it on the tissue: the embedding marks it
      const cell = await figure.evaluate(el => {
        const v = el.sdsSpatial.embedding;
        return [v.coords.x[0], v.coords.y[0]];
      });
      await embedding.scrollIntoViewIfNeeded();
      await shot(page, 'issue27-embedding-shown');
      const [[hx, hy]] = await onEmbedding(figure, [cell]);
      await page.mouse.move(hx - 20, hy - 20);
      await page.mouse.move(hx, hy, { steps: 4 });
      await page.waitForFunction(() => document.querySelector('.sds-figure[data-figure="fig-leiden"] .sds-spatial')?.dataset.linked !== undefined, null, { timeout: 10000 });
      const linked = Number(await figure.getAttribute('data-linked'));
      assert.equal(await embedding.getAttribute('data-hover'), String(linked));
      assert.ok(await figure.locator('.sds-spatial-drawing > .sds-link-mark').isVisible(), 'the tissue marks the hovered cell');
      // select the cluster on the embedding with the polygon tool, point by point
      await figure.locator('.sds-annotate-toggle').click();
      await figure.locator('.sds-tool-polygon').click();
      await embedding.scrollIntoViewIfNeeded();
      const overlay = embedding.locator('.sds-annotate-overlay');
      await overlay.waitFor();
      // each click a point of the draft before the next (each is its own click: never a double-click)
      const draft = () => figure.evaluate(el => el.sdsSpatial.annotation.drawing.draft.length);
      for (const [px, py] of await onEmbedding(figure, facts.polygon)) {
        const had = await draft();
        await page.mouse.click(px, py);
        await until(draft, n => n === had + 1, 'the click adds a point');
      }
      await figure.locator('.sds-annotate-close').click();
      await page.waitForFunction(() => document.querySelectorAll('.sds-annotate-region').length === 1, null, { timeout: 10000 });
      const count = Number((await figure.locator('.sds-annotate-count').innerText()).replace(/\D/g, ''));
      // the outline as drawn (the clicks land on whole pixels): shapely counts the cells of X_pca inside it
      const drawn = await figure.evaluate(el => el.sdsSpatial.annotation.drawing.regions[0].polygon);
      facts.inside = Number(
        python(
          [
            'import json, numpy as np, shapely, sds_jupyter as sds',
            `adata = sds.open_anndata(sds.Stack.resolve(${JSON.stringify(join(work, 'root', 'emb', 'datasets', facts.leiden))}))`,
            'pca = np.asarray(adata.obsm["X_pca"], dtype=np.float32).astype(float)[:, :2]',
            `print(int(shapely.contains(shapely.Polygon(${JSON.stringify(drawn)}), shapely.points(pca)).sum()))`
          ].join('\n')
        )
      );
      assert.ok(facts.inside >= facts.members * 0.9, `the outline holds (nearly) the whole cluster: ${facts.inside} of ${facts.members}`);
      assert.equal(count, facts.inside, 'the region holds the cells shapely finds inside the outline drawn');
      // the same cells marked on the tissue as on the embedding
      const tissueMarked = Number(await figure.locator('.sds-deck-stage .sds-annotate-overlay').getAttribute('data-marked'));
      assert.equal(tissueMarked, facts.inside);
      assert.equal(Number(await overlay.getAttribute('data-marked')), facts.inside);
      assert.match(await figure.locator('.sds-annotate-selection').innerText(), new RegExp(`${facts.inside.toLocaleString('en-US')} cells selected`));
      // issue 40, item 1: every selected cell shows through the veil on both surfaces, the others are veiled
      for (const space of ['', 'X_pca']) {
        const seen = await veilPixels(figure, space);
        assert.equal(seen.selected, facts.inside, `${space || 'tissue'}: ${JSON.stringify(seen)}`);
        assert.equal(seen.clear, facts.inside, `every selected cell in view is clear of the veil on ${space || 'the tissue'}: ${JSON.stringify(seen)}`);
        assert.ok(seen.others > 0 && seen.veiled === seen.others, `the other cells are veiled on ${space || 'the tissue'}: ${JSON.stringify(seen)}`);
      }
      await figure.scrollIntoViewIfNeeded();
      await shot(page, 'issue27-embedding-selected');
      await checkAxe(page, 'the embedding beside the tissue, a region drawn on it');
      await figure.locator('.sds-annotate-region input').fill(`cluster ${facts.cluster}`);
      await figure.locator('.sds-annotate-region input').press('Enter');
      await figure.locator('.sds-annotate-column').fill('pca_pick');
      await figure.locator('.sds-annotate-title').fill('Picked on PCA');
      await figure.locator('.sds-annotate-save').click();
      await page.waitForFunction(() => /Picked on PCA/.test(document.querySelector('.sds-history-row')?.textContent ?? ''), null, { timeout: 60000 });
      const tree = await (await api(`/sds-jupyter/api/tree?path=${encodeURIComponent(`emb/datasets/${facts.leiden}`)}`)).json();
      const saved = tree.nodes.find(n => n.title === 'Picked on PCA');
      assert.ok(saved, `the tree lists the new version: ${JSON.stringify(tree.nodes.map(n => n.title))}`);
      const changes = await (await api(`/sds-jupyter/api/changes?path=${encodeURIComponent(saved.folder)}`)).json();
      assert.deepEqual(changes.ops.map(o => [o.op, o.column ?? o.key]), [['set-obs', 'pca_pick'], ['set-uns', 'sds_regions']]); // the regions kept beside the column (issue 40, item 3)
      const stored = Object.fromEntries(changes.details[0].column.counts.map(c => [c.value, c.count]));
      assert.equal(stored[`cluster ${facts.cluster}`], facts.inside);
      assert.deepEqual(page.errors, []);
    } finally {
      await page.close();
    }
    // issue 40, items 2 and 4: drawing by double-click on the tissue, Escape, the embedding's zoom and pan
    const draw = await newPage();
    try {
      const figure = await openFigure(draw);
      await figure.locator('.sds-annotate-toggle').click();
      await figure.locator('.sds-tool-polygon').click();
      const stage = figure.locator('.sds-deck-stage');
      await stage.scrollIntoViewIfNeeded();
      const box = await stage.boundingBox();
      const at = (fx, fy) => [box.x + fx * box.width, box.y + fy * box.height];
      // five outlines, each closed by a double-click on its last point: five regions of three points, none left open
      for (let k = 0; k < 5; k++) {
        const x0 = 0.1 + 0.16 * k;
        for (const [i, [fx, fy]] of [[x0, 0.3], [x0 + 0.12, 0.3]].entries()) {
          await draw.mouse.click(...at(fx, fy));
          await until(() => figure.evaluate(el => el.sdsSpatial.annotation.drawing.draft.length), n => n === i + 1, `outline ${k + 1}: click ${i + 1} adds a point`);
        }
        await draw.mouse.dblclick(...at(x0 + 0.06, 0.5));
        await draw.waitForFunction(n => document.querySelectorAll('.sds-annotate-region').length === n, k + 1, { timeout: 10000 });
        const shape = await figure.evaluate(el => {
          const d = el.sdsSpatial.annotation.drawing;
          return { points: d.regions[d.regions.length - 1].polygon.length, draft: d.draft.length };
        });
        assert.deepEqual(shape, { points: 3, draft: 0 }, `outline ${k + 1} closed once by the double-click`);
      }
      // the outlines read on the tissue: a halo of the page's background under the brand-coloured line
      const strokes = await figure.locator('.sds-deck-stage .sds-annotate-overlay').evaluate(o =>
        ['.sds-annotate-halo', '.sds-annotate-outline'].map(sel => {
          const cs = getComputedStyle(o.querySelector(sel));
          return [cs.stroke, parseFloat(cs.strokeWidth)];
        })
      );
      assert.ok(strokes[0][1] > strokes[1][1] && strokes[0][0] !== strokes[1][0], JSON.stringify(strokes));
      await shot(draw, 'issue40-outlines-closed');
      // Escape drops the outline in progress; the next clicks still draw (no pin, no zoom)
      const zoomBefore = await stage.getAttribute('data-zoom');
      await draw.mouse.click(...at(0.5, 0.8));
      await draw.keyboard.press('Escape');
      assert.equal(await figure.evaluate(el => el.sdsSpatial.annotation.drawing.draft.length), 0);
      await draw.mouse.click(...at(0.55, 0.8));
      await until(() => figure.evaluate(el => el.sdsSpatial.annotation.drawing.draft.length), n => n === 1, 'a click after Escape adds a point');
      await settled(draw);
      assert.equal(await figure.evaluate(el => el.sdsSpatial.annotation.drawing.draft.length), 1, 'one point, not more');
      assert.equal(await stage.getAttribute('data-zoom'), zoomBefore, 'and does not zoom');
      assert.equal(await figure.locator('.sds-cell-pin').isVisible(), false, 'nor pin a cell');
      await draw.keyboard.press('Escape');
      await draw.keyboard.press('Escape'); // drawing stopped
      // item 4: the tissue cannot be dragged off screen: cells stay in view however far it is dragged
      for (let k = 0; k < 5; k++) {
        await draw.mouse.move(...at(0.95, 0.95));
        await draw.mouse.down();
        await draw.mouse.move(...at(0.05, 0.05), { steps: 6 });
        await draw.mouse.up();
      }
      await settled(draw);
      const inView = await inViewCount(figure);
      assert.ok(inView > 0, `cells in view after a long drag: ${inView}`);
      // the embedding zooms under the wheel (the point under the pointer stays), pans by a drag, and hovers what is under the pointer after a zoom
      const embedding = figure.locator('.sds-embedding');
      const estage = figure.locator('.sds-embedding-stage');
      await estage.scrollIntoViewIfNeeded();
      const ebox = await estage.boundingBox();
      const [cx, cy] = [ebox.x + ebox.width * 0.5, ebox.y + ebox.height * 0.5];
      await draw.mouse.move(cx, cy);
      await draw.mouse.wheel(0, -600);
      await draw.waitForFunction(() => Number(document.querySelector('.sds-figure[data-figure="fig-leiden"] .sds-embedding')?.dataset.zoom) > 1.5, null, { timeout: 10000 });
      await settled(draw); // the zoom done: the hover is the one the product settled on
      // the hover is a cell the pointer is on at the new zoom (within the 8 px hover reach), or none: never the cell of before
      const hovered = await embedding.getAttribute('data-hover');
      const reach = await figure.evaluate((el, [p, index]) => {
        const v = el.sdsSpatial.embedding;
        const r = v.stage.getBoundingClientRect();
        const view = v.projection();
        const distance = i => {
          const [sx, sy] = view.toScreen(v.coords.x[i], v.coords.y[i]);
          return Math.hypot(sx + r.left - p[0], sy + r.top - p[1]);
        };
        let nearest = Infinity;
        for (let i = 0; i < v.coords.x.length; i++) nearest = Math.min(nearest, distance(i));
        return { hovered: index === null ? null : distance(Number(index)), nearest };
      }, [[cx, cy], hovered]);
      assert.ok(
        reach.nearest > 8 ? hovered === null : reach.hovered !== null && reach.hovered <= 8 && reach.hovered <= reach.nearest + 1,
        `after the wheel zoom the hover names a cell under the pointer: ${JSON.stringify({ hovered, ...reach })}`
      );
      const before = await figure.evaluate(el => ({ ...el.sdsSpatial.embedding.cameraState() }));
      await draw.mouse.down();
      await draw.mouse.move(cx + 60, cy + 30, { steps: 5 });
      await draw.mouse.up();
      const after = await figure.evaluate(el => ({ ...el.sdsSpatial.embedding.cameraState() }));
      assert.ok(Math.abs(after.dx - before.dx - 60) < 1 && Math.abs(after.dy - before.dy - 30) < 1, JSON.stringify({ before, after }));
      assert.ok(Number(await embedding.getAttribute('data-drawn')) > 0);
      await shot(draw, 'issue40-embedding-zoomed');
      await figure.locator('.sds-embedding-fit').click();
      await draw.waitForFunction(() => document.querySelector('.sds-figure[data-figure="fig-leiden"] .sds-embedding')?.dataset.zoom === '1.000', null, { timeout: 10000 });
      assert.deepEqual(draw.errors, []);
    } finally {
      await draw.close();
    }
    // dark theme, a 420 px panel: the embedding goes below the tissue, nothing wider than the panel
    await inThemes(['dark'], async dark => {
      const figure = await openFigure(dark);
      await dark.keyboard.press('Control+b');
      await sizePanel(dark, 420);
      const [tissueBox, embeddingBox] = await Promise.all([figure.locator('.sds-deck-stage').boundingBox(), figure.locator('.sds-embedding-stage').boundingBox()]);
      assert.ok(embeddingBox.y >= tissueBox.y + tissueBox.height - 1, `stacked at 420 px: ${JSON.stringify({ tissueBox, embeddingBox })}`);
      assert.ok(embeddingBox.width > 200, `the embedding keeps the panel's width: ${embeddingBox.width}`);
      const overflow = await dark.evaluate(() => [document.querySelector('.sds-panels')].filter(el => el && el.scrollWidth > el.clientWidth + 1).length);
      assert.equal(overflow, 0, 'the figure view does not scroll sideways at 420 px');
      assert.ok(Number(await figure.locator('.sds-embedding').getAttribute('data-drawn')) > 0);
      // issue 40, item 1 in the dark at 420 px: a rectangle over the tissue's middle; every selected cell clear of the veil
      await figure.evaluate(el => {
        const panel = el.sdsSpatial.annotation;
        const [x0, y0, x1, y1] = el.sdsSpatial.payload.bounds;
        panel.toggle(true);
        panel.use('rectangle');
        panel.add([x0 + (x1 - x0) * 0.25, y0 + (y1 - y0) * 0.25]);
        panel.add([x0 + (x1 - x0) * 0.75, y0 + (y1 - y0) * 0.75]);
      });
      for (const space of ['', 'X_pca']) {
        const seen = await veilPixels(figure, space);
        assert.ok(seen.selected > 0 && seen.clear === seen.selected, `dark, ${space || 'tissue'}: ${JSON.stringify(seen)}`);
        assert.ok(seen.others > 0 && seen.veiled === seen.others, `dark, ${space || 'tissue'}: ${JSON.stringify(seen)}`);
      }
      await figure.scrollIntoViewIfNeeded();
      await shot(dark, 'issue40-selection-420-dark');
      await figure.locator('.sds-embedding').scrollIntoViewIfNeeded();
      await shot(dark, 'issue27-embedding-420-dark');
      await checkAxe(dark, 'the embedding beside the tissue (dark, 420 px)');
      assert.deepEqual(dark.errors, []);
    });
  });

  // issue 29, the remaining items (nav29b): its own copy of the small demo, a plain folder and a corrupt version beside it
  let nav29b = null;
  function nav29bDemo() {
    if (!nav29b) {
      const own = spawnSync(PYTHON, ['-m', 'sds_jupyter', 'demo', '--small', join(work, 'root', 'nav29b')], { encoding: 'utf8' });
      assert.equal(own.status, 0, own.stderr);
      const datasets = join(work, 'root', 'nav29b', 'datasets');
      mkdirSync(join(datasets, 'plain-folder'));
      writeFileSync(join(datasets, 'plain-folder', 'notes.txt'), 'not a version');
      mkdirSync(join(datasets, 'corrupt-version'));
      writeFileSync(join(datasets, 'corrupt-version', 'layer.json'), '{"parent": ');
      nav29b = own.stdout.trim().split('\n').pop().split('/').pop();
    }
    return nav29b;
  }

  it('issue 41 (4, 5, 6): the palette opens the selected folder; an unreadable layer.json says why; the sidebar follows the panel; Back survives a reload; same titles apart; the side folds at 420 px; light and dark, axe', async () => {
    const ownTop = nav29bDemo();
    const title = (await (await api(`/sds-jupyter/api/history?path=${encodeURIComponent(`nav29b/datasets/${ownTop}`)}`)).json()).versions[0].title;
    await inThemes(['light', 'dark'], async (page, tag) => {
      await openListing(page, 'nav29b/datasets');
      // item 6: "Open version" from the palette is filled with the folder selected in the file browser
      await item(page, ownTop).click();
      await page.keyboard.press('Control+Shift+c');
      await page.locator('.lm-CommandPalette-input').fill('Open version');
      await page.keyboard.press('Enter');
      assert.equal(await page.locator('.jp-Dialog input').inputValue(), `nav29b/datasets/${ownTop}`);
      await page.keyboard.press('Escape');
      await page.locator('.jp-Dialog').waitFor({ state: 'detached' });
      // item 6: a double-click on a folder whose layer.json cannot be read shows its files and says why
      await page.waitForSelector('.jp-DirListing-item.sds-version-broken', { timeout: 30000 });
      await item(page, 'corrupt-version').dblclick();
      const note = page.locator('.Toastify__toast', { hasText: 'corrupt-version: its layer.json cannot be read' });
      await note.waitFor({ timeout: 30000 });
      assert.match(await note.innerText(), /corrupt-version: its layer\.json cannot be read, so its files are shown instead\. layer\.json is not valid JSON/);
      await page.waitForFunction(() => /corrupt-version/.test(document.querySelector('.jp-BreadCrumbs')?.textContent ?? ''), null, { timeout: 30000 });
      await settled(page); // the note has slid in
      await shot(page, `issue41-unreadable-note-${tag}`);
      await openListing(page, 'nav29b/datasets');
      // item 4: the sidebar highlights the version the panel shows, and follows it onto a branch
      await page.locator('.jp-SideBar .lm-TabBar-tab[data-id="sds-versions-sidebar"]').click();
      const sideRow = name => page.locator('#sds-versions-sidebar .sds-tree-row', { hasText: name });
      await sideRow('Coarser clusters').waitFor({ timeout: 60000 });
      await sideRow(title).first().dblclick(); // the sidebar stands where the file browser was: it opens the version
      await page.waitForSelector('.sds-panel:visible .sds-tree-row', { timeout: 60000 });
      await page.waitForFunction(t => [...document.querySelectorAll('#sds-versions-sidebar .sds-tree-row.sds-tree-current')].map(r => r.textContent).join().includes(t), title, { timeout: 30000 });
      await page.locator('.sds-panel:visible .sds-tree-row', { hasText: 'Coarser clusters' }).click();
      await page.waitForFunction(() => /Coarser clusters/.test([...document.querySelectorAll('#sds-versions-sidebar .sds-tree-row.sds-tree-current')].map(r => r.textContent).join()), null, { timeout: 30000 });
      assert.equal(await page.locator('#sds-versions-sidebar .sds-tree-row.sds-tree-current').count(), 1, 'the old highlight went');
      assert.deepEqual(await axeViolations(page, '#sds-versions-sidebar'), [], `the sidebar following the panel (${tag})`);
      await shot(page, `issue41-sidebar-follows-${tag}`);
      // item 4: Back survives a reload
      await page.locator('.sds-panel:visible .sds-back:not([hidden])').waitFor({ timeout: 30000 });
      await layoutSaved(page, '"trail":[{'); // the panel's trail (its Back) is in the saved layout
      await page.goto(`${base}/lab/tree/nav29b/datasets?token=${TOKEN}`);
      await page.locator('.sds-panel:visible .sds-back:not([hidden])').waitFor({ timeout: 60000 });
      assert.equal(await page.locator('.sds-panel:visible .sds-back').innerText(), `← Back to ${title}`);
      assert.equal(await page.locator('.sds-panel:visible .sds-title-text').innerText(), 'Coarser clusters');
      // item 5: at 420 px the tree and history fold away and the views get the height
      await sizePanel(page, 420);
      const fold = page.locator('.sds-panel:visible .sds-side-toggle');
      assert.equal(await fold.innerText(), 'Hide versions');
      const before = await page.locator('.sds-panel:visible .sds-detail').evaluate(el => el.getBoundingClientRect().height);
      await fold.click();
      assert.equal(await page.locator('.sds-panel:visible .sds-side').isHidden(), true);
      assert.equal(await fold.getAttribute('aria-expanded'), 'false');
      const after = await page.locator('.sds-panel:visible .sds-detail').evaluate(el => el.getBoundingClientRect().height);
      assert.ok(after > before + 100, `the views grew: ${before} -> ${after}`);
      assert.deepEqual(await axeViolations(page, '.sds-panel:not(.lm-mod-hidden) .sds-app'), [], `folded at 420 px (${tag})`);
      await shot(page, `issue41-folded-420-${tag}`);
      // the drawing tools open under the toolbar, above the drawing, its legend and channels
      await page.locator('.sds-panel:visible .sds-tab[data-tab="figures"]').click();
      const card = page.locator('.sds-panel:visible .sds-figure-canvas').first();
      await card.locator('.sds-annotate-toggle').waitFor({ timeout: 60000 });
      // item 3: folded, the side takes nothing and the whole tissue is in view, as wide as its card
      // allows (a square tissue at 420 px is bound by the width: the height the tree and history
      // took is what kept it out of view); measured again unfolded, for the comparison
      await card.locator('.sds-spatial-drawing canvas').first().waitFor({ timeout: 60000 });
      const room = () =>
        page.evaluate(() => {
          const panel = document.querySelector('.sds-panel:not(.lm-mod-hidden)');
          const box = sel => panel.querySelector(sel).getBoundingClientRect();
          const [app, side, detail, card, drawing] = ['.sds-app', '.sds-side', '.sds-detail', '.sds-figure-canvas', '.sds-figure-canvas .sds-spatial-drawing'].map(box);
          const seen = Math.max(0, Math.min(drawing.bottom, detail.bottom, window.innerHeight) - Math.max(drawing.top, detail.top));
          return { app: app.height, side: side.height, detail: detail.height, card: card.height, cardWidth: card.width, drawing: drawing.height, drawingWidth: drawing.width, seen, share: (drawing.height * drawing.width) / (card.height * card.width) };
        });
      const folded = await room();
      const flip = async () => {
        const said = await fold.innerText();
        await fold.click();
        await until(() => fold.innerText(), t => t !== said, 'the side folds or unfolds');
        await settled(page);
      };
      await flip();
      const unfolded = await room();
      await flip();
      const say = r => `side ${Math.round(r.side)} px of ${Math.round(r.app)}, tissue ${Math.round(r.seen)} of its ${Math.round(r.drawing)} px in view (${Math.round((100 * r.seen) / r.app)}% of the panel's height), ${(100 * r.share).toFixed(1)}% of its card's area`;
      console.log(`issue 41 item 3, 420 px (${tag}): folded: ${say(folded)}; unfolded: ${say(unfolded)}`);
      assert.equal(folded.side, 0, 'the folded side takes no height');
      assert.ok(folded.seen >= folded.drawing - 1, `folded, the whole tissue is in view: ${JSON.stringify(folded)}`);
      assert.ok(folded.seen > unfolded.seen + 50, `folding brings more of the tissue into view: ${folded.seen} vs ${unfolded.seen}`);
      assert.ok(folded.drawingWidth >= 0.9 * folded.cardWidth, `the tissue is as wide as its card allows: ${folded.drawingWidth} of ${folded.cardWidth}`);
      await shot(page, `issue41-folded-figure-420-${tag}`);
      await card.locator('.sds-annotate-toggle').click();
      await card.locator('.sds-annotate:not([hidden])').waitFor({ timeout: 30000 });
      const tops = await card.evaluate(el => ['.sds-annotate', '.sds-spatial-drawing', '.sds-legend-slot'].map(s => el.querySelector(s).getBoundingClientRect().top));
      assert.ok(tops[0] < tops[1] && tops[1] < tops[2], `tools ${tops[0]}, drawing ${tops[1]}, legend ${tops[2]}`);
      await shot(page, `issue41-tools-420-${tag}`);
      await page.keyboard.press('Escape');
      await fold.click();
      await page.setViewportSize({ width: 1400, height: 900 });
      assert.deepEqual(page.errors, []);
    });
    // item 4: two panels whose versions share a title carry different tab titles
    cpSync(join(work, 'root', 'nav29b', 'datasets', ownTop), join(work, 'root', 'nav29b', 'copy', ownTop), { recursive: true });
    const page = await newPage();
    try {
      await openListing(page, 'nav29b/datasets');
      await item(page, ownTop).dblclick();
      await page.waitForSelector('.sds-panel:visible .sds-history-row', { timeout: 60000 });
      await layoutSaved(page, ownTop);
      await page.goto(`${base}/lab/tree/nav29b/copy?token=${TOKEN}`); // no reset: the first panel comes back
      await page.waitForSelector('.jp-DirListing-item', { timeout: 60000 });
      await item(page, ownTop).dblclick();
      await page.waitForFunction(() => document.querySelectorAll('.sds-panel').length >= 2, null, { timeout: 60000 });
      await page.waitForFunction(t => [...document.querySelectorAll('.lm-DockPanel .lm-TabBar-tabLabel')].filter(l => l.textContent.startsWith(t)).length === 2, title, { timeout: 60000 });
      const labels = (await page.locator('.lm-DockPanel .lm-TabBar-tabLabel').allInnerTexts()).filter(l => l.startsWith(title));
      assert.deepEqual(new Set(labels), new Set([`${title} · datasets`, `${title} · copy`]), labels.join(', '));
    } finally {
      await page.close();
    }
  });

  it('issue 41 (1, 2): a long title is read whole in the tree, the history and the sidebar (its row grows, the graph joins up); no tag is ever cut, at 1,400 and 420 px; light and dark, axe', async () => {
    const LONG = 'Tumour margin regions redrawn after the second pathology review of the invasive front, with the immune infiltrate marked';
    const own = spawnSync(PYTHON, ['-m', 'sds_jupyter', 'demo', '--small', join(work, 'root', 'long41')], { encoding: 'utf8' });
    assert.equal(own.status, 0, own.stderr);
    const ownTop = own.stdout.trim().split('\n').pop();
    const saved = python(`
from sds_jupyter import open_anndata, save_version
adata = open_anndata(${JSON.stringify(ownTop)})
adata.obs["reviewed"] = adata.obs_names.str.len().astype("int64")
print(save_version(${JSON.stringify(ownTop)}, adata, title=${JSON.stringify(LONG)}).name)`);
    const SIDEBAR = '#sds-versions-sidebar';
    // every tag whole, every title whole and inside its row, in `scope`
    const clipped = (page, scope) =>
      page.evaluate(sel => {
        const bad = [];
        for (const root of document.querySelectorAll(sel)) {
          for (const tag of root.querySelectorAll('.sds-tree-tag')) {
            if (tag.scrollWidth > tag.clientWidth + 0.5) bad.push(`tag “${tag.textContent}” ${tag.scrollWidth}>${tag.clientWidth}`);
          }
          for (const title of root.querySelectorAll('.sds-tree-title, .sds-row-title')) {
            const row = title.closest('.sds-tree-row, .sds-history-row').getBoundingClientRect();
            const box = title.getBoundingClientRect();
            if (title.scrollWidth > title.clientWidth + 0.5 || title.scrollHeight > title.clientHeight + 0.5) bad.push(`title “${title.textContent}” scrolls`);
            if (box.bottom > row.bottom + 0.5 || box.right > row.right + 0.5) bad.push(`title “${title.textContent}” past its row`);
          }
          // the history's author, app and change badges: each whole, inside its row (they wrap)
          for (const part of root.querySelectorAll('.sds-row-meta > *')) {
            const row = part.closest('.sds-history-row').getBoundingClientRect();
            const box = part.getBoundingClientRect();
            if (part.scrollWidth > part.clientWidth + 0.5) bad.push(`badge “${part.textContent}” ${part.scrollWidth}>${part.clientWidth}`);
            if (box.bottom > row.bottom + 0.5 || box.right > row.right + 0.5) bad.push(`badge “${part.textContent}” past its row`);
          }
          // the panel's header title (the top version's): whole, no tooltip needed
          const head = root.closest('.sds-app')?.querySelector('.sds-header .sds-title-text');
          if (head && (head.scrollWidth > head.clientWidth + 0.5 || head.scrollHeight > head.clientHeight + 0.5)) bad.push(`header title “${head.textContent}” ${head.scrollWidth}>${head.clientWidth}`);
        }
        return bad;
      }, scope);
    // the graph's lanes reach the bottom of a row however tall it is (the rows join up)
    const graphFills = (page, scope) =>
      page.evaluate(sel => [...document.querySelectorAll(`${sel} .sds-tree-row`)].every(row => Math.abs(row.querySelector('svg').getBoundingClientRect().height - row.getBoundingClientRect().height) < 1), scope);
    await inThemes(['light', 'dark'], async (page, tag) => {
      await openListing(page, 'long41/datasets');
      await item(page, saved).dblclick();
      await page.waitForSelector('.sds-panel:visible .sds-tree-row.sds-tree-current', { timeout: 60000 });
      // selected and opened: the long title's row carries both tags
      await page.locator('.sds-panel:visible .sds-history-row[data-depth]').first().click();
      await page.waitForSelector('.sds-panel:visible .sds-tree-row.sds-tree-selected.sds-tree-current', { timeout: 30000 });
      await page.waitForFunction(() => document.querySelectorAll('.sds-panel:not(.lm-mod-hidden) .sds-tree-row.sds-tree-current .sds-tree-tag').length === 2, null, { timeout: 30000 });
      const longRow = page.locator('.sds-panel:visible .sds-tree-row.sds-tree-current');
      assert.equal(await longRow.locator('.sds-tree-title').innerText(), LONG);
      assert.deepEqual(await longRow.locator('.sds-tree-tag').allInnerTexts(), ['selected', 'opened']);
      for (const width of [1400, 420]) {
        if (width === 420) await sizePanel(page, 420);
        await settled(page);
        assert.deepEqual(await clipped(page, '.sds-panel:not(.lm-mod-hidden) .sds-side'), [], `the panel at ${width} px (${tag})`);
        assert.ok(await graphFills(page, '.sds-panel:not(.lm-mod-hidden)'), `the graph fills every row at ${width} px`);
        const rows = await page.evaluate(() => [...document.querySelectorAll('.sds-panel:not(.lm-mod-hidden) .sds-tree-row')].map(r => [r.querySelector('.sds-tree-title').textContent, r.getBoundingClientRect().top, r.getBoundingClientRect().height]));
        const tall = rows.find(([t]) => t === LONG);
        if (width === 420) assert.ok(tall[2] > 40, `the long title wraps to more lines at 420 px: ${tall[2]} px`);
        const head = await page.locator('.sds-panel:not(.lm-mod-hidden) .sds-header .sds-title-text').evaluate(el => [el.textContent, el.clientHeight]);
        assert.equal(head[0], LONG, 'the header names the top version');
        if (width === 420) assert.ok(head[1] > 30, `the header title wraps to more lines at 420 px: ${head[1]} px`);
        rows.sort((a, b) => a[1] - b[1]);
        for (let i = 1; i < rows.length; i++) assert.ok(rows[i][1] >= rows[i - 1][1] + rows[i - 1][2] - 0.5, `rows overlap at ${width} px: ${JSON.stringify(rows)}`);
        assert.deepEqual(await axeViolations(page, '.sds-panel:not(.lm-mod-hidden) .sds-side'), [], `the side at ${width} px (${tag})`);
        await shot(page, `issue41-long-title-${width}-${tag}`);
      }
      await page.setViewportSize({ width: 1400, height: 900 });
      // the sidebar at 420 px: the same title whole, its group as tall as its rows
      await page.locator(`.jp-SideBar .lm-TabBar-tab[data-id="sds-versions-sidebar"]`).click();
      await page.locator(`${SIDEBAR} .sds-tree-row`, { hasText: 'Coarser clusters' }).waitFor({ timeout: 60000 });
      await dragSidebarTo(page, 420, SIDEBAR);
      assert.deepEqual(await clipped(page, SIDEBAR), [], `the sidebar at 420 px (${tag})`);
      assert.ok(await graphFills(page, SIDEBAR), 'the sidebar graph fills every row');
      const group = await page.locator(`${SIDEBAR} .sds-tree`).first().evaluate(el => [el.clientHeight, [...el.querySelectorAll('.sds-tree-row')].reduce((end, r) => Math.max(end, r.offsetTop + r.offsetHeight), 0)]);
      assert.ok(Math.abs(group[0] - group[1]) < 1, `the group is as tall as its rows: ${group}`);
      assert.equal(await page.locator(`${SIDEBAR} .sds-tree-title`, { hasText: 'invasive front' }).innerText(), LONG);
      assert.deepEqual(await axeViolations(page, SIDEBAR), [], `the sidebar at 420 px (${tag})`);
      await shot(page, `issue41-long-title-sidebar-420-${tag}`);
      assert.deepEqual(page.errors, []);
    });
  });

  it('issue 29 (7b, 8b, 7d): a wide panel shows the whole tissue drawing; Figures charts never scroll sideways; Escape closes the overlays', async () => {
    const ownTop = nav29bDemo();
    await inThemes(['light', 'dark'], async (page, tag) => {
      await openListing(page, 'nav29b/datasets');
      await item(page, ownTop).dblclick();
      await page.waitForSelector('.sds-history-row', { timeout: 30000 });
      await page.keyboard.press('Control+b');
      // 7a: the version opens on Figures, its own newest figure first
      await page.waitForSelector('.sds-tab.sds-active[data-tab="figures"]', { timeout: 30000 });
      const own = (await (await api(`/sds-jupyter/api/history?path=${encodeURIComponent(`nav29b/datasets/${ownTop}`)}`)).json()).versions[0];
      const saved = own.changes.filter(c => c.op === 'set-figure').map(c => c.figure);
      await page.waitForSelector('.sds-figures .sds-figure', { timeout: 30000 });
      assert.ok(saved.includes(await page.locator('.sds-figures .sds-figure').first().getAttribute('data-figure')), `first figure of ${JSON.stringify(own.changes)}`);
      await page.locator('.sds-tab[data-tab="figures"]').click();
      const figure = page.locator('.sds-figure-canvas').first();
      await figure.waitFor({ timeout: 30000 });
      await figure.evaluate(el => el.scrollIntoView({ block: 'start' }));
      await page.waitForSelector('.sds-figure-canvas .sds-deck-stage[data-live="true"]', { timeout: 30000 });
      await settled(page);
      // the figures above it have drawn since (and grown): the figure's top at the panel's top again
      await figure.evaluate(el => el.scrollIntoView({ block: 'start' }));
      await settled(page);
      // 7b: the drawing (its scale bar at its bottom) is inside the panel and the window, its aspect kept
      const boxes = await page.evaluate(() => {
        const r = el => el.getBoundingClientRect();
        const stage = document.querySelector('.sds-figure-canvas .sds-deck-stage');
        const bar = document.querySelector('.sds-figure-canvas .sds-scalebar:not([hidden])');
        return { stage: r(stage).toJSON(), panels: r(document.querySelector('.sds-panels')).toJSON(), bar: bar ? r(bar).toJSON() : null, aspect: getComputedStyle(stage).aspectRatio };
      });
      for (const box of [boxes.stage, boxes.bar].filter(Boolean)) {
        assert.ok(box.bottom <= Math.min(800, boxes.panels.bottom) + 1 && box.top >= boxes.panels.top - 1, `on screen: ${JSON.stringify(boxes)}`);
      }
      const [aw, ah] = boxes.aspect.split('/').map(Number);
      assert.ok(Math.abs(boxes.stage.width / boxes.stage.height - aw / ah) < 0.02, `aspect kept: ${JSON.stringify(boxes)}`);
      await shot(page, `issue29-fit-wide-${tag}`);
      // 8b: every figure drawn; no chart, figure or the panel scrolls sideways, wide and at 420 px
      const overflowing = async () => {
        // each figure scrolled into view (a lazy figure draws once seen) until it has drawn
        for (const fig of await page.locator('.sds-figure').all()) {
          await fig.scrollIntoViewIfNeeded();
          await settled(page);
        }
        await page.waitForFunction(() => [...document.querySelectorAll('.sds-figure-chart .sds-figure-body')].every(b => b.querySelector('svg, canvas, .sds-reason, .sds-error')), null, { timeout: 30000 });
        await settled(page);
        return page.evaluate(() =>
          [document.querySelector('.sds-panels'), ...document.querySelectorAll('.sds-figures .sds-chart, .sds-figures .sds-figure-body')]
            .filter(el => el.scrollWidth > el.clientWidth + 1)
            .map(el => `${el.className} ${el.scrollWidth}>${el.clientWidth}`)
        );
      };
      assert.deepEqual(await overflowing(), [], `wide (${tag})`);
      await sizePanel(page, 420);
      assert.deepEqual(await overflowing(), [], `420 px (${tag})`);
      await page.locator('.sds-figure-chart').first().scrollIntoViewIfNeeded();
      await shot(page, `issue29-figures-420-${tag}`);
      // 8a: the Top markers chart (Leiden clusters saved it; the top deleted it): at 420 px and wide
      await page.locator('.sds-history-row', { hasText: 'Leiden clusters' }).click();
      await page.locator('.sds-tab[data-tab="figures"]').click();
      const markers = page.locator('.sds-figure[data-figure="fig-markers"]');
      await markers.locator('.sds-chart svg, .sds-chart canvas').first().waitFor({ timeout: 30000 });
      assert.deepEqual(await overflowing(), [], `the markers at 420 px (${tag})`);
      await markers.evaluate(el => el.scrollIntoView({ block: 'start' }));
      await settled(page);
      await shot(page, `issue29-markers-420-${tag}`);
      await narrowTo(page, 1600, 800);
      await markers.evaluate(el => el.scrollIntoView({ block: 'start' }));
      await settled(page);
      await shot(page, `issue29-markers-wide-${tag}`);
      await page.locator('.sds-history-row').first().click();
      await page.locator('.sds-tab[data-tab="figures"]').click();
      await figure.waitFor({ timeout: 30000 });
      // 7d, in both themes: Escape stops drawing regions (the Annotate button gets the focus back)
      await figure.scrollIntoViewIfNeeded();
      await figure.locator('.sds-annotate-toggle').click();
      await figure.locator('.sds-annotate:not([hidden])').waitFor();
      await page.keyboard.press('Escape');
      await figure.locator('.sds-annotate').waitFor({ state: 'hidden' });
      assert.equal(await figure.locator('.sds-annotate-toggle').getAttribute('aria-pressed'), 'false');
      assert.equal(await figure.locator('.sds-annotate-toggle').evaluate(el => el === document.activeElement), true);
      // the result's tissue view, opened by a click: Escape at once closes it
      await page.locator('.sds-tab[data-tab="results"]').click();
      const card = page.locator('[data-result="markers-leiden"]');
      const link = card.locator('.sds-tissue-link').first();
      await link.waitFor({ timeout: 30000 });
      await link.click();
      await page.waitForFunction(() => document.querySelector('[data-result="markers-leiden"] .sds-tissue')?.dataset.drawn, null, { timeout: 60000 });
      await shot(page, `issue29-escape-tissue-open-${tag}`);
      assert.deepEqual(await axeViolations(page, '.sds-panel .sds-app'), [], `the result's tissue view open (${tag})`);
      await page.keyboard.press('Escape');
      assert.equal(await card.locator('.sds-tissue').isHidden(), true, 'Escape closed the tissue view');
      // A | B side by side with the branch: Escape at once closes it, the focus back on its button
      await page.locator('.sds-tab[data-tab="compare"]').click();
      const pickB = page.locator('.sds-compare select[aria-label^="Version B"]');
      await pickB.locator('option', { hasText: 'Coarser clusters' }).waitFor({ state: 'attached', timeout: 30000 });
      await pickB.selectOption({ label: await pickB.locator('option', { hasText: 'Coarser clusters' }).innerText() });
      const sides = page.locator('.sds-show-sides:visible').first();
      await sides.waitFor({ timeout: 60000 });
      await sides.click();
      await page.waitForFunction(() => document.querySelector('.sds-sidebyside:not([hidden])')?.dataset.drawn, null, { timeout: 60000 });
      await settled(page);
      await shot(page, `issue29-escape-sides-open-${tag}`);
      assert.deepEqual(await axeViolations(page, '.sds-panel .sds-app'), [], `A | B side by side open (${tag})`);
      await page.keyboard.press('Escape');
      assert.equal(await page.locator('.sds-sidebyside:not([hidden])').count(), 0, 'Escape closed A | B side by side');
      assert.equal(await sides.evaluate(el => el === document.activeElement), true, 'the focus is back on its button');
      assert.deepEqual(page.errors, []);
    }, { width: 1600, height: 800 });
  });

  it('issue 29 (1, 3, 4): titles beside folder names; a plain folder and a corrupt layer.json say so once and are not polled; another version keeps a Back, the first folder brings its own panel', async () => {
    const ownTop = nav29bDemo();
    const page = await newPage();
    const asked = [];
    page.on('request', r => r.url().includes('/sds-jupyter/api/') && asked.push(new URL(r.url()).search));
    const pending = new Set();
    page.on('request', r => r.url().includes('/sds-jupyter/api/') && pending.add(r));
    for (const done of ['requestfinished', 'requestfailed']) page.on(done, r => pending.delete(r));
    try {
      await openListing(page, 'nav29b/datasets');
      await page.waitForSelector('.jp-DirListing-item.sds-version-item', { timeout: 30000 });
      // item 1: each version's title before its folder name, drawn on the page (not only a tooltip)
      const listed = await (await api(`/sds-jupyter/api/versions?path=${encodeURIComponent('nav29b/datasets')}`)).json();
      const titled = (listed.versions ?? listed).filter(v => v.title);
      assert.ok(titled.length >= 5, JSON.stringify(listed).slice(0, 300));
      for (const v of titled) {
        const label = await item(page, v.name).locator('.jp-DirListing-itemText').evaluate(el => getComputedStyle(el, '::before').content);
        assert.equal(label, JSON.stringify(`${v.title} · `), v.name);
      }
      // item 4: a corrupt layer.json is marked as such, with the reason
      const corrupt = item(page, 'corrupt-version');
      assert.equal(await corrupt.evaluate(el => el.classList.contains('sds-version-broken')), true);
      assert.match(await corrupt.getAttribute('title'), /^Not readable as a version: layer\.json is not valid JSON/);
      assert.equal(await item(page, 'plain-folder').evaluate(el => el.classList.contains('sds-version-broken') || el.classList.contains('sds-version-item')), false);
      await page.locator('.jp-DirListing').screenshot({ path: join(SHOTS, 'issue29-file-browser-titles.png') });
      // "Open version" on a plain folder and on the corrupt one: one clear line, then no request for it
      for (const [folder, said] of [['plain-folder', /^This folder is not a version: nav29b\/datasets\/plain-folder holds no layer\.json/m], ['corrupt-version', /^This version's layer\.json cannot be read: /m]]) {
        await page.keyboard.press('Control+Shift+c');
        await page.locator('.lm-CommandPalette-input').fill('Open version');
        await page.keyboard.press('Enter');
        await page.locator('.jp-Dialog input').fill(`nav29b/datasets/${folder}`);
        await page.keyboard.press('Enter');
        const banner = page.locator('.sds-panel:visible .sds-banner');
        await banner.waitFor({ timeout: 30000 });
        assert.match(await banner.innerText(), said);
        // that line alone: no empty search, tree or tabs below it, nothing to open in a notebook
        assert.equal(await page.locator('.sds-panel:visible .sds-main').isHidden(), true);
        assert.equal(await page.locator('.sds-panel:visible [data-action="open-in-notebook"]').isHidden(), true);
        // counted once the one line's own requests are answered, then again two of the tree's poll intervals later
        await until(() => pending.size, n => n === 0, 'the requests of the one line answered');
        const before = asked.filter(q => q.includes(encodeURIComponent(folder))).length;
        await pollIntervals(2);
        assert.equal(asked.filter(q => q.includes(encodeURIComponent(folder))).length, before, `${folder} asked again`);
        await shot(page, `issue29-not-a-version-${folder}`);
      }
      await sizePanel(page, 420);
      await shot(page, 'issue29-not-a-version-420');
      await page.setViewportSize({ width: 1400, height: 900 });
      // item 3: another version of the tree opens in the panel with a Back; the first folder brings its own panel again
      await item(page, ownTop).dblclick();
      await page.waitForSelector('.sds-panel:visible .sds-tree-row', { timeout: 30000 });
      const title = await page.locator('.sds-panel:visible .sds-history-row').first().locator('.sds-row-title').innerText();
      await page.locator('.sds-panel:visible .sds-tree-row', { hasText: 'Coarser clusters' }).click();
      await page.waitForFunction(() => document.querySelector('.lm-DockPanel .lm-TabBar-tab.lm-mod-current')?.textContent?.includes('Coarser clusters'), null, { timeout: 30000 });
      assert.equal(await page.locator('.sds-panel:visible .sds-back').innerText(), `← Back to ${title}`);
      // the header, the selection and the tree name the version moved to
      assert.equal(await page.locator('.sds-panel:visible .sds-title-text').innerText(), 'Coarser clusters');
      assert.equal(await page.locator('.sds-panel:visible .sds-history-row.sds-selected .sds-row-title').innerText(), 'Coarser clusters');
      assert.match(await page.locator('.sds-panel:visible .sds-tree-row.sds-tree-selected').innerText(), /Coarser clusters/);
      // the corrupt folder left out of the tree is named in its line
      // (the moved panel's tree reply may still be on its way: wait for its line, then read it whole)
      const leftOutLine = page.locator('.sds-panel:visible .sds-tree-status');
      await leftOutLine.filter({ hasText: 'Left out of the tree' }).waitFor({ timeout: 30000 });
      assert.equal(await leftOutLine.innerText(), 'Left out of the tree: corrupt-version');
      await shot(page, 'issue29-back');
      await sizePanel(page, 420);
      await shot(page, 'issue29-back-420');
      await page.setViewportSize({ width: 1400, height: 900 });
      // Back: the version left, in the same panel
      await page.locator('.sds-panel:visible .sds-back').click();
      await page.locator('.sds-panel:visible .sds-title-text').filter({ hasText: title }).waitFor({ timeout: 30000 });
      assert.equal(await page.locator('.sds-panel:visible .sds-back').isHidden(), true);
      // forward again, then the first folder from the file browser: a panel of its own for it
      await page.locator('.sds-panel:visible .sds-tree-row', { hasText: 'Coarser clusters' }).click();
      await page.waitForFunction(() => document.querySelector('.lm-DockPanel .lm-TabBar-tab.lm-mod-current')?.textContent?.includes('Coarser clusters'), null, { timeout: 30000 });
      await item(page, ownTop).dblclick();
      await page.waitForFunction(t => document.querySelector('.lm-DockPanel .lm-TabBar-tab.lm-mod-current')?.textContent?.includes(t), title, { timeout: 30000 });
      const tabs = await page.locator('.lm-DockPanel .lm-TabBar-tabLabel').allInnerTexts();
      assert.ok(tabs.includes('Coarser clusters') && tabs.includes(title), tabs.join(', '));
      assert.deepEqual(page.errors, []);
    } finally {
      await page.close();
    }
    // dark: the titles and the unreadable mark in the file browser, the one line, the Back
    await inThemes(['dark'], async dark => {
      await openListing(dark, 'nav29b/datasets');
      await dark.waitForSelector('.jp-DirListing-item.sds-version-broken', { timeout: 30000 });
      await wearsTheme(dark);
      await dark.locator('.jp-DirListing').screenshot({ path: join(SHOTS, 'issue29-file-browser-titles-dark.png') });
      await dark.keyboard.press('Control+Shift+c');
      await dark.locator('.lm-CommandPalette-input').fill('Open version');
      await dark.keyboard.press('Enter');
      await dark.locator('.jp-Dialog input').fill('nav29b/datasets/corrupt-version');
      await dark.keyboard.press('Enter');
      await dark.locator('.sds-panel:visible .sds-banner').waitFor({ timeout: 30000 });
      assert.deepEqual(await axeViolations(dark, '.sds-panel:not(.lm-mod-hidden) .sds-app'), [], 'the one line, dark');
      await shot(dark, 'issue29-not-a-version-dark');
      await item(dark, ownTop).dblclick();
      await dark.waitForSelector('.sds-panel:visible .sds-tree-row', { timeout: 30000 });
      await dark.locator('.sds-panel:visible .sds-tree-row', { hasText: 'Coarser clusters' }).click();
      await dark.locator('.sds-panel:visible .sds-back:not([hidden])').waitFor({ timeout: 30000 });
      await settled(dark);
      await shot(dark, 'issue29-back-dark');
      assert.deepEqual(dark.errors, []);
    });
  });
});
