/**
 * Which folders of a listing are versions, and their titles: one request per
 * directory (`GET api/versions?path=<dir>`), answered by the server with the
 * stack library's rule (`locate_version`; nothing here restates it), cached
 * until the listing refreshes.
 */

/** One version folder of a directory, as the server names it; `unreadable` says why its layer.json cannot be read. */
export type VersionEntry = { name: string; title: string | null; unreadable?: string };

/** Lists the version folders of a directory (a server path). */
export type Lister = (dir: string) => Promise<VersionEntry[]>;

function split(path: string): [string, string] {
  const clean = path.replace(/\/+$/, '');
  const cut = clean.lastIndexOf('/');
  return cut < 0 ? ['', clean] : [clean.slice(0, cut), clean.slice(cut + 1)];
}

/** A directory's listing as the file browser holds it (names and mtimes), or null when it has none. */
export type Stamp = (dir: string) => string | null;

export class VersionDetector {
  private readonly pending = new Map<string, Promise<Map<string, string | null>>>();
  private readonly known = new Map<string, Map<string, string | null>>();
  private readonly broken = new Map<string, Map<string, string>>();
  private readonly stamps = new Map<string, string>();

  /**
   * `stamp` lets a refresh that changed nothing in a directory (same names, same
   * modification times) keep its answer instead of asking again.
   */
  constructor(
    private readonly list: Lister,
    private readonly stamp: Stamp = () => null
  ) {}

  /** Forget every answer (the listing was refreshed); unchanged listings are kept. */
  clear(): void {
    for (const dir of [...this.pending.keys()]) {
      const now = this.stamp(dir);
      if (now === null || now !== this.stamps.get(dir)) {
        this.pending.delete(dir);
        this.known.delete(dir);
        this.broken.delete(dir);
        this.stamps.delete(dir);
      }
    }
  }

  /** The version folders of `dir` by name, with their titles; one request per directory. */
  listing(dir: string): Promise<Map<string, string | null>> {
    let p = this.pending.get(dir);
    if (!p) {
      const stamp = this.stamp(dir);
      if (stamp !== null) {
        this.stamps.set(dir, stamp);
      }
      p = this.list(dir).then(
        entries => {
          const readable = entries.filter(e => e.unreadable === undefined);
          const map = new Map(readable.map(e => [e.name, e.title] as [string, string | null]));
          if (this.pending.get(dir) === p) {
            this.known.set(dir, map);
            this.broken.set(dir, new Map(entries.filter(e => e.unreadable !== undefined).map(e => [e.name, e.unreadable!])));
          }
          return map;
        },
        () => new Map<string, string | null>()
      );
      this.pending.set(dir, p);
    }
    return p;
  }

  /** The folders of a listed `dir` whose layer.json cannot be read, with why (none until listed). */
  unreadable(dir: string): Map<string, string> {
    return this.broken.get(dir) ?? new Map();
  }

  /** Why the folder at `path` cannot be read as a version (undefined: it can, or is no version, or not listed). */
  whyUnreadable(path: string): string | undefined {
    const [dir, name] = split(path);
    return this.broken.get(dir)?.get(name);
  }

  /** Whether `path` is a version folder, when its directory was listed already. */
  cached(path: string): boolean | undefined {
    const [dir, name] = split(path);
    return this.known.get(dir)?.has(name);
  }

  /** The title of the version at `path` (null: untitled; undefined: not a version or not listed). */
  title(path: string): string | null | undefined {
    const [dir, name] = split(path);
    return this.known.get(dir)?.get(name);
  }

  /** Whether `path` is a version folder (asks for its directory's listing once). */
  async check(path: string): Promise<boolean> {
    const [dir, name] = split(path);
    return (await this.listing(dir)).has(name);
  }
}
