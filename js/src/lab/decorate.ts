/**
 * Marks version folders in the file browser's listing: a distinct icon (CSS, on
 * the `sds-version-item` class) and the version's title as the tooltip; a folder whose
 * layer.json cannot be read gets a warning mark (`sds-version-broken`) and the reason. The
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

/**
 * Apply the marks of `titles` (name → title) to the listing's folder items; the folders of
 * `unreadable` (name → why) get a warning mark saying their layer.json cannot be read.
 */
export function markVersions(
  root: HTMLElement,
  titles: Map<string, string | null>,
  unreadable: Map<string, string> = new Map()
): void {
  for (const item of root.querySelectorAll<HTMLElement>(ITEM)) {
    const name = nameOf(item);
    const dir = item.dataset.isdir === 'true';
    const isVersion = dir && titles.has(name);
    const broken = dir && !isVersion && unreadable.has(name);
    item.classList.toggle('sds-version-item', isVersion);
    item.classList.toggle('sds-version-broken', broken);
    // text only: a title or a reason is data, never markup
    const tip = isVersion
      ? `Version: ${titles.get(name) || name}\n${name}`
      : broken
        ? `Not readable as a version: ${unreadable.get(name)}\n${name}`
        : null;
    if (tip !== null && item.title !== tip) {
      item.title = tip;
    }
    // the title beside the folder name (a UUID tells nothing), drawn by CSS from an attribute:
    // never markup, and the name the listing reads stays the folder's own
    const text = item.querySelector<HTMLElement>('.jp-DirListing-itemText');
    const label = isVersion ? titles.get(name) || '' : broken ? 'unreadable version' : '';
    if (text && label && label !== name) {
      if (text.dataset.sdsTitle !== label) {
        text.dataset.sdsTitle = label;
      }
    } else if (text?.dataset.sdsTitle !== undefined) {
      delete text.dataset.sdsTitle;
    }
    const mark = isVersion ? 'true' : broken ? 'unreadable' : null;
    if (mark && item.dataset.sdsVersion !== mark) {
      item.dataset.sdsVersion = mark;
    } else if (!mark && item.dataset.sdsVersion) {
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
  let broken = new Map<string, string>();
  const apply = () => {
    frame = 0;
    observer.disconnect();
    markVersions(listing.node, current, broken);
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
      broken = detector.unreadable(dir);
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
