/** Which folders are versions: they hold `layer.json` at the top or under `data/`. */

import type { Contents } from '@jupyterlab/services';

type Getter = Pick<Contents.IManager, 'get'>;

export class VersionDetector {
  private readonly pending = new Map<string, Promise<boolean>>();
  private readonly known = new Map<string, boolean>();

  constructor(private readonly contents: Getter) {}

  /** The cached answer for `path`, or undefined when not checked yet. */
  cached(path: string): boolean | undefined {
    return this.known.get(path);
  }

  /** Forget every answer (the listing was refreshed). */
  clear(): void {
    this.pending.clear();
    this.known.clear();
  }

  /** Whether `path` is a version folder; one contents request per folder until cleared. */
  check(path: string): Promise<boolean> {
    let p = this.pending.get(path);
    if (!p) {
      p = this.lookup(path).then(
        is => {
          if (this.pending.get(path) === p) {
            this.known.set(path, is);
          }
          return is;
        },
        () => false
      );
      this.pending.set(path, p);
    }
    return p;
  }

  private async lookup(path: string): Promise<boolean> {
    const dir = await this.contents.get(path, { content: true });
    const items = (Array.isArray(dir.content) ? dir.content : []) as Contents.IModel[];
    if (items.some(i => i.name === 'layer.json' && i.type !== 'directory')) {
      return true;
    }
    if (!items.some(i => i.name === 'data' && i.type === 'directory')) {
      return false;
    }
    const data = await this.contents.get(`${path}/data`, { content: true });
    const inner = (Array.isArray(data.content) ? data.content : []) as Contents.IModel[];
    return inner.some(i => i.name === 'layer.json' && i.type !== 'directory');
  }
}
