/**
 * The divider between history and details: drag it, or focus it and use the arrow
 * keys (Home/End for the narrowest/widest), to give the history more or less room.
 * The width lives in the `--sds-side-width` custom property of the app's root, so
 * CSS keeps the layout (and drops the divider in a narrow container).
 */

import { h } from './dom';

/** The narrowest history, and the least room left for the details (pixels). */
export const MIN_SIDE = 160;
export const MIN_DETAIL = 240;
/** One arrow-key step (pixels). */
export const KEY_STEP = 16;

export type Divider = { node: HTMLElement; dispose(): void };

export function divider(root: HTMLElement, main: HTMLElement, side: HTMLElement): Divider {
  const node = h('div', {
    class: 'sds-divider',
    role: 'separator',
    tabindex: 0,
    'aria-orientation': 'vertical',
    'aria-label': 'Resize the history',
    title: 'Drag, or use the arrow keys, to resize the history'
  });

  const limits = (): [number, number] => {
    const total = main.getBoundingClientRect().width;
    return [MIN_SIDE, Math.max(MIN_SIDE, total - MIN_DETAIL)];
  };

  // A focusable separator must say where it stands (aria-valuenow), from the start.
  const announce = (width: number): void => {
    const [low, high] = limits();
    node.setAttribute('aria-valuenow', String(Math.round(width)));
    node.setAttribute('aria-valuemin', String(low));
    node.setAttribute('aria-valuemax', String(high));
  };

  const setWidth = (px: number): void => {
    const [low, high] = limits();
    const width = Math.round(Math.min(high, Math.max(low, px)));
    root.style.setProperty('--sds-side-width', `${width}px`);
    announce(width);
  };

  announce(side.getBoundingClientRect().width || MIN_SIDE);
  // the history's width also changes with the container: keep the announced value true
  const observer =
    typeof ResizeObserver === 'undefined'
      ? null
      : new ResizeObserver(() => announce(side.getBoundingClientRect().width || MIN_SIDE));
  observer?.observe(side);

  const onPointerDown = (event: PointerEvent): void => {
    event.preventDefault();
    node.setPointerCapture?.(event.pointerId);
    node.classList.add('sds-dragging');
    const left = main.getBoundingClientRect().left;
    const move = (e: PointerEvent): void => setWidth(e.clientX - left);
    const up = (e: PointerEvent): void => {
      node.releasePointerCapture?.(e.pointerId);
      node.classList.remove('sds-dragging');
      node.removeEventListener('pointermove', move);
      node.removeEventListener('pointerup', up);
      node.removeEventListener('pointercancel', up);
    };
    node.addEventListener('pointermove', move);
    node.addEventListener('pointerup', up);
    node.addEventListener('pointercancel', up);
  };

  const onKey = (event: KeyboardEvent): void => {
    const current = side.getBoundingClientRect().width;
    const [low, high] = limits();
    const target: Record<string, number> = {
      ArrowLeft: current - KEY_STEP,
      ArrowRight: current + KEY_STEP,
      Home: low,
      End: high
    };
    if (event.key in target) {
      event.preventDefault();
      event.stopPropagation();
      setWidth(target[event.key]);
    }
  };

  node.addEventListener('pointerdown', onPointerDown);
  node.addEventListener('keydown', onKey);
  return {
    node,
    dispose() {
      observer?.disconnect();
      node.removeEventListener('pointerdown', onPointerDown);
      node.removeEventListener('keydown', onKey);
    }
  };
}
