import { afterEach, describe, expect, it } from 'vitest';
import { mountApp, type AppHandle } from '../app';
import { HistoryView } from '../app/history/history';
import { Clock } from '../app/shared/clock';
import { changeLabel, relativeTime } from '../app/shared/format';
import { TransportError } from '../app/shared/transport';
import { FakeTransport, NOW, fakeCharts, history, settle, text } from './fixtures';

let app: AppHandle | null = null;
afterEach(() => {
  app?.dispose();
  app = null;
  document.body.replaceChildren();
});

function mount(t: FakeTransport): HTMLElement {
  const el = document.createElement('div');
  document.body.append(el);
  app = mountApp(el, t, { now: () => NOW, renderChart: fakeCharts().render });
  return el;
}

function rows(el: HTMLElement): HTMLElement[] {
  return [...el.querySelectorAll<HTMLElement>('.sds-history-row')];
}

function key(el: Element, k: string): void {
  el.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true }));
}

/** Past the key debounce. */
const rest = () => new Promise(r => setTimeout(r, 200));

const EMPTY_CHANGES = { ops: [], details: [], added: [], replaced: [], deleted: [] };

describe('format', () => {
  it('formats relative times', () => {
    expect(relativeTime(new Date(NOW - 3 * 60_000).toISOString(), NOW)).toBe('3 minutes ago');
    expect(relativeTime(new Date(NOW - 2 * 3600_000).toISOString(), NOW)).toBe('2 hours ago');
    expect(relativeTime(new Date(NOW - 86400_000).toISOString(), NOW)).toBe('yesterday');
    expect(relativeTime(new Date(NOW - 10_000).toISOString(), NOW)).toBe('just now');
    expect(relativeTime('not a date', NOW)).toBe('not a date');
  });

  it('labels change ops readably', () => {
    expect(changeLabel({ op: 'set-obs', column: 'regions', dtype: 'categorical' })).toBe(
      'set-obs regions (categorical)'
    );
    expect(changeLabel({ op: 'delete-uns', key: 'foo' })).toBe('delete-uns foo');
    expect(changeLabel({ op: 'odd', weight: 3 })).toBe('odd weight=3');
  });
});

