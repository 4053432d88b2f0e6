// UI flows of the Versions sidebar and the history and tree in a real JupyterLab: the issue 29 and
// 41 flows, in both themes and narrow. Notebook 7, annotation and the wide panel are in
// lab-annotation.test.mjs. The groups run side by side, each on its own server (package.json's
// test:ui); the shared set-up and steps are in harness.mjs.

import { cpSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  SHOTS,
  TOKEN,
  api,
  axeViolations,
  base,
  dragSidebarTo,
  inThemes,
  item,
  layoutSaved,
  nav29bDemo,
  newPage,
  openListing,
  pollIntervals,
  python,
  settled,
  shot,
  sizePanel,
  skip,
  smallDemo,
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

describe('JupyterLab version browser: the sidebar, the history and the tree', { skip, timeout: 1800000 }, () => {
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
    const ownTop = smallDemo('sidebar').slice(join(work, 'root').length + 1);
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
    const ownTop = smallDemo('long41');
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
