/**
 * Issue 29, item 7 defaults: the tissue drawing fits the panel's height (7b); numbers shown
 * with their meaningful digits wherever a value reaches the page as text (7c).
 */
import { describe, expect, it } from 'vitest';

import { MIN_FIT_HEIGHT, fitToPanel, fitWidth, roomFor } from '../app/spatial/fit';
import { changeLabel, jsonText, rowValue, short, valueText } from '../app/shared/format';

describe('the drawing fits the panel height (item 7b)', () => {
  it('is as wide as keeps it within the room, its aspect kept; never below the least height', () => {
    // a square tissue in a panel that shows 620 px, 120 above the drawing and 20 below
    const room = roomFor(620, 120, 20);
    expect(room).toBe(472);
    expect(fitWidth(room, 1)).toBe(472);
    // a tissue twice as wide as tall may be twice as wide
    expect(fitWidth(room, 0.5)).toBe(944);
    expect(fitWidth(100, 1)).toBe(MIN_FIT_HEIGHT);
    // a hidden panel (no height): no limit
    expect(fitWidth(0, 1)).toBeNull();
    expect(fitWidth(-5, 1)).toBeNull();
  });

  it('sets the drawing\'s --sds-fit-width from the panel that scrolls it', async () => {
    const panels = document.createElement('div');
    panels.className = 'sds-panels';
    const view = document.createElement('div');
    const drawing = document.createElement('div');
    const foot = document.createElement('div');
    view.append(drawing, foot);
    panels.append(view);
    document.body.append(panels);
    Object.defineProperty(panels, 'clientHeight', { value: 620 });
    Object.defineProperty(foot, 'offsetHeight', { value: 20 });
    const box = (top: number) => ({ top, left: 0, right: 0, bottom: 0, width: 0, height: 0, x: 0, y: top, toJSON: () => ({}) }) as DOMRect;
    view.getBoundingClientRect = () => box(100);
    drawing.getBoundingClientRect = () => box(220);
    const undo = fitToPanel(drawing, view, foot, 1);
    // happy-dom runs the animation frame on a timer: let it run
    await new Promise(r => setTimeout(r, 50));
    expect(drawing.style.getPropertyValue('--sds-fit-width')).toBe(`${Math.min(620, window.innerHeight) - 120 - 20 - 8}px`);
    undo();
    panels.remove();
  });
});

describe('meaningful digits wherever a value is text (item 7c)', () => {
  const f32 = Math.fround(1.154); // 1.1540000438690186, as a float32 column reads back
  it('an op with a float parameter, an uns value, a JSON value', () => {
    expect(changeLabel({ op: 'scale', factor: f32 })).toBe('scale factor=1.154');
    expect(short({ resolution: Math.fround(0.8) })).toBe('{"resolution":0.8}');
    expect(jsonText([f32, 2, 'a'])).toBe('[1.154,2,"a"]');
    expect(valueText({ scale: f32 })).toBe('{"scale":1.154}');
    expect(valueText([f32])).toBe('[1.154]');
    expect(rowValue(f32)).toBe('1.154');
  });
});
