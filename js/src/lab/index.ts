/**
 * JupyterLab extension: version folders open in the version browser.
 *
 * - `sds-jupyter:plugin`: commands, the panel, the settings (schema/plugin.json);
 * - `sds-jupyter:file-browser`: double-click / Enter on a version folder opens it
 *   in the browser panel instead of entering it (capture phase, before the listing).
 */

import {
  ILabShell,
  ILayoutRestorer,
  type JupyterFrontEnd,
  type JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, InputDialog, MainAreaWidget, Notification, WidgetTracker } from '@jupyterlab/apputils';
import { PageConfig } from '@jupyterlab/coreutils';
import { IDefaultFileBrowser, type FileBrowser } from '@jupyterlab/filebrowser';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { folderIcon, historyIcon } from '@jupyterlab/ui-components';
import { TabPanel, type Widget } from '@lumino/widgets';
import { createVersionPanel, VersionContent } from './panel';
import type { BackStep } from '../app';
import { CommandIDs, PLUGIN_ID } from './tokens';
import { createNotebook, listVersions, RestTransport } from './transport';
import { VersionsSidebar } from './sidebar';
import { installDecorator } from './decorate';
import { installOpenHandler, settingsState as current } from './handler';
import { VersionDetector } from './versions';

export { CommandIDs, PLUGIN_ID } from './tokens';
export { requestAPI, RestTransport } from './transport';
export { VersionDetector } from './versions';
export { installOpenHandler } from './handler';

const FILE_BROWSER_PLUGIN_ID = 'sds-jupyter:file-browser';
const SIDEBAR_PLUGIN_ID = 'sds-jupyter:versions-sidebar';

/**
 * Jupyter Notebook 7 names the page it serves. Only its tree page has a file browser
 * and room for a panel; on its notebook, editor and console pages these plugins would
 * only instantiate a file browser that page never shows (and that Notebook then tries
 * to restore with commands the page lacks). The widget needs neither plugin.
 */
const NOTEBOOK_PAGE = PageConfig.getOption('notebookPage');
const ON_THIS_PAGE = !NOTEBOOK_PAGE || NOTEBOOK_PAGE === 'tree';

function readSettings(s: ISettingRegistry.ISettings): void {
  current.openVersionsOnDoubleClick = s.get('openVersionsOnDoubleClick').composite !== false;
}

/**
 * Show `panel` in the main area. JupyterLab docks it as a tab. Jupyter Notebook 7
 * keeps one widget in its main area and ignores a second: on its tree page that
 * widget is a tab panel (Files, Running, settings...), so the version opens as one
 * more tab there, as Notebook's own settings editor does.
 */
function showInMain(shell: JupyterFrontEnd.IShell, panel: Widget): boolean {
  if (!panel.isAttached) {
    shell.add(panel, 'main');
  }
  if (!panel.isAttached) {
    const main = [...shell.widgets('main')][0];
    if (!(main instanceof TabPanel)) {
      return false;
    }
    main.addWidget(panel);
  }
  const tabs = panel.parent?.parent;
  if (tabs instanceof TabPanel) {
    tabs.currentWidget = panel;
  }
  shell.activateById(panel.id);
  return true;
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
  autoStart: ON_THIS_PAGE,
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

    // a restored panel keeps the name its layout entry was saved under (see VersionContent.origin)
    const freshOrigin = (path: string): string => {
      let origin = path;
      for (let n = 2; tracker.find(w => w.content.origin === origin); n++) {
        origin = `${path}#${n}`;
      }
      return origin;
    };

    const open = (path: string, origin?: string, trail: BackStep[] = []): MainAreaWidget<VersionContent> => {
      const existing = tracker.find(w => w.content.path === path);
      if (existing) {
        showInMain(shell, existing);
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
          title: 'Read the version folder again',
          run: async () => {
            await panel.content.refresh();
            return 'Refreshed';
          }
        }
      ], origin ?? freshOrigin(path), trail);
      panel.title.icon = folderIcon;
      if (!showInMain(shell, panel)) {
        panel.dispose();
        throw new Error('this page has no room for a version panel; open the version from the file browser');
      }
      void tracker.add(panel);
      // a reload restores the version the panel shows now, not the one it was opened on
      panel.content.pathChanged.connect(() => void tracker.save(panel));
      return panel;
    };

    commands.addCommand(CommandIDs.openVersion, {
      label: 'Open version',
      caption: 'Open a saved version of a SpatialData dataset in the version browser',
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
            // the folder selected in the file browser, else the folder it shows
            text: selectedDir(app, browser) ?? (browser ? app.serviceManager.contents.localPath(browser.model.path) : '')
          });
          if (!answer.button.accept || !answer.value) {
            return null;
          }
          path = answer.value;
        }
        path = path.replace(/^\/+|\/+$/g, '');
        const trail = Array.isArray(args.trail) ? (args.trail as BackStep[]) : [];
        return open(path, typeof args.origin === 'string' ? args.origin : undefined, trail).id;
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
        })) as (Widget & { context?: { sessionContext?: { ready: Promise<void> }; ready?: Promise<void> } }) | undefined;
        if (widget) {
          // Notebook 7 opens a notebook in a new browser tab and disposes this page's widget
          const gone = new Promise<void>(resolve =>
            widget.isDisposed ? resolve() : widget.disposed.connect(() => resolve())
          );
          await Promise.race([
            (async () => {
              await widget.context?.ready;
              await widget.context?.sessionContext?.ready;
            })(),
            gone
          ]);
          if (widget.isDisposed) {
            return `${notebook.path} (opened in a new tab${notebook.run ? ': run its cells there' : ''})`;
          }
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
        args: w => ({ path: w.content.path, origin: w.content.origin, trail: w.content.trail }),
        name: w => w.content.origin
      });
    }
  }
};

