/** Tiny DOM helpers: the app is plain DOM, no framework. */

type Attrs = { [name: string]: string | number | boolean | null | undefined | EventListener };
type Child = Node | string | number | null | undefined | false;

/** Create an element: `h('div', {class: 'x', onclick: fn}, 'text', child)`. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) {
      continue;
    }
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2), value as EventListener);
    } else if (value === true) {
      el.setAttribute(name, '');
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, ...children);
  return el;
}

export function append(el: Element, ...children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    el.append(child instanceof Node ? child : String(child));
  }
}

/** Replace the children of `el`. */
export function fill(el: Element, ...children: (Child | Child[])[]): void {
  el.replaceChildren();
  append(el, ...children);
}

/** Error kinds that name an ordinary state (nothing saved yet): shown as information, not in red. */
const INFO_KINDS = new Set(['no-studio-data']);

/** An in-place error message for a failed request (a note for the ordinary states of INFO_KINDS). */
export function errorBox(message: string, kind?: string): HTMLElement {
  if (kind && INFO_KINDS.has(kind)) {
    return h('div', { class: 'sds-note', role: 'status', 'data-kind': kind }, message);
  }
  return h(
    'div',
    { class: 'sds-error', role: 'alert' },
    kind ? h('span', { class: 'sds-error-kind' }, kind) : null,
    h('span', { class: 'sds-error-message' }, message)
  );
}

/** A spinner in place of what is loading, with its name for screen readers. */
export function loading(what = 'Loading…'): HTMLElement {
  return h(
    'div',
    { class: 'sds-loading', role: 'status' },
    h('span', { class: 'sds-spinner', 'aria-hidden': 'true' }),
    h('span', { class: 'sds-loading-text' }, what)
  );
}

export function empty(what: string): HTMLElement {
  return h('div', { class: 'sds-empty' }, what);
}

/** Save a Blob or data URL under `filename` through a temporary link. */
export function download(what: Blob | string, filename: string): void {
  const url = typeof what === 'string' ? what : URL.createObjectURL(what);
  const a = h('a', { href: url, download: filename, style: 'display:none' });
  document.body.append(a);
  a.click();
  a.remove();
  if (typeof what !== 'string') {
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }
}

/** A two-column report: one row per (label, value), values may be nodes. */
export function report(rows: [string, Node | string][]): HTMLElement {
  return h(
    'table',
    { class: 'sds-report' },
    h(
      'tbody',
      {},
      rows.map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, k), h('td', {}, v)))
    )
  );
}

/** Run and forget every disposer; one that fails (a view already gone) does not stop the rest. */
export function runDisposers(disposers: (() => void)[]): void {
  for (const dispose of disposers.splice(0)) {
    try {
      dispose();
    } catch {
      // already gone
    }
  }
}

/**
 * An identifier (an element or column name) as text with a line-break opportunity (`<wbr>`)
 * after each `_ . / - :` and between a lower-case letter and an upper-case one, so a long name
 * wraps between its parts in a narrow panel and never mid-word. The name stays text (data is
 * never markup); copying it gives the name unchanged.
 */
export function breakable(name: string): (string | HTMLElement)[] {
  const parts = name.split(/(?<=[_./:-])|(?<=[a-z])(?=[A-Z])/);
  return parts.flatMap((part, i) => (i ? [document.createElement('wbr'), part] : [part]));
}

/** A small labelled tag ("zip store", "Zarr v3", an op family). */
export function badge(text: string, family = 'other'): HTMLElement {
  return h('span', { class: `sds-badge sds-badge-${family}`, title: text }, text);
}

/**
 * Device pixels per CSS pixel as the views draw: devicePixelRatio, at most 2 (a canvas 3 or 4
 * times its CSS size costs 2 to 4 times the pixels to draw for little the eye can tell).
 */
export function deviceRatio(): number {
  return Math.min(2, globalThis.devicePixelRatio || 1);
}

/**
 * How many device pixels wide `el` is as a view in it draws (`deviceRatio`): what it can show,
 * so an image need not be sent finer than that. 0 while it is not laid out.
 */
export function devicePixelWidth(el: Element): number {
  return el.clientWidth * deviceRatio();
}
