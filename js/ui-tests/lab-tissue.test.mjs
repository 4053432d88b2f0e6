// UI flows of the spatial view in a real JupyterLab: pan, zoom, hover and pin, both render tiers,
// image tiles, the overview a narrow view asks for, the first tissue over the wire, outlines and
// transcripts. The groups run side by side, each on its own server (package.json's test:ui); the
// shared set-up and steps are in harness.mjs.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  SHOTS,
  TIERS,
  TOKEN,
  api,
  axeViolations,
  base,
  buildXeniumDemos,
  canvasChecksum,
  changes,
  checkAxe,
  closeLayers,
  exportFile,
  here,
  idleDrawsNothing,
  inViewCount,
  item,
  narrowTo,
  narrowed,
  newPage,
  openFigures,
  openLayers,
  openListing,
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
  until,
  useTheme,
  waitForTissue,
  xeniumDemo
} from './harness.mjs';
/**
 * Every slider of an open Layers menu reads alike by eye and by a screen reader: its visible name (shown
 * whole inside the menu) is its accessible name, and the value written beside it is its aria-valuetext.
 * Answers the sliders' names and value texts.
 */
async function slidersReadAlike(menu, where) {
  const rows = await menu.locator('.sds-slider').evaluateAll(sliders =>
    sliders.map(row => {
      const [name, input, text] = ['.sds-slider-name', 'input[type="range"]', '.sds-slider-value'].map(sel => row.querySelector(sel));
      const box = row.closest('.sds-layers-menu').getBoundingClientRect();
      const seen = el => {
        const r = el.getBoundingClientRect();
        return r.width > 0 && r.left >= box.left - 1 && r.right <= box.right + 1 && el.scrollWidth <= el.clientWidth + 1;
      };
      return { name: name.textContent, text: text.textContent, valuetext: input.getAttribute('aria-valuetext'), labels: name.htmlFor === input.id, seen: seen(name) && seen(text) };
    })
  );
  assert.ok(rows.length > 0, `${where}: the menu has sliders`);
  for (const row of rows) {
    assert.ok(row.labels && row.seen && row.text && row.text === row.valuetext, `${where}: ${JSON.stringify(row)}`);
    assert.ok((await menu.getByRole('slider', { name: row.name, exact: true }).count()) > 0, `${where}: a slider named ${row.name}`);
  }
  return rows;
}

/**
 * Wait until deck stage `stage` is on screen unscrolled: at least 100 px of the drawing (all of it
 * when shorter) inside the panel's visible box, not below the fold under the figure's controls;
 * with `whole`, the figure's card is scrolled to the panel's top first and then the whole drawing
 * must be in view, under at most 140 px of title and controls (two lines of toolbar: the layers'
 * rows are in their menu). `what` names the case in the failure, with the boxes measured.
 */
async function tissueInView(stage, what, whole = false) {
  if (whole) {
    await stage.evaluate(el => el.closest('.sds-figure').scrollIntoView({ block: 'start' }));
  }
  const seen = () =>
    stage.evaluate(el => {
      const r = el.getBoundingClientRect();
      const p = el.closest('.sds-panel').getBoundingClientRect();
      const bar = el.closest('.sds-spatial').querySelector('.sds-spatial-bar').getBoundingClientRect();
      const card = el.closest('.sds-figure').getBoundingClientRect();
      return { top: r.top, bottom: r.bottom, height: r.height, panelTop: p.top, panelBottom: Math.min(p.bottom, innerHeight), toolbar: bar.height, above: r.top - card.top };
    });
  try {
    await stage.page().waitForFunction(
      ([el, all]) => {
        const r = el.getBoundingClientRect();
        const p = el.closest('.sds-panel').getBoundingClientRect();
        const bottom = Math.min(p.bottom, innerHeight);
        const shown = Math.min(r.bottom, bottom) - Math.max(r.top, p.top);
        const above = r.top - el.closest('.sds-figure').getBoundingClientRect().top;
        return r.height > 100 && (all ? r.top >= p.top - 1 && r.bottom <= bottom + 1 && above <= 140 : shown >= 100);
      },
      [await stage.elementHandle(), whole],
      { timeout: 20000 }
    );
  } catch {
    assert.fail(`${what}: the tissue is not ${whole ? 'wholly in view with its figure at the top' : 'in view on opening'}: ${JSON.stringify(await seen())}`);
  }
}

/** Scroll the panel that holds `locator` back to its top (as on opening). */
async function scrollPanelTop(locator) {
  await locator.evaluate(el => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      if (p.scrollTop > 0) p.scrollTop = 0;
    }
  });
}

/**
 * The layers fold into one Layers menu (no layer checkbox left in the toolbar): at panels of 1,400, 760
 * and 420 px the tissue is in view on opening, the menu opens from the keyboard (Tab, Enter), fits the
 * figure, passes axe, its sliders read alike by eye and aloud, the cells' opacity moves by keyboard and
 * Space on Cells changes the drawing (420 px), and Escape gives the focus back.
 * Run on a page just opened on the figures of the small demo, before its camera is moved.
 */
