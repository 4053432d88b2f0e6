/**
 * Marks version folders in the file browser's listing: a distinct icon (CSS, on
 * the `sds-version-item` class) and the version's title as the tooltip. The
 * listing re-renders its items freely, so a MutationObserver re-applies the marks.
 */

import type { VersionDetector } from './versions';

export type ListingLike = {
  node: HTMLElement;
  /** The directory shown (a contents path). */
  path(): string;
};

const ITEM = '.jp-DirListing-item';

function nameOf(item: Element): string {
  return item.querySelector('.jp-DirListing-itemText')?.textContent?.trim() ?? '';
}

/** Apply the marks of `titles` (name → title) to the listing's folder items. */
export function markVersions(root: HTMLElement, titles: Map<string, string | null>): void {
  for (const item of root.querySelectorAll<HTMLElement>(ITEM)) {
    const name = nameOf(item);
    const isVersion = item.dataset.isdir === 'true' && titles.has(name);
    item.classList.toggle('sds-version-item', isVersion);
    if (isVersion) {
      const tip = `Version: ${titles.get(name) || name}\n${name}`;
      if (item.title !== tip) {
        item.title = tip; // text only: a title is data, never markup
      }
      if (item.dataset.sdsVersion !== 'true') {
        item.dataset.sdsVersion = 'true';
      }
    } else if (item.dataset.sdsVersion) {
      delete item.dataset.sdsVersion;
    }
  }
}

/** Keep the listing's marks current; returns a function that stops it. */
export function installDecorator(
  listing: ListingLike,
  detector: VersionDetector
): (() => void) & { reload(): Promise<void> } {
  let frame = 0;
  let current = new Map<string, string | null>();
  const apply = () => {
    frame = 0;
    observer.disconnect();
    markVersions(listing.node, current);
    observer.observe(listing.node, { childList: true, subtree: true, attributes: true, attributeFilter: ['title'] });
  };
  const schedule = () => {
    if (!frame) {
      frame = requestAnimationFrame(apply);
    }
  };
  const observer = new MutationObserver(schedule);
  const reload = async () => {
    const dir = listing.path();
    const map = await detector.listing(dir);
    if (listing.path() === dir) {
      current = map;
      schedule();
    }
  };
  void reload();
  observer.observe(listing.node, { childList: true, subtree: true, attributes: true, attributeFilter: ['title'] });
  return Object.assign(() => {
    observer.disconnect();
    cancelAnimationFrame(frame);
  }, { reload });
}
