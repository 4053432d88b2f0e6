/** The app's Transport over the server extension's REST API. */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { TransportError, decodeFrame, type FailureKind, type Reply, type Transport } from '../app/shared/transport';
import { WRITE_REQUESTS, type Data, type Params, type RequestName } from '../app/shared/types';
import type { VersionEntry } from './versions';

/** Where the API lives under the server's base URL. */
export const NAMESPACE = 'sds-jupyter/api';

type Query = Record<string, string | number | boolean | undefined | null>;

/**
 * Call the server extension: `GET {base_url}sds-jupyter/api/<name>?<query>`, or a
 * POST with a JSON body. JSON replies come back as `{data, buffers: []}`,
 * octet-stream replies are unframed. Failures are TransportErrors carrying the
 * server's `{kind, message}`.
 */
export async function requestAPI<T = unknown>(
  name: string,
  query: Query = {},
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<Reply<T>> {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null) {
      search.set(k, String(v));
    }
  }
  const qs = search.toString();
  const url = URLExt.join(settings.baseUrl, NAMESPACE, name) + (qs ? `?${qs}` : '');
  let response: Response;
  try {
    // 'no-cache' (revalidate) rather than JupyterLab's default 'no-store', which
    // appends a bare timestamp parameter that the API would refuse as unknown
    response = await ServerConnection.makeRequest(url, { cache: 'no-cache', ...init }, settings);
  } catch (err) {
    throw new TransportError('network', `could not reach the server: ${TransportError.from(err).message}`);
  }
  const type = response.headers.get('Content-Type') ?? '';
  if (!response.ok) {
    let kind: FailureKind = `http_${response.status}`;
    let message = response.statusText || `HTTP ${response.status}`;
    try {
      const body = await response.json();
      kind = body.kind ?? kind;
      message = body.message ?? message;
    } catch {
      // not JSON: keep the status line
    }
    if (response.status === 404 && kind === 'http_404' && !type.includes('json')) {
      message = `${message}: is the sds-jupyter server extension enabled?`;
    }
    throw new TransportError(kind, message);
  }
  const body = await response.arrayBuffer();
  if (type.includes('application/octet-stream') || isFrame(body)) {
    return decodeFrame<T>(body);
  }
  const text = new TextDecoder().decode(body);
  try {
    return { data: (text ? JSON.parse(text) : null) as T, buffers: [] };
  } catch {
    throw new TransportError('protocol', `the server sent no JSON for ${name}`);
  }
}

/**
 * A framed body starts with its header length as a little-endian u32: below
 * 16 MiB its fourth byte is 0, which UTF-8 JSON text never holds. So a frame is
 * recognised even behind a proxy that rewrites the content type.
 */
function isFrame(body: ArrayBuffer): boolean {
  return body.byteLength >= 4 && new Uint8Array(body, 3, 1)[0] === 0;
}

/** The Transport for one version folder (`path` relative to the server root). */
export class RestTransport implements Transport {
  constructor(
    /** The version folder asked about; moves when the view opens another version. */
    public path: string,
    private readonly settings: ServerConnection.ISettings = ServerConnection.makeSettings()
  ) {}

  /** This folder's transport, kept on it when this one moves (the views of the version left ask through it). */
  pin(): RestTransport {
    return new RestTransport(this.path, this.settings);
  }

  request<N extends RequestName>(name: N, params: Params<N>): Promise<Reply<Data<N>>> {
    if (WRITE_REQUESTS.includes(name)) {
      // a write is a POST with a JSON body: JupyterLab's request adds the XSRF token
      const body = JSON.stringify({ path: this.path, ...(params as object) });
      const init = { method: 'POST', body, headers: { 'Content-Type': 'application/json' } };
      return requestAPI<Data<N>>(name, {}, init, this.settings);
    }
    // a request naming its content by `key` is answered `immutable`: the browser's HTTP cache may
    // serve it without asking ('default'); every other one is revalidated (ETag, 304)
    const addressed = typeof (params as Query).key === 'string' && (params as Query).key !== '';
    return requestAPI<Data<N>>(
      name,
      { path: this.path, ...(params as Query) },
      addressed ? { method: 'GET', cache: 'default' } : { method: 'GET' },
      this.settings
    );
  }
}

/** The notebook the server made (or found again) for a version. */
export interface NotebookAnswer {
  /** Its path relative to the server root. */
  path: string;
  /** Whether it was made now (else it was made earlier for the same version). */
  created: boolean;
  /** Whether it still holds only the cells it was made with, so running it runs only those. */
  run: boolean;
}

/** Ask the server for the notebook that opens `path`. */
export async function createNotebook(
  path: string,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<NotebookAnswer> {
  const { data } = await requestAPI<{ notebook_path: string; created?: boolean; run?: boolean }>(
    'notebook',
    {},
    { method: 'POST', body: JSON.stringify({ path }), headers: { 'Content-Type': 'application/json' } },
    settings
  );
  if (!data?.notebook_path) {
    throw new TransportError('protocol', 'the server named no notebook');
  }
  return { path: data.notebook_path, created: data.created !== false, run: data.run === true };
}

/**
 * The version folders of a directory (relative to the server root) and their titles, then the
 * folders whose layer.json cannot be read (no versions, but no plain folders either: `unreadable` says why).
 */
export async function listVersions(
  dir: string,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<VersionEntry[]> {
  type Answer = { versions?: { name: string; title: string | null }[]; unreadable?: { name: string; reason: string }[] };
  const { data } = await requestAPI<Answer>('versions', { path: dir }, { method: 'GET' }, settings);
  const versions = Array.isArray(data?.versions) ? data.versions : [];
  const broken = Array.isArray(data?.unreadable) ? data.unreadable : [];
  return [...versions, ...broken.map(b => ({ name: b.name, title: null, unreadable: String(b.reason) }))];
}