async function layersMenuAtWidths(page, figure, stage, mode) {
  const button = figure.locator('.sds-layers-toggle');
  const menu = figure.locator('.sds-layers-menu');
  for (const width of [1400, 760, 420]) {
    await sizePanel(page, width);
    await scrollPanelTop(figure);
    await shot(page, `layers-menu-${mode}-${width}-opening`);
    await tissueInView(stage, `${mode} at ${width} px`);
    await tissueInView(stage, `${mode} at ${width} px`, true);
    // no layer row left in the toolbar: one button for them all
    assert.equal(await figure.locator('.sds-spatial-bar input[type="checkbox"]').count(), 0, 'no layer checkbox in the toolbar');
    await shot(page, `layers-menu-${mode}-${width}-closed`);
    // keyboard: Tab from the button before it reaches the menu's button; Enter opens it, the focus inside
    await button.locator('xpath=preceding-sibling::button[1]').focus();
    await page.keyboard.press('Tab');
    await page.waitForFunction(() => document.activeElement?.classList.contains('sds-layers-toggle'));
    await page.keyboard.press('Enter');
    await menu.waitFor({ state: 'visible' });
    assert.equal(await button.getAttribute('aria-expanded'), 'true');
    await page.waitForFunction(() => document.activeElement?.closest('.sds-layers-menu') !== null);
    // the menu and each row inside the figure, read whole
    const fit = await figure.evaluate(el => {
      const box = el.getBoundingClientRect();
      const m = el.querySelector('.sds-layers-menu');
      const r = m.getBoundingClientRect();
      const rows = [...m.querySelectorAll('.sds-layer-group')].map(g => [g.getAttribute('aria-label'), g.scrollWidth <= g.clientWidth + 1]);
      return { inside: r.left >= box.left - 1 && r.right <= box.right + 1, menuWhole: m.scrollWidth <= m.clientWidth + 1, rows };
    });
    assert.ok(fit.inside && fit.menuWhole && fit.rows.every(([, whole]) => whole), `${mode} ${width} px: the menu fits: ${JSON.stringify(fit)}`);
    await shot(page, `layers-menu-${mode}-${width}-open`);
    await checkAxe(page, `the Layers menu open (${mode}, ${width} px)`);
    await slidersReadAlike(menu, `${mode} ${width} px`);
    if (width === 420) {
      // the cells' opacity by keyboard: the value beside the slider and the one read out move together
      const opacity = menu.getByRole('slider', { name: 'Cell opacity', exact: true });
      await opacity.focus();
      await page.keyboard.press('ArrowLeft');
      await until(() => slidersReadAlike(menu, 'after ArrowLeft'), rows => rows.some(r => r.name === 'Cell opacity' && r.text === '95%'), 'the cell opacity reads 95%');
      await shot(page, `layers-menu-${mode}-420-opacity-95`);
      await page.keyboard.press('ArrowRight');
      await until(() => slidersReadAlike(menu, 'after ArrowRight'), rows => rows.some(r => r.name === 'Cell opacity' && r.text === '100%'), 'the cell opacity reads 100% again');
      // Space on the focused Cells box turns the cells off: the drawing changes; on again
      const before = await canvasChecksum(stage.locator('.sds-deck-canvas'));
      const cells = menu.getByRole('checkbox', { name: 'Cells', exact: true });
      await cells.focus();
      await page.keyboard.press('Space');
      await page.waitForFunction(el => !el.checked, await cells.elementHandle());
      await page.waitForFunction(
        ([el, sum]) => {
          const c = document.createElement('canvas');
          [c.width, c.height] = [el.width, el.height];
          const ctx = c.getContext('2d');
          ctx.drawImage(el, 0, 0);
          const d = ctx.getImageData(0, 0, c.width, c.height).data;
          let s = 0;
          for (let i = 0; i < d.length; i += 4) s += d[i] * 3 + d[i + 1] * 5 + d[i + 2] * 7;
          return s !== sum;
        },
        [await stage.locator('.sds-deck-canvas').elementHandle(), before],
        { timeout: 20000 }
      );
      // what the view says agrees: a line above the legend says the cells are hidden
      await figure.locator('.sds-legend-note').waitFor({ state: 'visible' });
      await shot(page, `layers-menu-${mode}-420-cells-off`);
      await page.keyboard.press('Space');
      await page.waitForFunction(el => el.checked, await cells.elementHandle());
      await figure.locator('.sds-legend-note').waitFor({ state: 'hidden' });
    }
    // Escape closes it and gives the focus back to its button
    await page.keyboard.press('Escape');
    await menu.waitFor({ state: 'hidden' });
    assert.equal(await button.getAttribute('aria-expanded'), 'false');
    await page.waitForFunction(() => document.activeElement?.classList.contains('sds-layers-toggle'));
  }
}

