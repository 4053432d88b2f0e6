import { describe, expect, it } from 'vitest';
import { cancelLoad, loadInto } from '../app/shared/load';
import { TransportError } from '../app/shared/transport';
import { text } from './fixtures';

/** A request that answers when told to. */
function deferred<T>(): { promise: Promise<{ data: T }>; answer(v: T): void; fail(e: unknown): void } {
  let answer!: (v: T) => void;
  let fail!: (e: unknown) => void;
  const promise = new Promise<{ data: T }>((res, rej) => {
    answer = v => res({ data: v });
    fail = rej;
  });
  return { promise, answer, fail };
}

describe('loadInto: ask, then draw if still current', () => {
  it('shows a spinner, draws the newest answer, ignores a late older one, and shows a failure in place', async () => {
    const node = document.createElement('div');
    const slow = deferred<string>();
    const fast = deferred<string>();
    const draw = (v: string) => {
      node.textContent = v;
    };
    const first = loadInto(node, () => slow.promise, draw);
    expect(node.querySelector('.sds-loading[role="status"]')).not.toBeNull();
    const second = loadInto(node, () => fast.promise, draw);
    fast.answer('second');
    await second;
    slow.answer('first');
    await first;
    expect(text(node)).toBe('second');

    // a failure: one line in place, of the newest load only
    const failing = deferred<string>();
    const third = loadInto(node, () => failing.promise, draw);
    failing.fail(new TransportError('not-found', 'No version 9 in this stack.'));
    await third;
    expect(text(node.querySelector('.sds-error[role="alert"] .sds-error-message'))).toBe('No version 9 in this stack.');

    // cancelled: the node shows something drawn without a request, a late answer stays out
    const late = deferred<string>();
    const fourth = loadInto(node, () => late.promise, draw);
    cancelLoad(node);
    node.textContent = 'the base';
    late.answer('late');
    await fourth;
    expect(text(node)).toBe('the base');
  });

  it('hands render a `current` that turns false once a newer load starts', async () => {
    const node = document.createElement('div');
    let current: (() => boolean) | null = null;
    await loadInto(node, async () => ({ data: 1 }), (_v, c) => {
      current = c;
    });
    expect(current!()).toBe(true);
    await loadInto(node, async () => ({ data: 2 }), () => undefined);
    expect(current!()).toBe(false);
  });
});
