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
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { folderIcon } from '@jupyterlab/ui-components';
import { createVersionPanel, type VersionContent } from './panel';
import { CommandIDs, PLUGIN_ID } from './tokens';
import { createNotebook, listVersions } from './transport';
import { installDecorator } from './decorate';
import { installOpenHandler, settingsState as current } from './handler';
import { VersionDetector } from './versions';

export { CommandIDs, PLUGIN_ID } from './tokens';
export { requestAPI, RestTransport } from './transport';
export { VersionDetector } from './versions';
export { installOpenHandler } from './handler';

const FILE_BROWSER_PLUGIN_ID = 'sds-jupyter:file-browser';

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
          title: 'Open this version’s notebook (made on first use) and run it',
          run: async () => {
            const nb = await commands.execute(CommandIDs.openInNotebook, { path: panel.content.path });
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
      caption: 'Open the notebook that opens the version (made on first use, then reused) and run it',
      execute: async args => {
        const path = typeof args.path === 'string' ? args.path : selectedDir(app, browser);
        if (!path) {
          throw new Error('no version folder given');
        }
        const notebook = await createNotebook(path);
        const widget = (await commands.execute('docmanager:open', {
          path: notebook.path,
          factory: 'Notebook'
        })) as { id: string; context?: { sessionContext?: { ready: Promise<void> }; ready?: Promise<void> } } | undefined;
        if (widget) {
          await widget.context?.ready;
          await widget.context?.sessionContext?.ready;
          shell.activateById(widget.id);
          // A notebook edited since it was made holds someone's cells: open it, never run them unasked.
          if (notebook.run) {
            await commands.execute('notebook:run-all-cells');
          }
        }
        return notebook.run ? notebook.path : `${notebook.path} (edited since it was made: not run)`;
      }
    });

    // only version folders (marked by the file-browser plugin from one request per listing)
    const selector = '.jp-DirListing-item[data-isdir="true"][data-sds-version="true"]';
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

const fileBrowserPlugin: JupyterFrontEndPlugin<void> = {
  id: FILE_BROWSER_PLUGIN_ID,
  description: 'Double-click or Enter on a version folder opens the version browser.',
  autoStart: true,
  requires: [IDefaultFileBrowser],
  activate: (app: JupyterFrontEnd, browser: FileBrowser) => {
    const contents = app.serviceManager.contents;
    // keyed by contents paths (as the listing's items name them); the server gets local paths
    const detector = new VersionDetector(
      dir => listVersions(contents.localPath(dir)),
      // the listing shown: a refresh that changed no name or mtime keeps the answer
      dir =>
        dir === browser.model.path
          ? [...browser.model.items()].map(i => `${i.name}\u0000${i.last_modified}`).join('\n')
          : null
    );
    const decorator = installDecorator({ node: browser.node, path: () => browser.model.path }, detector);
    // the handler clears the detector on a refresh (connected first); then list again
    const relist = () => void decorator.reload();
    installOpenHandler(
      browser,
      detector,
      item => void app.commands.execute(CommandIDs.openVersion, { path: contents.localPath(item.path) }),
      item => browser.model.cd(`/${contents.localPath(item.path)}`)
    );
    browser.model.refreshed.connect(relist);
    browser.model.pathChanged.connect(relist);
  }
};

export default [plugin, fileBrowserPlugin];
