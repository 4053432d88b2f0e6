import { describe, expect, it } from 'vitest';
import { divider, KEY_STEP, MIN_DETAIL, MIN_SIDE } from '../app/shared/divider';

function box(el: HTMLElement, left: number, width: number): void {
  el.getBoundingClientRect = () => ({ left, width, right: left + width, top: 0, bottom: 100, height: 100, x: left, y: 0, toJSON: () => ({}) }) as DOMRect;
}

function key(el: HTMLElement, name: string): void {
  el.dispatchEvent(new KeyboardEvent('keydown', { key: name, bubbles: true }));
}

describe('the history divider', () => {
  it('is a focusable separator the arrow keys move, within limits', () => {
    const root = document.createElement('div');
    const main = document.createElement('div');
    const side = document.createElement('div');
    box(main, 10, 1000);
    box(side, 10, 300);
    const d = divider(root, main, side);
    expect(d.node.getAttribute('role')).toBe('separator');
    expect(d.node.getAttribute('aria-label')).toBe('Resize the history');
    expect(d.node.tabIndex).toBe(0);
    // where it stands is announced before any move (axe: aria-required-attr)
    expect(d.node.getAttribute('aria-valuenow')).toBe('300');
    expect(d.node.getAttribute('aria-valuemax')).toBe(String(1000 - MIN_DETAIL));
    key(d.node, 'ArrowRight');
    expect(root.style.getPropertyValue('--sds-side-width')).toBe(`${300 + KEY_STEP}px`);
    expect(d.node.getAttribute('aria-valuenow')).toBe(String(300 + KEY_STEP));
    key(d.node, 'ArrowLeft');
    expect(root.style.getPropertyValue('--sds-side-width')).toBe(`${300 - KEY_STEP}px`);
    key(d.node, 'End');
    expect(root.style.getPropertyValue('--sds-side-width')).toBe(`${1000 - MIN_DETAIL}px`);
    key(d.node, 'Home');
    expect(root.style.getPropertyValue('--sds-side-width')).toBe(`${MIN_SIDE}px`);
    d.dispose();
    key(d.node, 'End');
    expect(root.style.getPropertyValue('--sds-side-width')).toBe(`${MIN_SIDE}px`);
  });

  it('follows a drag of the pointer', () => {
    const root = document.createElement('div');
    const main = document.createElement('div');
    const side = document.createElement('div');
    box(main, 100, 900);
    box(side, 100, 300);
    const d = divider(root, main, side);
    d.node.dispatchEvent(new MouseEvent('pointerdown', { clientX: 400, bubbles: true }) as PointerEvent);
    d.node.dispatchEvent(new MouseEvent('pointermove', { clientX: 520, bubbles: true }) as PointerEvent);
    expect(root.style.getPropertyValue('--sds-side-width')).toBe('420px');
    d.node.dispatchEvent(new MouseEvent('pointerup', { clientX: 520, bubbles: true }) as PointerEvent);
    d.node.dispatchEvent(new MouseEvent('pointermove', { clientX: 700, bubbles: true }) as PointerEvent);
    expect(root.style.getPropertyValue('--sds-side-width')).toBe('420px');
  });
});