describe('history', () => {
  it('renders one row per version top first, then the base, with badges and times', async () => {
    const h = history(3);
    h.versions[0].changes = [
      { op: 'set-obs', column: 'regions', dtype: 'categorical' },
      { op: 'delete-uns', key: 'foo' }
    ];
    h.versions[1].title = null;
    h.versions[1].created_at = new Date(NOW - 5 * 60_000).toISOString();
    // versions arrive in any order: the view sorts by depth
    h.versions.reverse();
    const t = new FakeTransport().on('history', () => h).on('changes', () => EMPTY_CHANGES);
    const el = mount(t);
    await settle();
    const r = rows(el);
    expect(r.map(x => x.dataset.depth)).toEqual(['3', '2', '1', '0']);
    expect(text(r[0].querySelector('.sds-row-title'))).toBe('Version 3');
    expect(text(r[0].querySelector('.sds-row-message'))).toBe('message 3');
    expect(text(r[0].querySelector('.sds-row-who'))).toBe('ana');
    expect(text(r[0].querySelector('.sds-row-app'))).toBe('spatial-data-studio 1.2.0');
    expect([...r[0].querySelectorAll('.sds-badge')].map(b => text(b))).toEqual([
      'set-obs regions (categorical)',
      'delete-uns foo'
    ]);
    // no title: the dataset id stands in
    expect(text(r[1].querySelector('.sds-row-title'))).toBe('ds-2');
    const when = r[1].querySelector('time')!;
    expect(text(when)).toBe('5 minutes ago');
    expect(when.getAttribute('title')).toContain(h.versions.find(v => v.depth === 2)!.created_at!);
    expect(text(r[3])).toContain('base-ds');
    expect(text(r[3])).toContain('Zarr v3');
    // header names the top version
    expect(text(el.querySelector('.sds-title-text'))).toBe('Version 3');
    // the top is selected and its changes requested
    expect(r[0].getAttribute('aria-selected')).toBe('true');
    expect(t.callsOf('changes')).toEqual([{ version: 3 }]);
  });

  it('selects by click and by arrow keys, loading each selection where the keys rest', async () => {
    const t = new FakeTransport()
      .on('history', () => history(3))
      .on('changes', p => ({ ...EMPTY_CHANGES, ops: [{ op: `op-of-${p.version}` }] }));
    const el = mount(t);
    await settle();
    rows(el)[2].click();
    await settle();
    expect(el.querySelector('.sds-app')!.getAttribute('data-selected')).toBe('1');
    expect(text(el.querySelector('.sds-ops'))).toContain('op-of-1');
    const list = el.querySelector('.sds-history')!;
    key(list, 'ArrowUp');
    // the selection moves at once; the details follow when the keys rest
    expect(el.querySelector('.sds-selected')!.getAttribute('data-depth')).toBe('2');
    await rest();
    expect(text(el.querySelector('.sds-ops'))).toContain('op-of-2');
    key(list, 'ArrowDown');
    key(list, 'ArrowDown');
    await rest();
    // the base: no changes request, its summary instead
    expect(el.querySelector('.sds-selected')!.getAttribute('data-depth')).toBe('0');
    expect(text(el.querySelector('.sds-changes'))).toContain('/data/base.zarr');
    key(list, 'ArrowDown'); // stays on the last row
    key(list, 'Home');
    await rest();
    expect(el.querySelector('.sds-selected')!.getAttribute('data-depth')).toBe('3');
    // v1 was passed over by two quick keys: never requested on the way
    expect(t.callsOf('changes')).toEqual([{ version: 3 }, { version: 1 }, { version: 2 }, { version: 3 }]);
  });

  it('names in aria-activedescendant a row that is still there after a redraw (the clock tick, new rows)', () => {
    // Seen in a flow (lab-views, 420 px): the list's active descendant was read, a redraw came
    // (another view's new rows move the shared clock), and the row it named was gone, because
    // every redraw gave the rows new random ids. Ids are now the list's and the row's index.
    const clock = new Clock(() => NOW, 1e9);
    const view = new HistoryView(() => {}, clock);
    const other = new HistoryView(() => {}, clock);
    document.body.append(view.node, other.node);
    try {
      view.setHistory(history(3));
      other.setHistory(history(2));
      view.selectDepth(2);
      const named = view.node.getAttribute('aria-activedescendant');
      expect(named).toBeTruthy();
      const present = () => {
        const row = document.getElementById(named!);
        return row && view.node.contains(row) ? row.dataset.depth : null;
      };
      expect(present()).toBe('2');
      clock.advance(); // every view redraws its rows
      expect(present()).toBe('2');
      expect(view.node.getAttribute('aria-activedescendant')).toBe(named);
      other.setHistory(history(4)); // another view's new rows: the clock moves again
      expect(present()).toBe('2');
      view.setBound({ depth: 1, label: 'adata' }); // the bound mark redraws the rows too
      expect(present()).toBe('2');
      // two lists never share an id
      const ids = [...document.querySelectorAll('[role="option"]')].map(r => r.id);
      expect(new Set(ids).size).toBe(ids.length);
      // new rows and no selection: the attribute is dropped, never left naming a row
      view.setHistory(history(5));
      expect(view.node.hasAttribute('aria-activedescendant')).toBe(false);
    } finally {
      view.dispose();
      other.dispose();
      clock.dispose();
    }
  });

  it('virtualizes 500 versions and keeps the selection in view', async () => {
    const t = new FakeTransport().on('history', () => history(500)).on('changes', () => EMPTY_CHANGES);
    const el = mount(t);
    await settle();
    const list = el.querySelector<HTMLElement>('.sds-history')!;
    // only a window of rows is in the DOM, but the spacer holds all 501
    expect(rows(el).length).toBeLessThan(40);
    expect(list.querySelector<HTMLElement>('.sds-vlist-spacer')!.style.height).toBe(`${501 * 72}px`);
    for (let i = 0; i < 300; i++) {
      key(list, 'ArrowDown');
    }
    await rest();
    expect(el.querySelector('.sds-selected')!.getAttribute('data-depth')).toBe('200');
    // the selected row is rendered and the list scrolled to it
    expect(list.scrollTop).toBeGreaterThan(250 * 72);
    // the DOM never grew with the keys (what keeps it fast; timing is for benchmarks, not tests)
    expect(rows(el).length).toBeLessThan(40);
    // one details request for the whole run of keys
    expect(t.callsOf('changes')).toEqual([{ version: 500 }, { version: 200 }]);
    key(list, 'End');
    await rest();
    expect(el.querySelector('.sds-selected')!.getAttribute('data-depth')).toBe('0');
    // scrolling renders the rows now in view
    list.scrollTop = 100 * 72;
    list.dispatchEvent(new Event('scroll'));
    await new Promise(r => setTimeout(r, 50));
    const depths = rows(el).map(r => Number(r.dataset.depth));
    expect(depths).toContain(400);
  });

  it('shows a history error prominently and still lists the versions', async () => {
    const t = new FakeTransport()
      .on('history', () =>
        history(2, { error: { kind: 'missing-dataset', message: 'parent dataset abc is not found' } })
      )
      .on('changes', () => EMPTY_CHANGES);
    const el = mount(t);
    await settle();
    expect(text(el.querySelector('.sds-banner .sds-error'))).toContain('parent dataset abc is not found');
    expect(rows(el).length).toBe(3);
  });

  it('shows an unfollowable stack (missing parent) in the banner and the side', async () => {
    const t = new FakeTransport().on('history', () => ({
      top_depth: 0,
      versions: [],
      base: null,
      error: { kind: 'missing-dataset', message: 'parent dataset 1234 is not in the folder map' }
    }));
    const el = mount(t);
    await settle();
    expect(text(el.querySelector('.sds-banner'))).toContain('parent dataset 1234 is not in the folder map');
    expect(text(el.querySelector('.sds-side'))).toContain('No versions to show');
    expect(rows(el).length).toBe(0);
    expect(t.callsOf('changes')).toEqual([]);
  });

  it('shows a failed history request in place', async () => {
    const t = new FakeTransport().on('history', () => {
      throw new TransportError('not-found', 'no such path: x');
    });
    const el = mount(t);
    await settle();
    // once, in the banner (not again beside the empty history)
    expect(text(el.querySelector('.sds-banner .sds-error'))).toContain('no such path: x');
    expect(el.querySelectorAll('.sds-error').length).toBe(1);
    expect(rows(el).length).toBe(0);
  });
});