const fileBrowserPlugin: JupyterFrontEndPlugin<void> = {
  id: FILE_BROWSER_PLUGIN_ID,
  description: 'Double-click or Enter on a version folder opens the version browser.',
  autoStart: ON_THIS_PAGE,
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
    let unreadableNote: string | null = null;
    const decorator = installDecorator({ node: browser.node, path: () => browser.model.path }, detector);
    // the handler clears the detector on a refresh (connected first); then list again
    const relist = () => void decorator.reload();
    installOpenHandler(
      browser,
      detector,
      item => void app.commands.execute(CommandIDs.openVersion, { path: contents.localPath(item.path) }),
      item => browser.model.cd(`/${contents.localPath(item.path)}`),
      undefined,
      // a folder with a layer.json that cannot be read: browsed into, and said why (text, never markup);
      // the note stays until dismissed (or the next one replaces it), so it can be read at leisure
      (item, why) => {
        if (unreadableNote) {
          Notification.dismiss(unreadableNote);
        }
        // JupyterLab cuts a note at 140 characters: what happened first, the reason after it (the
        // folder's tooltip in the listing has the whole reason)
        unreadableNote = Notification.warning(
          `${item.name}: its layer.json cannot be read, so its files are shown instead. ${why}`,
          { autoClose: false }
        );
      }
    );
    browser.model.refreshed.connect(relist);
    browser.model.pathChanged.connect(relist);
  }
};

const sidebarPlugin: JupyterFrontEndPlugin<void> = {
  id: SIDEBAR_PLUGIN_ID,
  description: 'A Versions sidebar: the versions of the file browser’s folder, by base, newest first.',
  // JupyterLab only: Notebook 7's tree page has no left area beside its file browser
  autoStart: !NOTEBOOK_PAGE,
  requires: [IDefaultFileBrowser],
  optional: [ILayoutRestorer, ILabShell],
  activate: (app: JupyterFrontEnd, browser: FileBrowser, restorer: ILayoutRestorer | null, labShell: ILabShell | null) => {
    const contents = app.serviceManager.contents;
    const here = () => contents.localPath(browser.model.path);
    const sidebar = new VersionsSidebar(
      {
        list: dir => listVersions(dir),
        tree: async version => (await new RestTransport(version).request('tree', {})).data
      },
      // the file browser's double-click opens a version with this same command
      { open: folder => void app.commands.execute(CommandIDs.openVersion, { path: folder }) },
      here
    );
    sidebar.title.icon = historyIcon;
    // the sidebar highlights the version the current panel shows, and follows it when it moves
    const watched = new WeakSet<VersionContent>();
    const followPanel = (): void => {
      const w = app.shell.currentWidget;
      if (w instanceof MainAreaWidget && w.content instanceof VersionContent) {
        const content = w.content;
        if (!watched.has(content)) {
          watched.add(content);
          content.pathChanged.connect(() => {
            if (app.shell.currentWidget === w) {
              sidebar.view.showOpened(content.path);
            }
          });
        }
        sidebar.view.showOpened(content.path);
      }
    };
    labShell?.currentChanged.connect(followPanel);
    app.shell.add(sidebar, 'left', { rank: 150 });
    restorer?.add(sidebar, SIDEBAR_PLUGIN_ID);
    browser.model.pathChanged.connect(() => sidebar.follow(here()));
    // a refresh that changed the listing (a version saved, a folder removed) reads it again; the
    // browser's periodic refresh of an unchanged listing redraws nothing (the focus stays put)
    const stamp = () => [...browser.model.items()].map(i => `${i.name}\u0000${i.last_modified}`).join('\n');
    let last = '';
    let lastDir = here();
    browser.model.refreshed.connect(() => {
      const now = stamp();
      // a move to another folder is read on pathChanged already
      sidebar.follow(here(), now !== last && here() === lastDir);
      last = now;
      lastDir = here();
    });
    sidebar.follow(here());
  }
};

export default [plugin, fileBrowserPlugin, sidebarPlugin];
