/** Paths as the lab panel hands them to a notebook's kernel. */

import { PageConfig } from '@jupyterlab/coreutils';

/**
 * A version folder (relative to the server root, as the REST requests name it) as a path that
 * a kernel of this server opens from any notebook: the server root (the page config's
 * `serverRoot`) joined in front. JupyterLab writes a root inside the home folder as `~/…`;
 * `VersionBrowser` expands it (the kernel runs with the server's home). Without a known root,
 * the relative path is all there is.
 */
export function kernelPath(relative: string, serverRoot: string = PageConfig.getOption('serverRoot')): string {
  const root = serverRoot.replace(/[\\/]+$/, '');
  const rest = relative.replace(/^\/+/, '');
  if (!root) {
    return rest;
  }
  return rest ? `${root}/${rest}` : root;
}
