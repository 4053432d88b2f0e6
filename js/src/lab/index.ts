/**
 * JupyterLab extension: version folders open in the version browser.
 *
 * - `sds-jupyter:plugin`: commands, the panel, the settings (schema/plugin.json);
 * - `sds-jupyter:file-browser`: double-click / Enter on a version folder opens it
 *   in the browser panel instead of entering it (capture phase, before the listing).
 */

import {
  ILayoutRestorer,
  type JupyterFrontEnd,
  type JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, InputDialog, MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { IDefaultFileBrowser, type FileBrowser } from '@jupyterlab/filebrowser';
import type { Contents } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { folderIcon } from '@jupyterlab/ui-components';
import { createVersionPanel, type VersionContent } from './panel';
import { CommandIDs, PLUGIN_ID, type ISettings } from './tokens';
import { createNotebook } from './transport';
import { VersionDetector } from './versions';

export { CommandIDs, PLUGIN_ID } from './tokens';
export { requestAPI, RestTransport } from './transport';
export { VersionDetector } from './versions';

const FILE_BROWSER_PLUGIN_ID = 'sds-jupyter:file-browser';

/** Settings shared by the two plugins, updated live. */
const current: ISettings = { openVersionsOnDoubleClick: true };

function readSettings(s: ISettingRegistry.ISettings): void {
  current.openVersionsOnDoubleClick = s.get('openVersionsOnDoubleClick').composite !== false;
}

/** The first selected directory of the browser, as a server path. */
function selectedDir(app: JupyterFrontEnd, browser: FileBrowser | null): string | null {
  if (!browser) {
    return null;
  }
  for (const item of browser.selectedItems()) {
    if (item.type === 'directory') {
      return app.serviceManager.contents.localPath(item.path);
    }
  }
  return null;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Open versions of SpatialData stacks in a version browser.',
  autoStart: true,
  optional: [IDefaultFileBrowser, ICommandPalette, ISettingRegistry, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    browser: FileBrowser | null,
    palette: ICommandPalette | null,
    settings: ISettingRegistry | null,
    restorer: ILayoutRestorer | null
  ) => {
    const { commands, shell } = app;
    const tracker = new WidgetTracker<MainAreaWidget<VersionContent>>({ namespace: 'sds-jupyter' });

    if (settings) {
      settings
        .load(PLUGIN_ID)
        .then(s => {
          readSettings(s);
          s.changed.connect(readSettings);
        })
        .catch(err => console.warn('sds-jupyter: settings not loaded', err));
    }

    const open = (path: string): MainAreaWidget<VersionContent> => {
      const existing = tracker.find(w => w.content.path === path);
      if (existing) {
        shell.activateById(existing.id);
        return existing;
      }
      const panel = createVersionPanel(path, [
        {
          id: 'open-in-notebook',
          label: 'Open in notebook',
          title: 'Create a notebook that opens this version, and run it',
          run: async () => {
            const nb = await commands.execute(CommandIDs.openInNotebook, { path });
            return `Opened ${nb}`;
          }
        },
        {
          id: 'refresh',
          label: 'Refresh',
          title: 'Read the stack again',
          run: async () => {
            await panel.content.refresh();
            return 'Refreshed';
          }
        }
      ]);
      panel.title.icon = folderIcon;
      void tracker.add(panel);
      shell.add(panel, 'main');
      shell.activateById(panel.id);
      return panel;
    };

    commands.addCommand(CommandIDs.openVersion, {
      label: 'Open version',
      caption: 'Open a version folder of a SpatialData stack in the version browser',
      icon: args => (args.isPalette ? undefined : folderIcon),
      execute: async args => {
        let path = typeof args.path === 'string' ? args.path : null;
        if (path === null && args.fromBrowser) {
          path = selectedDir(app, browser);
        }
        if (path === null) {
          const answer = await InputDialog.getText({
            title: 'Open version',
            label: 'Version folder (relative to the server root)',
            text: browser ? app.serviceManager.contents.localPath(browser.model.path) : ''
          });
          if (!answer.button.accept || !answer.value) {
            return null;
          }
          path = answer.value;
        }
        path = path.replace(/^\/+|\/+$/g, '');
        return open(path).id;
      }
    });

    commands.addCommand(CommandIDs.openFolderContents, {
      label: 'Open folder contents',
      caption: 'Enter the folder in the file browser',
      isEnabled: () => !!browser,
      execute: async args => {
        const path = typeof args.path === 'string' ? args.path : selectedDir(app, browser);
        if (browser && path !== null) {
          await browser.model.cd(`/${path}`);
        }
      }
    });

    commands.addCommand(CommandIDs.openInNotebook, {
      label: 'Open version in notebook',
      caption: 'Create a notebook that opens the version, open it and run all cells',
      execute: async args => {
        const path = typeof args.path === 'string' ? args.path : selectedDir(app, browser);
        if (!path) {
          throw new Error('no version folder given');
        }
        const notebook = await createNotebook(path);
        const widget = (await commands.execute('docmanager:open', {
          path: notebook,
          factory: 'Notebook'
        })) as { id: string; context?: { sessionContext?: { ready: Promise<void> }; ready?: Promise<void> } } | undefined;
        if (widget) {
          await widget.context?.ready;
          await widget.context?.sessionContext?.ready;
          shell.activateById(widget.id);
          await commands.execute('notebook:run-all-cells');
        }
        return notebook;
      }
    });

    const selector = '.jp-DirListing-item[data-isdir="true"]';
    app.contextMenu.addItem({
      command: CommandIDs.openVersion,
      selector,
      rank: 1,
      args: { fromBrowser: true }
    });
    app.contextMenu.addItem({
      command: CommandIDs.openFolderContents,
      selector,
      rank: 1.1
    });
    if (palette) {
      palette.addItem({ command: CommandIDs.openVersion, category: 'SpatialData', args: { isPalette: true } });
    }
    if (restorer) {
      void restorer.restore(tracker, {
        command: CommandIDs.openVersion,
        args: w => ({ path: w.content.path }),
        name: w => w.content.path
      });
    }
  }
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
  browser: FileBrowser,
  detector: VersionDetector,
  openVersion: (item: Contents.IModel) => void,
  enterFolder: (item: Contents.IModel) => Promise<void>,
  enabled: () => boolean = () => current.openVersionsOnDoubleClick
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
      return; // an ordinary folder: the listing navigates as usual
    }
    event.stopPropagation();
    event.preventDefault();
    if (known === true) {
      openVersion(item);
      return;
    }
    // not checked yet: ask, then open it or enter it as the listing would have
    void detector.check(item.path).then(is => (is ? openVersion(item) : enterFolder(item)));
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

const fileBrowserPlugin: JupyterFrontEndPlugin<void> = {
  id: FILE_BROWSER_PLUGIN_ID,
  description: 'Double-click or Enter on a version folder opens the version browser.',
  autoStart: true,
  requires: [IDefaultFileBrowser],
  activate: (app: JupyterFrontEnd, browser: FileBrowser) => {
    const contents = app.serviceManager.contents;
    const detector = new VersionDetector(contents);
    installOpenHandler(
      browser,
      detector,
      item => void app.commands.execute(CommandIDs.openVersion, { path: contents.localPath(item.path) }),
      item => browser.model.cd(`/${contents.localPath(item.path)}`)
    );
  }
};

export default [plugin, fileBrowserPlugin];
