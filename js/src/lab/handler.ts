/** The file-browser side: version folders open in the version browser. */

import type { FileBrowser } from '@jupyterlab/filebrowser';
import type { Contents } from '@jupyterlab/services';
import type { ISettings } from './tokens';
import type { VersionDetector } from './versions';

/** Settings shared by the plugins, updated live from the registry. */
export const settingsState: ISettings = { openVersionsOnDoubleClick: true };

/** The parts of the file browser the handler uses. */
export type BrowserLike = Pick<FileBrowser, 'node' | 'modelForClick' | 'selectedItems' | 'singleClickNavigation'> & {
  model: Pick<FileBrowser['model'], 'refreshed'>;
};

/** Event targets where Enter belongs to the element (rename box, inputs). */
function isEditable(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.isContentEditable);
}

/**
 * Open version folders from the listing. A signal cannot stop the listing's
 * navigation (it `cd`s after emitting), so this listens in the capture phase on
 * the browser node and stops the event for version folders only.
 */
export function installOpenHandler(
  browser: BrowserLike,
  detector: VersionDetector,
  openVersion: (item: Contents.IModel) => void,
  enterFolder: (item: Contents.IModel) => Promise<void>,
  enabled: () => boolean = () => settingsState.openVersionsOnDoubleClick,
  unreadable: (item: Contents.IModel, why: string) => void = () => {}
): () => void {
  const node = browser.node;
  const inListing = (event: Event) =>
    !!(event.target as Element | null)?.closest?.('.jp-DirListing-content');

  const handle = (event: Event, item: Contents.IModel | undefined): void => {
    if (!enabled() || !item || item.type !== 'directory') {
      return;
    }
    const known = detector.cached(item.path);
    if (known === false) {
      // an ordinary folder: the listing navigates as usual; a broken version says why it is not opened
      sayIfUnreadable(item);
      return;
    }
    event.stopPropagation();
    event.preventDefault();
    if (known === true) {
      openVersion(item);
      return;
    }
    // not checked yet: ask, then open it or enter it as the listing would have
    void detector.check(item.path).then(is => {
      if (is) {
        openVersion(item);
      } else {
        sayIfUnreadable(item);
        void enterFolder(item);
      }
    });
  };
  const sayIfUnreadable = (item: Contents.IModel): void => {
    const why = detector.whyUnreadable(item.path);
    if (why !== undefined) {
      unreadable(item, why);
    }
  };

  const onMouseDown = (event: MouseEvent) => {
    if (!enabled() || event.button !== 0 || !inListing(event)) {
      return;
    }
    const item = browser.modelForClick(event);
    if (item?.type === 'directory') {
      void detector.check(item.path); // warm the cache before the second click
    }
  };
  const onDblClick = (event: MouseEvent) => {
    if (event.button === 0 && inListing(event)) {
      handle(event, browser.modelForClick(event));
    }
  };
  const onClick = (event: MouseEvent) => {
    if (
      browser.singleClickNavigation &&
      event.button === 0 &&
      !(event.ctrlKey || event.shiftKey || event.altKey || event.metaKey) &&
      inListing(event)
    ) {
      handle(event, browser.modelForClick(event));
    }
  };
  const onKeyDown = (event: KeyboardEvent) => {
    if (
      event.key !== 'Enter' ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey ||
      event.metaKey ||
      isEditable(event.target) ||
      !(event.target as Element | null)?.closest?.('.jp-DirListing')
    ) {
      return;
    }
    const items = [...browser.selectedItems()];
    if (items.length === 1) {
      handle(event, items[0]);
    }
  };
  const onRefreshed = () => detector.clear();

  node.addEventListener('mousedown', onMouseDown, true);
  node.addEventListener('dblclick', onDblClick, true);
  node.addEventListener('click', onClick, true);
  node.addEventListener('keydown', onKeyDown, true);
  browser.model.refreshed.connect(onRefreshed);
  return () => {
    node.removeEventListener('mousedown', onMouseDown, true);
    node.removeEventListener('dblclick', onDblClick, true);
    node.removeEventListener('click', onClick, true);
    node.removeEventListener('keydown', onKeyDown, true);
    browser.model.refreshed.disconnect(onRefreshed);
  };
}

