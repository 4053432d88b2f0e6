/**
 * The one way a view asks and draws: a spinner in place while the request runs, the
 * answer drawn only if no newer load of the same node started meanwhile (a quick second
 * click wins over a slow first one), and a failure shown in place as one line.
 */

import { errorBox, fill, loading } from './dom';
import { TransportError } from './transport';

/** Each node's newest load; an answer to an older one draws nothing. */
const latest = new WeakMap<Element, number>();

/** Whether the load that was handed this is still the node's newest. */
export type Current = () => boolean;

/** Make every load of `node` under way stale (the node now shows something else). */
export function cancelLoad(node: Element): void {
  latest.set(node, (latest.get(node) ?? 0) + 1);
}

/**
 * Ask with `request`, then `render` its data into `node` (the render fills it); `render` gets
 * `current` for work it finishes later (a chart drawn after the answer). Resolves when done;
 * never rejects: a failure is the node's content.
 */
export async function loadInto<T>(
  node: HTMLElement,
  request: () => Promise<{ data: T }>,
  render: (data: T, current: Current) => void
): Promise<void> {
  cancelLoad(node);
  const token = latest.get(node);
  const current: Current = () => latest.get(node) === token;
  fill(node, loading());
  try {
    const { data } = await request();
    if (current()) {
      render(data, current);
    }
  } catch (err) {
    if (current()) {
      const e = TransportError.from(err);
      fill(node, errorBox(e.message, e.kind));
    }
  }
}

/**
 * Resolves once `node` comes within `margin` of the viewport (at once where IntersectionObserver
 * is missing). Why: a version's figures below the fold should cost nothing until scrolled to.
 */
export function whenVisible(node: Element, margin = '300px'): Promise<void> {
  if (typeof IntersectionObserver === 'undefined') {
    return Promise.resolve();
  }
  return new Promise(resolve => {
    const observer = new IntersectionObserver(
      entries => {
        if (entries.some(e => e.isIntersecting)) {
          observer.disconnect();
          resolve();
        }
      },
      { rootMargin: margin }
    );
    observer.observe(node);
  });
}
