/** The version browser as a main-area panel. */

import { MainAreaWidget } from '@jupyterlab/apputils';
import { Signal, type ISignal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import { mountApp, type AppAction, type AppHandle, type BackStep } from '../app';
import type { History } from '../app/shared/types';
import { kernelPath } from './paths';
import { RestTransport } from './transport';

export class VersionContent extends Widget {
  private app: AppHandle | null = null;
  private readonly transport: RestTransport;
  private readonly moved = new Signal<this, string>(this);
  private backSteps: BackStep[];

  /**
   * What JupyterLab's layout knows this panel by, for good: the folder it was first opened on
   * (made unique among open panels). The panel moves to other versions, but a reload matches
   * the saved layout's entry by this name, so it must not move with it.
   */
  readonly origin: string;

  constructor(
    path: string,
    actions: AppAction[],
    onHistory: (h: History) => void,
    onClose?: () => void,
    origin: string = path,
    trail: BackStep[] = []
  ) {
    super();
    this.origin = origin;
    this.backSteps = trail;
    this.transport = new RestTransport(path);
    this.addClass('sds-panel');
    this.app = mountApp(this.node, this.transport, {
      actions,
      onHistory,
      onClose,
      // "Copy code" must work in whichever notebook it is pasted: a path from the server root
      path: () => kernelPath(this.transport.path),
      // another version of the tree opens in this panel (folders are relative to the server root)
      openVersion: async folder => {
        this.transport.path = folder;
        this.moved.emit(folder);
      },
      // the way back is saved with the layout too, so Back survives a reload
      trail,
      onTrail: steps => {
        this.backSteps = steps;
        this.moved.emit(this.transport.path);
      }
    });
  }

  /** The panel moved to another version of its tree: what a reload restores has changed. */
  get pathChanged(): ISignal<this, string> {
    return this.moved;
  }

  /** The way back (the versions left, oldest first), as a reload restores it. */
  get trail(): BackStep[] {
    return this.backSteps;
  }

  /** The version folder shown (relative to the server root). */
  get path(): string {
    return this.transport.path;
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

let panelIds = 0;

/** The open version panels and the title each would carry alone: two never carry the same tab title. */
const titled = new Map<MainAreaWidget<VersionContent>, string>();

/**
 * Label every open panel: its version's title, and where two panels share one, each followed by
 * what tells them apart (the version's folder name, cut to 8 characters, else its parent folder).
 */
export function uniqueLabels(): void {
  const byTitle = new Map<string, MainAreaWidget<VersionContent>[]>();
  for (const [panel, title] of titled) {
    byTitle.set(title, [...(byTitle.get(title) ?? []), panel]);
  }
  for (const [title, panels] of byTitle) {
    const names = panels.map(p => p.content.path.split('/').filter(Boolean));
    const short = names.map(parts => (parts[parts.length - 1] ?? '').slice(0, 8));
    const clash = new Set(short).size < short.length;
    panels.forEach((panel, i) => {
      const hint = clash ? names[i].slice(-2, -1)[0] ?? '' : short[i];
      const label = panels.length > 1 && hint ? `${title} · ${hint}` : title;
      if (panel.title.label !== label) {
        panel.title.label = label;
      }
    });
  }
}

/** A panel for the version folder `path`, titled from its history. */
export function createVersionPanel(
  path: string,
  actions: AppAction[],
  origin: string = path,
  trail: BackStep[] = []
): MainAreaWidget<VersionContent> {
  const name = path.split('/').filter(Boolean).pop() ?? path;
  let panel: MainAreaWidget<VersionContent> | null = null;
  const content = new VersionContent(path, actions, history => {
    if (!panel) {
      return;
    }
    const top = [...(history.versions ?? [])].sort((a, b) => b.depth - a.depth)[0];
    const title = top?.title || top?.dataset_id || name;
    titled.set(panel, title);
    uniqueLabels();
    panel.title.caption = `${title}\n${content.path}`;
  }, () => panel?.close(), origin, trail);
  panel = new MainAreaWidget({ content });
  // an id of its own: the panel moves to other versions, so its first folder would not name it
  // (a panel for a folder is found by the folder it shows, see the tracker)
  panel.id = `sds-version-${++panelIds}`;
  panel.title.label = name;
  panel.title.caption = path;
  panel.title.closable = true;
  panel.disposed.connect(() => {
    titled.delete(panel!);
    uniqueLabels();
  });
  panel.title.iconClass = 'jp-FolderIcon';
  return panel;
}