describe('JupyterLab version browser: the spatial view, its tiers, tiles, outlines and transcripts', { skip, timeout: 1800000 }, () => {
  before(async () => {
    await startLab();
    // the Xenium-like demos the flows below read, built in one Python process while the first flows run
    if (!narrowed) {
      buildXeniumDemos([
        ['tiles', 1500, 4096],
        ['overview', 300, 2048],
        ['bytes', 6000, 2048],
        ['outlines', 6000, 2048],
        ['transcripts', 2000, 1024]
      ]);
    }
  });
  after(stopLab);

  it('zooming into an image pyramid draws tiles of a finer level over the overview; channels recolor them', async () => {
    // a small Xenium-like stack: a 4,096 px, 3-channel pyramid whose overview is level 1 (2,048 px)
    const name = await xeniumDemo('tiles', 1500, 4096);
    await setSetting('@jupyterlab/apputils-extension:themes', { theme: 'JupyterLab Light' });
    const page = await newPage();
    try {
      await openFigures(page, 'tiles/datasets', name);
      const stage = page.locator('.sds-deck-stage').first();
      const figure = page.locator('.sds-spatial').first();
      await waitForTissue(page, '[data-tile-levels="5"]');
      // cells off, so the pixels below are the image's
      await setLayer(figure, 'Cells', false);
      // the camera at one screen pixel per level-0 pixel, in the tissue's middle
      const levels = 5;
      await figure.evaluate(el => {
        const s = el.sdsSpatial.stage;
        const [x0, y0, x1, y1] = el.sdsSpatial.payload.image.bounds;
        s.apply({ target: [(x0 + x1) * 0.45, (y0 + y1) * 0.55], zoom: Math.log2(4096 / (x1 - x0)) });
      });
      await page.waitForSelector('.sds-deck-stage[data-tile-level="0"]', { timeout: 60000 });
      const tiles = Number(await stage.getAttribute('data-tiles'));
      assert.ok(tiles >= 1 && tiles <= 16, `level-0 tiles on screen: ${tiles}`);
      assert.equal(await figure.getAttribute('data-tile-error'), null);
      const measured = await page.evaluate(() => performance.getEntriesByName('sds:tiles', 'measure').map(m => m.detail));
      assert.ok(measured.some(d => d.level === 0 && d.tiles === tiles), JSON.stringify(measured));
      assert.equal(levels, Number(await stage.getAttribute('data-tile-levels')));
      // the drawn frame (kept: preserveDrawingBuffer) shows the image's channels in their colors
      const pixels = async () =>
        page.evaluate(() => {
          const c = document.querySelector('.sds-deck-canvas');
          const copy = document.createElement('canvas');
          copy.width = c.width;
          copy.height = c.height;
          const ctx = copy.getContext('2d');
          ctx.drawImage(c, 0, 0);
          const d = ctx.getImageData(Math.floor(c.width / 4), Math.floor(c.height / 4), Math.floor(c.width / 2), Math.floor(c.height / 2)).data;
          let lit = 0, bright = 0, red = 0, green = 0, blue = 0;
          for (let i = 0; i < d.length; i += 4) {
            if (d[i] + d[i + 1] + d[i + 2] > 30) lit++;
            if (Math.max(d[i], d[i + 1], d[i + 2]) > 190) bright++;
            red += d[i];
            green += d[i + 1];
            blue += d[i + 2];
          }
          const n = d.length / 4;
          return { lit: lit / n, bright: bright / n, red: red / n, green: green / n, blue: blue / n };
        });
      const drawn = await pixels();
      await shot(page, 'tiles-light');
      // the synthetic tissue: nuclei, cell outlines and RNA over a black background
      assert.ok(drawn.lit > 0.05 && drawn.blue > 5, `the image is drawn: ${JSON.stringify(drawn)}`);
      const found = await axeViolations(page, '.sds-figures');
      assert.deepEqual(found, [], 'axe (tiles, light)');
      // the SVG export (the service's renderer) holds the image, read at the level its print size needs
      const card = page.locator('.sds-figure-canvas').first();
      const download = await exportFile(card.locator('.sds-figure-tools button', { hasText: /^SVG$/ }));
      const svgText = readFileSync(await download.path(), 'utf8');
      const images = await page.evaluate(text => new DOMParser().parseFromString(text, 'image/svg+xml').querySelectorAll('image').length, svgText);
      assert.ok(images >= 1, `the image in the SVG: ${images} images`);
      // a channel turned off: the cached tiles are recolored, not asked for again
      const asked = () => page.evaluate(() => performance.getEntriesByType('resource').filter(e => e.name.includes('/api/image_tile')).length);
      const before = await asked();
      const toggles = figure.locator('.sds-channel-on');
      const count = await toggles.count();
      for (let i = 0; i < count; i++) await toggles.nth(i).uncheck();
      await settled(page);
      await until(pixels, p => p.lit < 0.01, 'every channel off leaves the image black');
      await toggles.nth(0).check();
      await settled(page);
      await until(pixels, p => p.lit > 0.01 && p.lit < drawn.lit, `one channel: fewer pixels lit than all three (${drawn.lit})`);
      assert.equal(await asked(), before, 'recoloring asks for no tile');
      // the cells at this zoom are outlined polygons (geometry): over the black image their
      // fills light the frame, and their outlines, at full opacity, are brighter than any fill
      // can be (deck shades a layer's opacity 0.45 as 0.45^(1/2.2) = 0.70: no fill channel
      // passes 178 over black, while red, orange and cyan outlines pass 190)
      await toggles.nth(0).uncheck();
      await setLayer(figure, 'Cells', true);
      await page.waitForSelector('.sds-deck-stage[data-lod="geometry"][data-cells="outlined"]', { timeout: 30000 });
      await settled(page);
      const cells = await until(pixels, p => p.lit > 0.2, 'outlined cells drawn over a black image');
      assert.ok(cells.bright > 0.005, `the outlines are drawn: ${JSON.stringify(cells)}`);
      await shot(page, 'tiles-cells-outlined');
      await setLayer(figure, 'Cells', false);
      for (let i = 0; i < count; i++) await toggles.nth(i).check();
      // dark theme and a narrow panel: the tiles stay
      await useTheme(page, 'JupyterLab Dark');
      await shot(page, 'tiles-dark');
      assert.deepEqual(await axeViolations(page, '.sds-figures'), [], 'axe (tiles, dark)');
      await narrowTo(page, 700);
      await shot(page, 'tiles-narrow');
      assert.equal(await figure.getAttribute('data-tile-error'), null);
    } finally {
      await setSetting('@jupyterlab/apputils-extension:themes', { theme: 'JupyterLab Light' });
      await page.close();
    }
  });

  it('the spatial view pans, zooms, hovers, pins and toggles layers; axe finds nothing serious in light and dark', async () => {
    const axe = readFileSync(join(here, '..', 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
    const audit = async (page, name) => {
      await page.addScriptTag({ content: axe });
      const found = await page.evaluate(async () => {
        const r = await window.axe.run(document.querySelector('.sds-figures'), { resultTypes: ['violations'] });
        return r.violations
          .filter(v => v.impact === 'serious' || v.impact === 'critical')
          .map(v => `${v.id}: ${v.nodes.map(n => n.target.join(' ')).slice(0, 3).join(', ')}`);
      });
      assert.deepEqual(found, [], `axe (${name})`);
    };
    await setSetting('@jupyterlab/apputils-extension:themes', { theme: 'JupyterLab Light' });
    const page = await newPage();
    try {
      await openListing(page);
      await item(page, top.split('/').pop()).dblclick();
      await page.waitForSelector('.sds-history-row');
      await page.locator('.sds-tab[data-tab="figures"]').click();
      const stage = page.locator('.sds-deck-stage').first();
      await page.waitForSelector('.sds-deck-stage[data-live="true"]', { timeout: 60000 });
      await page.waitForSelector('.sds-chart svg', { timeout: 60000 });
      await settled(page);
      await shot(page, 'spatial-light');
      await audit(page, 'light');
      const state = async () => ({
        zoom: Number(await stage.getAttribute('data-zoom')),
        target: (await stage.getAttribute('data-target')).split(',').map(Number)
      });
      const figure = page.locator('.sds-spatial').first();
      // the caption counts the cells in view, of the saved region
      await page.waitForFunction(() => document.querySelector('.sds-canvas-inview')?.textContent?.includes('in view'));
      const box = await stage.boundingBox();
      const cx = box.x + box.width / 2;
      const cy = box.y + box.height / 2;
      // drag pans: the target moves against the drag
      const s0 = await state();
      await page.mouse.move(cx, cy);
      await page.mouse.down();
      await page.mouse.move(cx + 60, cy + 30, { steps: 6 });
      await page.mouse.up();
      await settled(page);
      const s1 = await state();
      assert.ok(s1.target[0] < s0.target[0] - 1 && s1.target[1] < s0.target[1] - 1, `drag: ${JSON.stringify([s0, s1])}`);
      assert.equal(s1.zoom, s0.zoom);
      // the wheel zooms in
      await page.mouse.move(cx, cy);
      await page.mouse.wheel(0, -400);
      await until(state, s => s.zoom > s1.zoom, `the wheel zooms in from ${s1.zoom}`);
      await settled(page);
      const s2 = await state();
      // the buttons: zoom out, Fit frames all cells, Saved view comes back
      await figure.locator('.sds-zoom-out').click();
      assert.ok((await state()).zoom < s2.zoom);
      await figure.locator('.sds-fit').click();
      await page.waitForFunction(() => /^· 26 in view/.test(document.querySelector('.sds-canvas-inview')?.textContent ?? ''));
      await figure.locator('.sds-saved-view').click();
      const saved = await state();
      assert.ok(Math.abs(saved.zoom - s0.zoom) < 1e-3 && Math.abs(saved.target[0] - s0.target[0]) < 1e-3);
      // the keyboard: focus the view, arrows pan, + zooms
      await page.locator('.sds-deck-canvas').first().focus();
      await page.keyboard.press('ArrowRight');
      await until(state, s => s.target[0] > saved.target[0], 'ArrowRight pans');
      await page.keyboard.press('+');
      await until(state, s => s.zoom > saved.zoom, '+ zooms');
      // zoomed in past the overview: blobs' image has one level, the overview itself, so no tile is asked for
      for (let i = 0; i < 4; i++) await page.keyboard.press('+');
      await page.waitForSelector('.sds-deck-stage[data-tile-levels="1"]', { timeout: 30000 });
      await settled(page);
      assert.ok([null, '-1'].includes(await stage.getAttribute('data-tile-wanted')), 'no tile level wanted');
      assert.equal(await stage.getAttribute('data-tile-level'), null);
      assert.equal(await figure.getAttribute('data-tile-error'), null);
      await shot(page, 'spatial-zoomed');
      await figure.locator('.sds-saved-view').click();
      // hovering a cell shows its ID (the obs name, from the service) and its color-by value
      const at = await figure.evaluate(el => el.sdsSpatial.screenOf(0));
      assert.ok(at, 'cell 0 is in the saved view');
      const sbox = await stage.boundingBox();
      await page.mouse.move(sbox.x + at[0], sbox.y + at[1]);
      await page.waitForFunction(() => /^ID /.test(document.querySelector('.sds-tooltip .sds-tooltip-id')?.textContent ?? ''), null, { timeout: 20000 });
      const tip = await figure.locator('.sds-tooltip').innerText();
      const depth = await page.locator('.sds-history-row[aria-selected="true"]').getAttribute('data-depth');
      const figureId = await page.locator('.sds-figure-canvas').first().getAttribute('data-figure');
      const row = await (await api(`/sds-jupyter/api/cell?path=${encodeURIComponent(top)}&version=${depth}&figure=${encodeURIComponent(figureId)}&index=0`)).json();
      assert.ok(tip.includes(`ID ${row.name}`), `tooltip ${JSON.stringify(tip)} vs ${JSON.stringify(row)}`);
      assert.match(tip, /clusters: \d/, 'the color-by value');
      await shot(page, 'spatial-hover');
      // issue 40, item 4: a wheel zoom under a resting pointer hovers the cell now under it, not the one of before
      await page.mouse.move(sbox.x + at[0] + 5, sbox.y + at[1] + 5);
      const zoomed = Number(await stage.getAttribute('data-zoom'));
      await page.mouse.wheel(0, -800);
      await until(async () => Number(await stage.getAttribute('data-zoom')), z => z > zoomed, 'the wheel zooms in');
      await settled(page);
      const after = await figure.evaluate((el, p) => {
        const stage = el.sdsSpatial.stage;
        const r = stage.node.getBoundingClientRect();
        return { hovered: stage.hovered, under: stage.pick(p[0] - r.left, p[1] - r.top), zoom: stage.viewState.zoom };
      }, [sbox.x + at[0] + 5, sbox.y + at[1] + 5]);
      assert.equal(after.hovered, after.under, `after a wheel zoom the hover is the cell under the pointer: ${JSON.stringify(after)}`);
      if (after.hovered < 0) {
        assert.equal(await figure.locator('.sds-tooltip').isVisible(), false, 'no cell under the pointer: no tooltip');
      }
      await figure.locator('.sds-saved-view').click();
      // click pins the cell and lists its obs row
      await page.mouse.click(sbox.x + at[0], sbox.y + at[1]);
      await page.waitForSelector('.sds-cell-pin .sds-cell-row tr', { timeout: 20000 });
      assert.ok((await figure.locator('.sds-cell-pin th').count()) >= 2);
      // layers: cells off, the image off, a category hidden: each changes the drawing
      const pixels = () => canvasChecksum(page.locator('.sds-deck-canvas').first());
      await page.mouse.move(box.x + 2, box.y + box.height + 200);
      await changes(page, pixels, () => setLayer(figure, 'Cells', false), 'cells off changes the drawing');
      await setLayer(figure, 'Cells', true);
      await changes(page, pixels, () => setLayer(figure, 'Image', false), 'image off changes the drawing');
      await setLayer(figure, 'Image', true);
      // each image channel toggles on its own (planes from the channels request, blended here)
      await page.waitForSelector('.sds-channel-on', { timeout: 30000 });
      const channel = figure.locator('.sds-channel-on').first();
      assert.ok(await channel.isChecked());
      await changes(page, pixels, () => channel.uncheck(), 'a channel off changes the drawing');
      await channel.check();
      await changes(page, pixels, () => figure.locator('.sds-contrast').nth(1).fill('60'), 'a contrast limit changes the drawing');
      await shot(page, 'spatial-channels');
      await figure.locator('.sds-contrast').nth(1).fill('255');
      const toggle = figure.locator('.sds-legend-toggle').first();
      await changes(page, pixels, () => toggle.click(), 'a hidden category changes the drawing');
      assert.equal(await toggle.getAttribute('aria-pressed'), 'false');
      await shot(page, 'spatial-layers');
      await toggle.click();
      // the Leiden version: the markers chart colors clusters as the canvas legend does
      await page.locator('.sds-history-row[data-depth="2"]').click();
      await page.waitForSelector('.sds-figure-chart .sds-chart svg .mark-rect path', { timeout: 60000 });
      await page.waitForSelector('.sds-figure-canvas .sds-legend-toggle', { timeout: 60000 });
      const colors = await page.evaluate(() => {
        const hex = css => {
          const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(css);
          return m ? '#' + m.slice(1, 4).map(v => Number(v).toString(16).padStart(2, '0')).join('') : css.toLowerCase();
        };
        const legend = {};
        for (const b of document.querySelectorAll('.sds-figure-canvas .sds-legend-toggle')) {
          legend[b.textContent] = hex(getComputedStyle(b.querySelector('.sds-swatch')).backgroundColor);
        }
        const bars = [...document.querySelectorAll('.sds-figure-chart .mark-rect path')].map(p => hex(p.getAttribute('fill') ?? ''));
        return { legend, bars };
      });
      assert.ok(new Set(colors.bars).size >= 2, JSON.stringify(colors));
      for (const bar of colors.bars) {
        assert.ok(Object.values(colors.legend).includes(bar), `bar color ${bar} is a cluster color of the canvas: ${JSON.stringify(colors)}`);
      }
      await shot(page, 'spatial-chart-colors');
      // a live theme switch: the charts redraw with the dark theme's text colors
      const labelLuminance = () =>
        page.evaluate(() => {
          const text = document.querySelector('.sds-chart svg .role-axis-label text');
          if (!text) return null;
          // the fill as the browser resolves it (vega writes hex, rgb() or rgba() from the theme)
          const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(getComputedStyle(text).fill);
          if (!m) return null;
          const [r, g, b] = m.slice(1).map(v => Number(v) / 255);
          return 0.2126 * r + 0.7152 * g + 0.0722 * b;
        });
      const lightLum = await labelLuminance();
      assert.ok(lightLum !== null && lightLum < 0.5, `light theme labels ${lightLum}`);
      await useTheme(page, 'JupyterLab Dark');
      await page.waitForFunction(() => [...document.querySelectorAll('.sds-chart')].every(c => c.dataset.theme === 'JupyterLab Dark'), null, { timeout: 30000 });
      const darkLum = await labelLuminance();
      assert.ok(darkLum !== null && darkLum > 0.5, `dark theme labels ${darkLum}`);
      await settled(page);
      await shot(page, 'spatial-dark');
      await audit(page, 'dark');
      // a narrow panel frames the same region: the same cells in view
      await page.locator('.sds-history-row').first().click();
      await page.waitForSelector('.sds-deck-stage[data-live="true"]', { timeout: 60000 });
      await page.waitForFunction(() => document.querySelector('.sds-spatial')?.dataset.inView);
      const before = String(await inViewCount(figure));
      await narrowTo(page, 760);
      await figure.locator('.sds-saved-view').click();
      await settled(page);
      assert.equal(String(await inViewCount(figure)), before, 'the saved region at a narrow width');
      await shot(page, 'spatial-narrow');
      assert.deepEqual(page.errors, []);
    } finally {
      await page.close();
      await setSetting('@jupyterlab/apputils-extension:themes', { theme: 'JupyterLab Light' });
    }
  });

  it('both render tiers draw, hover, pin and keep the zoom limits; ?sds-tier=gpu forces the stock layers; the layers fold into one Layers menu, the tissue in view at 1,400, 760 and 420 px, light and dark, the menu by keyboard, its sliders read alike, Escape, axe', async () => {
    // Under SwiftShader the probe says "software"; the GPU tier (stock layers, GPU picking) is forced
    for (const [tier, query] of TIERS) {
      for (const [theme, width] of [['JupyterLab Light', 1400], ['JupyterLab Dark', 760]]) {
        await setSetting('@jupyterlab/apputils-extension:themes', { theme });
        const page = await newPage();
        try {
          await page.setViewportSize({ width, height: 900 });
          await openListing(page, 'datasets', query);
          await item(page, top.split('/').pop()).dblclick();
          await page.waitForSelector('.sds-history-row');
          await page.locator('.sds-tab[data-tab="figures"]').click();
          await page.waitForSelector('.sds-deck-stage[data-live="true"]', { timeout: 60000 });
          const stage = page.locator('.sds-deck-stage').first();
          const figure = page.locator('.sds-spatial').first();
          assert.equal(await stage.getAttribute('data-tier'), tier);
          // the whole drawing in view on opening (the layers' rows folded into their menu), unscrolled
          await tissueInView(stage, `${tier} at ${width} px`);
          await settled(page);
          if (width === 1400) {
            // left alone, the view asks for no frame at all (then the hover below wakes it)
            await idleDrawsNothing(stage, `${tier} at ${width} px`);
          }
          const mode = theme.endsWith('Dark') ? 'dark' : 'light';
          const name = `spatial-tier-${tier}-${mode}-${width}`;
          await shot(page, name);
          if (tier === 'software') {
            // the Layers menu in both themes, on this page before its camera moves; then back to this width
            await layersMenuAtWidths(page, figure, stage, mode);
            await narrowTo(page, width);
            await tissueInView(stage, `${tier} back at ${width} px`);
          }
          // the drawing holds the cells: turning them off changes its pixels
          const pixels = () => canvasChecksum(page.locator('.sds-deck-canvas').first());
          await changes(page, pixels, () => setLayer(figure, 'Cells', false), `${tier}: cells off changes the drawing`);
          await setLayer(figure, 'Cells', true);
          await settled(page);
          // hover (the GPU tier: deck's picking names the cell) shows the cell's ID; a click pins it
          const at = await figure.evaluate(el => el.sdsSpatial.screenOf(0));
          assert.ok(at, 'cell 0 is in the saved view');
          const box = await stage.boundingBox();
          await page.mouse.move(box.x + at[0], box.y + at[1]);
          await page.waitForFunction(() => /^ID /.test(document.querySelector('.sds-tooltip .sds-tooltip-id')?.textContent ?? ''), null, { timeout: 20000 });
          await page.mouse.click(box.x + at[0], box.y + at[1]);
          await page.waitForSelector('.sds-cell-pin .sds-cell-row tr', { timeout: 20000 });
          // zoom limits: out no further than the whole tissue fitted; in until a cell fills the view
          await figure.locator('.sds-fit').click();
          const fitted = Number(await stage.getAttribute('data-zoom'));
          await page.locator('.sds-deck-canvas').first().focus();
          await page.keyboard.press('-'); // the stage takes its keys at once (no transition): its zoom is read after the press
          await settled(page);
          assert.equal(Number(await stage.getAttribute('data-zoom')), fitted, `${tier}: no zooming out past the fit`);
          await page.waitForFunction(() => /in view/.test(document.querySelector('.sds-canvas-inview')?.textContent ?? ''));
          let zoom = fitted;
          for (let i = 0; i < 60; i++) {
            await page.keyboard.press('+');
            const next = Number(await stage.getAttribute('data-zoom'));
            if (next === zoom) break;
            zoom = next;
          }
          assert.ok(zoom > fitted + 1 && zoom < fitted + 12, `${tier}: zoomed in from ${fitted} to a limit ${zoom}`);
          await settled(page);
          const inView = await inViewCount(figure);
          assert.ok(inView <= 4, `${tier}: ${inView} cells in view at the deepest zoom`);
          await shot(page, `${name}-deepest`);
          assert.deepEqual(page.errors, []);
        } finally {
          await page.close();
        }
      }
    }
    await setSetting('@jupyterlab/apputils-extension:themes', { theme: 'JupyterLab Light' });
  });

  it('issue 39: a narrow view asks the image overview at the level it can show; zoomed in, tiles only for what is on screen', async () => {
    const name = await xeniumDemo('overview', 300, 2048);
    const page = await newPage();
    try {
      await page.setViewportSize({ width: 760, height: 900 }); // a narrow panel from the first request on
      await page.goto(`${base}/lab/tree/overview/datasets?token=${TOKEN}&reset`);
      await page.locator('.jp-DirListing-item.sds-version-item', { hasText: name }).first().waitFor({ timeout: 60000 });
      await settled(page);
      await item(page, name).dblclick();
      await page.waitForSelector('.sds-history-row', { timeout: 60000 });
      const tab = page.locator('.sds-tab[data-tab="figures"]').first();
      if ((await tab.getAttribute('aria-selected')) !== 'true') {
        await tab.click();
      }
      await page.locator('.sds-figure-canvas').first().waitFor({ timeout: 60000 });
      await page.locator('.sds-figure-canvas').first().scrollIntoViewIfNeeded();
      const figure = page.locator('.sds-spatial').first();
      await page.waitForSelector('.sds-deck-stage[data-live="true"]', { timeout: 90000 });
      await page.waitForFunction(() => document.querySelector('.sds-deck-stage')?.dataset.tileLevels, null, { timeout: 60000 });
      await settled(page);
      const api = () =>
        page.evaluate(() =>
          performance.getEntriesByType('resource')
            .filter(e => e.name.includes('/sds-jupyter/api/'))
            .map(e => ({ request: e.name.split('/api/')[1].split('?')[0], params: Object.fromEntries(new URL(e.name).searchParams), decoded: e.decodedBodySize }))
        );
      // what the view can show: the figure's box in device pixels (asked before the drawing is laid out: the
      // drawing, beside its legend, is at most that wide), across the figure's bounds; the pyramid as the reply names it
      const seen = await figure.evaluate(el => {
        const view = el.sdsSpatial;
        const ratio = Math.min(2, devicePixelRatio);
        const box = el.closest('.sds-figure-body').getBoundingClientRect().width * ratio;
        const drawing = view.stage.node.getBoundingClientRect().width * ratio;
        return { width: box, drawing, bounds: view.payload.bounds, image: view.payload.image };
      });
      const overview = (await api()).filter(e => e.request === 'channels');
      assert.equal(overview.length, 1, JSON.stringify(overview));
      const level = Number(overview[0].params.level);
      const { levels } = seen.image;
      assert.ok(level >= 2 && level === seen.image.level, `a ${seen.width} px view asked level ${overview[0].params.level} of ${JSON.stringify(levels.map(l => l.width))}`);
      const perUnit = seen.width / (seen.bounds[2] - seen.bounds[0]);
      const pixel = lv => perUnit / (lv.width / (lv.bounds[2] - lv.bounds[0])); // screen px per image px, fitted
      assert.ok(pixel(levels[level]) <= 1.5 && (level + 1 >= levels.length || pixel(levels[level + 1]) > 1.5), `level ${level} for ${seen.width} px`);
      assert.ok(seen.drawing <= seen.width + 1, `the drawing (${seen.drawing} px) within the box the level was chosen for`);
      // three channels of that level's pixels: a quarter (or less) of the default 1,024 px overview
      const side = levels[level].width * levels[level].height;
      assert.ok(overview[0].decoded < 3 * side + 4096 && overview[0].decoded <= (3 * 1024 * 1024) / 4 + 4096, `${overview[0].decoded} bytes`);
      assert.deepEqual((await api()).filter(e => e.request === 'image_tile'), [], 'fitted, the overview is sharp enough: no tile');
      // the image is drawn from it: cells off, the middle of the frame (kept: preserveDrawingBuffer) is lit
      await shot(page, 'overview-narrow-fitted');
      await setLayer(figure, 'Cells', false);
      await settled(page);
      const middleLit = () => page.evaluate(() => {
        const c = document.querySelector('.sds-deck-canvas');
        const copy = document.createElement('canvas');
        [copy.width, copy.height] = [c.width, c.height];
        const ctx = copy.getContext('2d');
        ctx.drawImage(c, 0, 0);
        const d = ctx.getImageData(Math.floor(c.width / 4), Math.floor(c.height / 4), Math.floor(c.width / 2), Math.floor(c.height / 2)).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) n += d[i] + d[i + 1] + d[i + 2] > 30 ? 1 : 0;
        return n / (d.length / 4);
      });
      await until(middleLit, lit => lit > 0.05, 'the fitted view shows the image (of its middle lit)');
      await shot(page, 'overview-narrow-image-only');
      // zoomed in 4x over the image's upper left: tiles of a finer level, only those on screen
      await figure.evaluate(el => {
        const s = el.sdsSpatial.stage;
        const [x0, y0, x1, y1] = el.sdsSpatial.payload.image.bounds;
        s.apply({ target: [x0 + (x1 - x0) * 0.2, y0 + (y1 - y0) * 0.2], zoom: s.viewState.zoom + 2 });
      });
      await page.waitForFunction(() => (performance.getEntriesByType('resource').filter(e => e.name.includes('/api/image_tile')).length > 0), null, { timeout: 60000 });
      await settled(page); // every tile the view asked for has arrived
      const tiles = (await api()).filter(e => e.request === 'image_tile');
      const finer = new Set(tiles.map(t => Number(t.params.level)));
      assert.ok([...finer].every(l => l < level), `tiles of a finer level than the overview: ${[...finer]}`);
      const wanted = await figure.evaluate(el => el.sdsSpatial.image?.tiles?.frame().tiles.length ?? -1);
      const lv = levels[Math.min(...finer)];
      const whole = Math.ceil(lv.width / lv.tile) * Math.ceil(lv.height / lv.tile);
      assert.ok(tiles.length >= 1 && tiles.length <= wanted && tiles.length < whole, `${tiles.length} tiles asked, ${wanted} on screen, ${whole} in the level`);
      await shot(page, 'overview-narrow-zoomed');
      // dark theme: the same image, readable controls
      await useTheme(page, 'JupyterLab Dark');
      await shot(page, 'overview-narrow-dark');
      assert.deepEqual(page.errors, []);
    } finally {
      await setSetting('@jupyterlab/apputils-extension:themes', { theme: 'JupyterLab Light' });
      await page.close();
    }
  });

  it('issue 39: the first tissue comes coded and quantized over the wire; a figure below the fold asks for nothing until scrolled to', async () => {
    // 6,000 cells (past OUTLINES_AT_ONCE: circles, uint16 positions) and several canvas figures
    const name = await xeniumDemo('bytes', 6000, 2048);
    const page = await newPage();
    const codings = new Map(); // API path and query -> Content-Encoding
    page.on('response', r => r.url().includes('/sds-jupyter/api/') && codings.set(r.url(), r.headers()['content-encoding'] ?? 'identity'));
    try {
      await page.goto(`${base}/lab/tree/bytes/datasets?token=${TOKEN}&reset`);
      await page.locator('.jp-DirListing-item.sds-version-item', { hasText: name }).first().waitFor({ timeout: 60000 });
      await settled(page);
      await item(page, name).dblclick();
      await page.waitForSelector('.sds-history-row', { timeout: 60000 });
      const tab = page.locator('.sds-tab[data-tab="figures"]').first();
      if ((await tab.getAttribute('aria-selected')) !== 'true') {
        await tab.click();
      }
      await page.waitForSelector('.sds-figure-canvas', { timeout: 60000 });
      await page.locator('.sds-figure-canvas').first().scrollIntoViewIfNeeded(); // the version's own figure may be a chart
      await page.waitForSelector('.sds-deck-stage[data-live="true"]', { timeout: 90000 }).catch(async err => {
        await shot(page, 'first-tissue-not-drawn');
        const state = await page.locator('.sds-figure').evaluateAll(ns => ns.map(n => [n.className, n.dataset.figure, n.querySelector('.sds-figure-body')?.dataset.lazy, n.textContent.slice(0, 120), n.getBoundingClientRect().top]));
        throw new Error(`${err.message}: ${JSON.stringify(state)} ${JSON.stringify(page.errors)}`);
      });
      await settled(page); // whatever the first tissue asked for has arrived
      await shot(page, 'first-tissue-below-the-fold');
      const api = () =>
        page.evaluate(() =>
          performance.getEntriesByType('resource')
            .filter(e => e.name.includes('/sds-jupyter/api/'))
            .map(e => ({ url: e.name, request: e.name.split('/api/')[1].split('?')[0], figure: new URL(e.name).searchParams.get('figure'), sent: e.transferSize, body: e.encodedBodySize, decoded: e.decodedBodySize }))
        );
      const figures = await page.locator('.sds-figure-canvas').evaluateAll(nodes =>
        nodes.map(n => ({ id: n.dataset.figure, lazy: n.querySelector('.sds-figure-body')?.dataset.lazy, top: n.getBoundingClientRect().top }))
      );
      const below = figures.filter(f => f.lazy === 'waiting');
      assert.ok(figures.length >= 2 && below.length >= 1, `a figure below the fold: ${JSON.stringify(figures)}`);
      const first = await api();
      // counts, not timing: the figures still waiting asked for nothing, not even their colours
      for (const f of below) {
        assert.deepEqual(first.filter(e => e.figure === f.id).map(e => e.request), [], `${f.id} is off screen`);
      }
      const loaded = figures.filter(f => f.lazy === 'loaded').map(f => f.id);
      assert.deepEqual([...new Set(first.filter(e => e.request === 'canvas').map(e => e.figure))].sort(), [...loaded].sort());
      // the cells: 6,000 cells as uint16 x, y and radius (not 12 bytes a cell of float32), then coded
      const cells = first.filter(e => e.request === 'cells');
      assert.equal(cells.length, 1, JSON.stringify(first));
      assert.ok(cells[0].decoded < 6000 * 6 + 2000, `cells body ${cells[0].decoded} bytes`);
      assert.ok(['br', 'gzip'].includes(codings.get(cells[0].url)), `cells coded ${codings.get(cells[0].url)}`);
      assert.ok(cells[0].body < cells[0].decoded, `cells ${cells[0].body} of ${cells[0].decoded} bytes`);
      // the image overview's planes compress most: coded, and the first tissue's bytes well under its bodies
      const planes = first.filter(e => e.request === 'channels');
      assert.ok(planes.length === 1 && ['br', 'gzip'].includes(codings.get(planes[0].url)), JSON.stringify(planes));
      // no canvas reply carries a colour column (6,000 cells are 6,000 bytes of codes): the colours come by
      // color_values under the name the canvas gives them, one request a name however many figures colour so
      for (const c of first.filter(e => e.request === 'canvas')) {
        assert.ok(c.decoded < 6000, `canvas of ${c.figure}: ${c.decoded} bytes`);
      }
      const colors = first.filter(e => e.request === 'color_values').map(e => new URL(e.url).searchParams.get('key'));
      assert.ok(colors.length >= 1 && colors.every(Boolean), `colours asked by name: ${JSON.stringify(colors)}`);
      assert.equal(new Set(colors).size, colors.length, `one request a name: ${JSON.stringify(colors)}`);
      const sent = first.reduce((n, e) => n + e.body, 0);
      const bodies = first.reduce((n, e) => n + e.decoded, 0);
      assert.ok(sent < 0.7 * bodies, `first tissue: ${sent} bytes sent for ${bodies} bytes of replies`);
      writeFileSync(join(SHOTS, 'first-tissue-bytes.json'), JSON.stringify({ sent, bodies, requests: first.map(e => [e.request, e.figure, e.body, e.decoded, codings.get(e.url)]) }, null, 1));
      // scrolled to, the last figure asks for its colours then
      const last = below[below.length - 1];
      await page.locator(`.sds-figure-canvas[data-figure="${last.id}"]`).scrollIntoViewIfNeeded();
      await page.waitForFunction(id => document.querySelector(`.sds-figure-canvas[data-figure="${id}"] .sds-figure-body`)?.dataset.lazy === 'loaded', last.id, { timeout: 60000 });
      const after = (await api()).filter(e => e.figure === last.id).map(e => e.request);
      assert.ok(after.includes('canvas'), JSON.stringify(after));
      assert.deepEqual(page.errors, []);
    } finally {
      await page.close();
    }
  });

  it('a tissue past the outline threshold: zoomed in, outline tiles arrive and the picture shows outlines, in both tiers', async () => {
    // 6,000 cells (OUTLINES_AT_ONCE is 5,000): the cells reply carries circles and an outline grid
    const name = await xeniumDemo('outlines', 6000, 2048);
    for (const [tier, query] of TIERS) {
      const page = await newPage();
      // outline tiles wait at this gate, so the same camera is seen before and after they arrive
      let release = null;
      const gate = new Promise(r => (release = r));
      const open = () => {
        page.sdsHeld = [];
        release();
      };
      page.sdsHeld = ['/api/cell_outlines']; // held at the gate: `settled` does not wait for them
      await page.route('**/sds-jupyter/api/cell_outlines**', async route => {
        await gate;
        await route.continue();
      });
      try {
        await openFigures(page, 'outlines/datasets', name, query);
        await waitForTissue(page);
        const stage = page.locator('.sds-deck-stage').first();
        const figure = page.locator('.sds-spatial').first();
        assert.equal(await stage.getAttribute('data-tier'), tier);
        const sent = await figure.evaluate(el => ({ kind: el.sdsSpatial.data.shapes?.kind, grid: el.sdsSpatial.payload.shapes?.outlines ?? null }));
        assert.equal(sent.kind, 'circles', `${tier}: the fit view gets circles`);
        assert.ok(sent.grid && sent.grid.columns * sent.grid.rows >= 2, `${tier}: an outline grid: ${JSON.stringify(sent.grid)}`);
        const asked = () => page.evaluate(() => performance.getEntriesByType('resource').filter(e => e.name.includes('/api/cell_outlines')).length);
        await figure.scrollIntoViewIfNeeded();
        if (await figure.getByLabel('Image', { exact: true }).count()) {
          await setLayer(figure, 'Image', false); // the pixels below are the cells' alone
        }
        // zoomed in on the middle until a typical cell is 20 px across (outlined polygons, a few tiles)
        await figure.evaluate(el => {
          const s = el.sdsSpatial.stage;
          const [x0, y0, x1, y1] = el.sdsSpatial.payload.bounds;
          s.apply({ target: [(x0 + x1) / 2, (y0 + y1) / 2], zoom: Math.log2(20 / s.outlineSize) });
        });
        await page.waitForFunction(() => Number(document.querySelector('.sds-deck-stage')?.dataset.outlineTiles) > 0, null, { timeout: 30000 });
        await settled(page);
        const pixels = async () => (await stagePixels(stage)).d;
        const circles = await pixels();
        assert.equal((await stage.getAttribute('data-outlines')) ?? '0', '0', `${tier}: no outline before the tiles arrive`);
        await shot(page, `outline-tiles-${tier}-circles`);
        open();
        await page.waitForFunction(() => Number(document.querySelector('.sds-deck-stage')?.dataset.outlines) > 0, null, { timeout: 60000 });
        await page.waitForSelector('.sds-deck-stage[data-cells="outlined"]', { timeout: 30000 });
        await settled(page);
        const outlined = await pixels();
        await shot(page, `outline-tiles-${tier}-outlined`);
        const tiles = await asked();
        assert.ok(tiles >= 1 && tiles <= Number(await stage.getAttribute('data-outline-tiles')), `${tier}: ${tiles} outline tiles asked`);
        // the picture: discs (full colour) became polygons with a translucent fill and an edge,
        // over black here. The software tier's edge is the cell's full colour, brighter than any
        // fill can be (bright pixels shrink to thin rings); the GPU tier's stock layers edge each
        // polygon in a dark line (dark pixels appear where the discs had none)
        const read = d => {
          let lit = 0, bright = 0, dark = 0;
          for (let i = 0; i < d.length; i += 4) {
            const m = Math.max(d[i], d[i + 1], d[i + 2]);
            if (m > 30) lit++;
            if (m > 190) bright++;
            if (m > 30 && m < 100) dark++;
          }
          const n = d.length / 4;
          return { lit: lit / n, bright: bright / n, dark: dark / n };
        };
        let changed = 0;
        for (let i = 0; i < circles.length; i += 4) {
          if (Math.abs(circles[i] - outlined[i]) + Math.abs(circles[i + 1] - outlined[i + 1]) + Math.abs(circles[i + 2] - outlined[i + 2]) > 60) changed++;
        }
        const before = read(circles);
        const after = read(outlined);
        const summary = JSON.stringify({ before, after, changed: changed / (circles.length / 4) });
        assert.ok(changed / (circles.length / 4) > 0.05, `${tier}: the outlines changed the picture: ${summary}`);
        assert.ok(after.lit > 0.2 && after.bright < before.bright * 0.8, `${tier}: translucent polygons in place of the discs: ${summary}`);
        if (tier === 'software') {
          assert.ok(after.bright > 0.005, `${tier}: the outlines in the cells' colours: ${summary}`);
        } else {
          assert.ok(after.dark > 0.02 && after.dark > before.dark * 2, `${tier}: the outlines as dark lines: ${summary}`);
        }
        // a pan within the same tiles asks for none again
        await figure.evaluate(el => {
          const s = el.sdsSpatial.stage;
          s.apply({ target: [s.viewState.target[0] + s.outlineSize, s.viewState.target[1]], zoom: s.viewState.zoom });
        });
        await settled(page); // the pan's tile requests (if any) answered
        assert.ok((await asked()) <= Math.max(tiles, Number(await stage.getAttribute('data-outline-tiles'))) + 2, `${tier}: a small pan asks for at most its new tiles`);
        assert.deepEqual(page.errors, []);
      } finally {
        open();
        await page.close();
      }
    }
  });

  it('issue 39: transcripts by gene over the tissue, in both tiers: tiles at the zoom, colour by gene, the gene under the pointer', async () => {
    // 2,000 cells and their 60,000 transcripts (a spatialdata points element) and nucleus outlines
    const name = await xeniumDemo('transcripts', 2000, 1024);
    for (const [tier, query] of TIERS) {
      const page = await newPage();
      try {
        await openFigures(page, 'transcripts/datasets', name, query);
        await waitForTissue(page);
        const figure = page.locator('.sds-spatial[data-points-element="transcripts"]').first();
        await figure.waitFor({ timeout: 30000 });
        const stage = figure.locator('.sds-deck-stage');
        assert.equal(await stage.getAttribute('data-tier'), tier);
        await figure.scrollIntoViewIfNeeded();
        await setLayer(figure, 'Image', false);
        await setLayer(figure, 'Cells', false); // the pixels left are the transcripts' alone
        await settled(page);
        const pixels = async () => (await stagePixels(stage)).d;
        const count = (d, test) => {
          let n = 0;
          for (let i = 0; i < d.length; i += 4) if (test(d[i], d[i + 1], d[i + 2])) n++;
          return n / (d.length / 4);
        };
        const lit = (r, g, b) => Math.max(r, g, b) > 40;
        const empty = count(await pixels(), lit);
        assert.ok(empty < 0.01, `${tier}: nothing drawn with cells and image off: ${empty}`);
        await setLayer(figure, 'Transcripts', true);
        // a sample may come first while the index builds; the checks below are of the whole index
        await page.waitForFunction(el => Number(el.dataset.points) > 0 && el.dataset.pointsPartial === 'false', await stage.elementHandle(), { timeout: 60000 });
        await settled(page);
        const all = count(await pixels(), lit);
        assert.ok(all > 0.02, `${tier}: every gene's transcripts paint the tissue: ${all}`);
        assert.ok(await figure.locator('.sds-points-legend li').count() >= 10, `${tier}: the legend lists the genes`);
        await shot(page, `transcripts-${tier}-all`);
        // one gene: only its colour (the first of the palette, #4e79a7) is left
        const genes = (await openLayers(figure)).locator('.sds-points-genes');
        await genes.fill('EPCAM');
        await genes.press('Enter');
        await closeLayers(figure);
        await page.waitForFunction(() => document.querySelector('.sds-points-legend li')?.textContent?.startsWith('EPCAM'), null, { timeout: 30000 });
        await settled(page);
        const one = await pixels();
        // #4e79a7 over black, edges blended: blue above green above red (no other palette colour of the legend's first ten is)
        const blueish = (r, g, b) => lit(r, g, b) && b >= g && g >= r && b - r > 25;
        const blue = count(one, blueish);
        const other = count(one, (r, g, b) => lit(r, g, b) && !blueish(r, g, b));
        assert.ok(blue > 0.001 && blue < all, `${tier}: EPCAM's transcripts in its colour: ${blue} of ${all}`);
        assert.ok(other < blue * 0.1, `${tier}: no other gene's colour: ${other} against ${blue}`);
        await shot(page, `transcripts-${tier}-epcam`);
        // zoomed in on an EPCAM point until the finest level: every point there, none a sample; hover names it
        const at = await figure.evaluate(el => {
          const layer = el.sdsSpatial.transcripts;
          const p = layer.drawing.positions;
          el.sdsSpatial.stage.apply({ target: [p[0], p[1]], zoom: el.sdsSpatial.stage.viewState.zoom + 5 });
          return [p[0], p[1]];
        });
        await page.waitForFunction(el => el.dataset.pointsLevel === String(el.closest('.sds-spatial').sdsSpatial.transcripts.info.finest_level), await stage.elementHandle(), { timeout: 30000 });
        await settled(page);
        const screen = await figure.evaluate((el, [x, y]) => {
          const s = el.sdsSpatial.stage;
          const r = s.node.getBoundingClientRect();
          const region = s.region();
          return [r.left + ((x - region[0]) / (region[2] - region[0])) * r.width, r.top + ((y - region[1]) / (region[3] - region[1])) * r.height];
        }, at);
        await page.mouse.move(screen[0], screen[1]);
        await page.waitForFunction(el => el.dataset.pointGene === 'EPCAM', await stage.elementHandle(), { timeout: 10000 });
        assert.equal(await figure.locator('.sds-points-hover').innerText(), 'Transcript: EPCAM');
        assert.equal(await figure.locator('.sds-points-status').innerText(), '', `${tier}: no sample at the finest level`);
        await shot(page, `transcripts-${tier}-zoomed`);
        if (tier === 'software') {
          await checkAxe(page, 'transcripts layer');
          // dark theme, then a 420 px panel: the layer's controls and legend stay readable and in the panel
          await figure.evaluate(el => el.sdsSpatial.stage.apply({ target: el.sdsSpatial.stage.viewState.target, zoom: el.sdsSpatial.stage.viewState.zoom - 5 }));
          await useTheme(page, 'JupyterLab Dark');
          await shot(page, 'transcripts-software-dark');
          assert.deepEqual(await axeViolations(page, '.sds-figures'), [], 'axe (transcripts, dark)');
          await sizePanel(page, 420);
          await figure.scrollIntoViewIfNeeded();
          await openLayers(figure);
          await settled(page);
          await shot(page, 'transcripts-software-narrow');
          const fits = await figure.evaluate(el => {
            const box = el.getBoundingClientRect();
            return [...el.querySelectorAll('.sds-layers-menu, .sds-points-controls, .sds-points-legend')].every(c => {
              const r = c.getBoundingClientRect();
              return r.width > 0 && r.left >= box.left - 1 && r.right <= box.right + 1;
            });
          });
          await closeLayers(figure);
          assert.ok(fits, 'the transcripts controls and legend fit a 420 px panel');
        }
        assert.deepEqual(page.errors, []);
      } finally {
        if (tier === 'software') {
          await setSetting('@jupyterlab/apputils-extension:themes', { theme: 'JupyterLab Light' });
        }
        await page.close();
      }
    }
  });
});
