/** The version browser as a main-area panel. */

import { MainAreaWidget } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';
import { mountApp, type AppAction, type AppHandle } from '../app';
import type { History } from '../app/types';
import { RestTransport } from './transport';

export class VersionContent extends Widget {
  readonly path: string;
  private app: AppHandle | null = null;

  constructor(path: string, actions: AppAction[], onHistory: (h: History) => void, onClose?: () => void) {
    super();
    this.path = path;
    this.addClass('sds-panel');
    this.app = mountApp(this.node, new RestTransport(path), { actions, onHistory, path, onClose });
  }

  refresh(): Promise<void> {
    return this.app?.refresh() ?? Promise.resolve();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.app?.dispose();
    this.app = null;
    super.dispose();
  }
}

/** A panel for the version folder `path`, titled from its history. */
export function createVersionPanel(
  path: string,
  actions: AppAction[]
): MainAreaWidget<VersionContent> {
  const name = path.split('/').filter(Boolean).pop() ?? path;
  let panel: MainAreaWidget<VersionContent> | null = null;
  const content = new VersionContent(path, actions, history => {
    if (!panel) {
      return;
    }
    const top = [...(history.versions ?? [])].sort((a, b) => b.depth - a.depth)[0];
    const title = top?.title || top?.dataset_id || name;
    panel.title.label = title;
    panel.title.caption = `${title}\n${path}`;
  }, () => panel?.close());
  panel = new MainAreaWidget({ content });
  panel.id = `sds-version-${encodeURIComponent(path)}`;
  panel.title.label = name;
  panel.title.caption = path;
  panel.title.closable = true;
  panel.title.iconClass = 'jp-FolderIcon';
  return panel;
}
