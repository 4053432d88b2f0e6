/**
 * A binary reply's buffers split by its declared layout (layouts.gen.ts, generated from
 * sds_jupyter/protocol/layouts.py): typed views by name, with a one-line error naming the
 * buffer that is missing, extra or of the wrong length. No decoder copies the order by hand.
 */

import { DRAWING_LAYOUT, LAYOUTS, type BufferDType, type BufferLayout, type BufferRule, type BufferTypes, type BufferWhen, type DrawingBuffers } from './layouts.gen';
import type { ReplyTypes } from './payloads.gen';
import { bytesOf, TransportError, type Buffer } from './transport';

type TypedArray = Float32Array | Uint8Array | Uint16Array | Uint32Array | Uint8ClampedArray;
type TypedCtor<T extends TypedArray> = { new (b: ArrayBuffer, offset: number, length: number): T; BYTES_PER_ELEMENT: number };

/** Typed view of a buffer; copies only when the offset is misaligned (WebGL and typed arrays need alignment). */
export function typed<T extends TypedArray>(buffer: Buffer, Ctor: TypedCtor<T>): T {
  const bytes = bytesOf(buffer);
  const size = Ctor.BYTES_PER_ELEMENT;
  if (bytes.byteOffset % size === 0) {
    return new Ctor(bytes.buffer as ArrayBuffer, bytes.byteOffset, Math.floor(bytes.byteLength / size));
  }
  const copy = bytes.slice();
  return new Ctor(copy.buffer as ArrayBuffer, 0, Math.floor(copy.byteLength / size));
}

const CTORS: Record<BufferDType, TypedCtor<Float32Array | Uint8Array | Uint16Array | Uint32Array>> = {
  float32: Float32Array,
  uint8: Uint8Array,
  uint16: Uint16Array,
  uint32: Uint32Array
};

/** The payload's value at a dotted path (undefined when a step is missing or null). */
function fieldValue(payload: unknown, path: string): unknown {
  let found: unknown = payload;
  for (const step of path.split('.')) {
    if (found === null || typeof found !== 'object') {
      return undefined;
    }
    found = (found as Record<string, unknown>)[step];
  }
  return found ?? undefined;
}

function holds(when: BufferWhen, payload: unknown): boolean {
  const found = fieldValue(payload, when.path);
  if (when.op === 'present') {
    return found !== undefined;
  }
  return (found === when.value) === (when.op === '==');
}

function dtypeOf(rule: BufferRule, payload: unknown): BufferDType {
  if (typeof rule.dtype === 'string') {
    return rule.dtype;
  }
  return rule.dtype.cases.find(([when]) => holds(when, payload))?.[1] ?? rule.dtype.otherwise;
}

/** A count from the payload: a number, or a list's length; undefined when absent. */
function countOf(payload: unknown, factor: string | number): number | undefined {
  const value = typeof factor === 'number' ? factor : fieldValue(payload, factor);
  return Array.isArray(value) ? value.length : typeof value === 'number' ? value : undefined;
}

/** A rule's length in elements, and how it reads ("n_cells + 1"); undefined when the payload lacks a field. */
function lengthOf(rule: BufferRule, payload: unknown): { length: number; rule: string } | undefined {
  if (!rule.length) {
    return undefined;
  }
  let length = 1;
  for (const factor of rule.length.factors) {
    const value = countOf(payload, factor);
    if (value === undefined) {
      return undefined;
    }
    length *= value;
  }
  const text = rule.length.factors.join(' × ') + (rule.length.plus ? ` + ${rule.length.plus}` : '');
  return { length: length + rule.length.plus, rule: text };
}

/** How many buffers of a rule the payload has: none when its condition fails, its repeat count, else one. */
function copiesOf(rule: BufferRule, payload: unknown): number {
  if (rule.when && !holds(rule.when, payload)) {
    return 0;
  }
  return rule.repeat === undefined ? 1 : (countOf(payload, rule.repeat) ?? 0);
}

/**
 * Split `buffers` by `layout` for `payload`: each buffer as a typed view of its declared type
 * under its name (a repeated one as an array), absent ones left out. Throws a protocol error
 * naming the buffer when one is missing, extra, not whole elements or not its declared length.
 */
export function splitByLayout(what: string, layout: BufferLayout, payload: unknown, buffers: Buffer[]): Record<string, TypedArray | TypedArray[]> {
  const split: Record<string, TypedArray | TypedArray[]> = {};
  let next = 0;
  for (const rule of layout) {
    const copies = copiesOf(rule, payload);
    const views: TypedArray[] = [];
    for (let k = 0; k < copies; k++) {
      const label = rule.repeat === undefined ? rule.name : `${rule.name}[${k}]`;
      const buffer = buffers[next++];
      if (!buffer) {
        throw new TransportError('protocol', `the ${what} reply is missing its ${label} buffer (${buffers.length} sent)`);
      }
      views.push(checkedView(what, label, rule, payload, buffer));
    }
    if (copies) {
      split[rule.name] = rule.repeat === undefined ? views[0] : views;
    }
  }
  if (next !== buffers.length) {
    throw new TransportError('protocol', `the ${what} reply has ${buffers.length} buffers; its layout accounts for ${next}`);
  }
  return split;
}

/** One buffer as a typed view of its rule's type, refused when it is not whole elements or not the declared length. */
function checkedView(what: string, label: string, rule: BufferRule, payload: unknown, buffer: Buffer): TypedArray {
  const dtype = dtypeOf(rule, payload);
  const Ctor = CTORS[dtype];
  const bytes = bytesOf(buffer).byteLength;
  if (bytes % Ctor.BYTES_PER_ELEMENT) {
    throw new TransportError('protocol', `the ${what} reply's ${label} buffer has ${bytes} bytes, not whole ${dtype} values`);
  }
  const view = typed(buffer, Ctor);
  const wanted = lengthOf(rule, payload);
  if (wanted && view.length !== wanted.length) {
    throw new TransportError('protocol', `the ${what} reply's ${label} buffer has ${view.length} ${dtype} values; ${wanted.rule} = ${wanted.length}`);
  }
  return view;
}

/** A binary request's reply buffers split by its generated layout (see splitByLayout). */
export function splitReply<K extends keyof BufferTypes>(request: K, payload: ReplyTypes[K], buffers: Buffer[]): BufferTypes[K] {
  return splitByLayout(request, LAYOUTS[request], payload, buffers) as unknown as BufferTypes[K];
}

/** A whole canvas drawing's buffers (x, y, values, image, shapes) split by its generated layout. */
export function splitDrawing(payload: unknown, buffers: Buffer[]): DrawingBuffers {
  return splitByLayout('canvas', DRAWING_LAYOUT, payload, buffers) as unknown as DrawingBuffers;
}
