import type { Data, ErrorKind, Params, RequestName } from './types';

/** Binary buffers as they arrive: DataView from anywidget, ArrayBuffer from fetch. */
export type Buffer = DataView | ArrayBuffer;

export type Reply<T> = { data: T; buffers: Buffer[] };

/**
 * How the app reaches the service. The widget implements it over comm messages,
 * the JupyterLab extension over REST; the app knows neither.
 */
export interface Transport {
  request<N extends RequestName>(name: N, params: Params<N>): Promise<Reply<Data<N>>>;
  /**
   * A transport that keeps asking the stack this one asks now, wherever this one is moved later
   * (a panel moved to another version). Absent: this transport never moves.
   */
  pin?(): Transport;
}

/**
 * `transport` held to the stack it asks now (itself when it never moves). A view made for one
 * stack asks through this: a depth it carries is a depth of that stack, so a request it makes
 * after its panel moved on (a tile, a poll) is answered by the stack the depth belongs to, never
 * asked of the new one ("no version at depth 4").
 */
export function pinned(transport: Transport): Transport {
  return transport.pin?.() ?? transport;
}

/**
 * Failures named in the browser, on the way to the service or in reading its reply; the service's
 * own refusals are `ErrorKind`, generated from the Python list (`sds_jupyter.errors.ErrorKind`).
 */
export type ClientErrorKind = 'client' | 'protocol' | 'network' | 'timeout' | 'closed' | `http_${number}`;

/** Every kind a TransportError may carry. */
export type FailureKind = ErrorKind | ClientErrorKind;

/** A failed request: the service's `{kind, message}`, or a transport failure. */
export class TransportError extends Error {
  readonly kind: FailureKind;

  constructor(kind: FailureKind, message: string) {
    super(message);
    this.name = 'TransportError';
    this.kind = kind;
  }

  /** Turn anything thrown into a TransportError. */
  static from(err: unknown): TransportError {
    if (err instanceof TransportError) {
      return err;
    }
    if (err instanceof Error) {
      return new TransportError('client', err.message);
    }
    return new TransportError('client', String(err));
  }
}

/** The bytes of a buffer as a Uint8Array view (no copy). */
export function bytesOf(buffer: Buffer): Uint8Array {
  if (buffer instanceof ArrayBuffer) {
    return new Uint8Array(buffer);
  }
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

/**
 * Decode the REST octet-stream framing: a 4-byte little-endian length `n`, `n`
 * bytes of UTF-8 JSON `{data, buffers: [byte lengths]}`, then the buffers.
 */
export function decodeFrame<T = unknown>(frame: ArrayBuffer): Reply<T> {
  if (frame.byteLength < 4) {
    throw new TransportError('protocol', 'binary reply shorter than its header');
  }
  const view = new DataView(frame);
  const n = view.getUint32(0, true);
  if (4 + n > frame.byteLength) {
    throw new TransportError('protocol', 'binary reply header runs past the end');
  }
  const text = new TextDecoder().decode(new Uint8Array(frame, 4, n));
  let head: { data: T; buffers?: number[] };
  try {
    head = JSON.parse(text);
  } catch (e) {
    throw new TransportError('protocol', `binary reply header is not JSON: ${String(e)}`);
  }
  const buffers: ArrayBuffer[] = [];
  let offset = 4 + n;
  for (const length of head.buffers ?? []) {
    if (offset + length > frame.byteLength) {
      throw new TransportError('protocol', 'binary reply is shorter than its buffers');
    }
    // slice copies, so every buffer starts aligned for typed-array views.
    buffers.push(frame.slice(offset, offset + length));
    offset += length;
  }
  return { data: head.data, buffers };
}

/** Encode `{data, buffers}` in the REST framing (used by tests and fakes). */
export function encodeFrame(data: unknown, buffers: ArrayBufferView[] = []): ArrayBuffer {
  const head = new TextEncoder().encode(
    JSON.stringify({ data, buffers: buffers.map(b => b.byteLength) })
  );
  const total = 4 + head.byteLength + buffers.reduce((s, b) => s + b.byteLength, 0);
  const out = new Uint8Array(total);
  new DataView(out.buffer).setUint32(0, head.byteLength, true);
  out.set(head, 4);
  let offset = 4 + head.byteLength;
  for (const b of buffers) {
    out.set(new Uint8Array(b.buffer, b.byteOffset, b.byteLength), offset);
    offset += b.byteLength;
  }
  return out.buffer;
}