describe('changes', () => {
  it('lists the ops and the added, replaced and deleted keys with sizes', async () => {
    const t = new FakeTransport().on('history', () => history(1)).on('changes', () => ({
      ops: [{ op: 'set-obs', column: 'leiden', dtype: 'categorical' }],
      details: [{}],
      added: [
        { key: 'tables/table/obs/leiden/codes/c/0', size: 2048 },
        { key: 'tables/table/obs/leiden/zarr.json', size: 300 }
      ],
      replaced: [{ key: 'zarr.json', size: 5 * 1024 * 1024 }],
      deleted: [{ entry: 'tables/table/uns/foo/', node: true }]
    }));
    const el = mount(t);
    await settle();
    const c = el.querySelector('.sds-changes')!;
    expect(text(c.querySelector('.sds-ops'))).toContain('Set obs leiden (categorical)');
    // the storage keys sit under a closed "Files" disclosure
    expect(c.querySelector<HTMLDetailsElement>('details.sds-files')!.open).toBe(false);
    const added = c.querySelector('.sds-files .sds-keys-added')!;
    expect(text(added.querySelector('h4'))).toContain('2 keys');
    expect(text(added)).toContain('tables/table/obs/leiden/codes/c/0');
    expect(text(added)).toContain('2.0 KiB');
    expect(text(c.querySelector('.sds-keys-replaced'))).toContain('5.0 MiB');
    expect(text(c.querySelector('.sds-keys-deleted'))).toContain('tables/table/uns/foo/');
    expect(text(c.querySelector('.sds-keys-deleted'))).toContain('node');
  });

  it('shows a failed changes request in place while the history keeps working', async () => {
    const t = new FakeTransport().on('history', () => history(2)).on('changes', p => {
      if (p.version === 2) {
        throw new TransportError('manifest', 'layer.json of v2 is not valid JSON');
      }
      return EMPTY_CHANGES;
    });
    const el = mount(t);
    await settle();
    expect(text(el.querySelector('.sds-changes .sds-error'))).toContain('layer.json of v2 is not valid JSON');
    expect(text(el.querySelector('.sds-changes .sds-error-kind'))).toBe('manifest');
    rows(el)[1].click();
    await settle();
    expect(el.querySelector('.sds-changes .sds-error')).toBeNull();
    expect(text(el.querySelector('.sds-changes'))).toContain('This version records no operations.');
  });
});

describe('actions', () => {
  it('runs an action on the selected version and shows its reply or error', async () => {
    const t = new FakeTransport().on('history', () => history(2)).on('changes', () => EMPTY_CHANGES);
    const el = document.createElement('div');
    document.body.append(el);
    const seen: number[] = [];
    app = mountApp(el, t, {
      now: () => NOW,
      actions: [
        {
          id: 'open',
          label: 'Open AnnData',
          run: async v => {
            seen.push(v);
            if (v === 1) {
              throw new TransportError('bad-request', 'cannot open v1');
            }
            return `adata bound for v${v}`;
          }
        }
      ]
    });
    await settle();
    const button = el.querySelector<HTMLButtonElement>('[data-action="open"]')!;
    button.click();
    await settle();
    expect(text(el.querySelector('.sds-action-msg'))).toBe('adata bound for v2');
    el.querySelectorAll<HTMLElement>('.sds-history-row')[1].click();
    button.click();
    await settle();
    expect(seen).toEqual([2, 1]);
    expect(text(el.querySelector('.sds-action-msg'))).toBe('cannot open v1');
    expect(el.querySelector('.sds-action-msg')!.classList.contains('sds-action-error')).toBe(true);
  });
});
