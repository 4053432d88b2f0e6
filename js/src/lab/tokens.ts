/** Plugin ids and command ids of the JupyterLab extension. */

export const PLUGIN_ID = 'sds-jupyter:plugin';

export enum CommandIDs {
  /** Open a version folder in the version browser. */
  openVersion = 'sds:open-version',
  /** Enter a (version) folder in the file browser as usual. */
  openFolderContents = 'sds:open-folder-contents',
  /** Ask the server for a notebook on a version, open it and run it. */
  openInNotebook = 'sds:open-in-notebook'
}

/** The settings of `schema/plugin.json`. */
export interface ISettings {
  openVersionsOnDoubleClick: boolean;
}
