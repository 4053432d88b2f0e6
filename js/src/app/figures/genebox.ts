/**
 * The gene box: type part of a gene's name, in any case, and pick it from a
 * list (the ARIA combobox pattern: arrows move, Enter picks, Escape closes).
 * When var's index holds IDs, the symbols are searched too and shown beside
 * them. A name that finds nothing is answered in the same popup with the
 * nearest names, so the toolbar never moves. Up to three genes can be picked:
 * each in its own colour channel (added), or their mean (a score).
 */

import { h } from '../shared/dom';
import { CHANNEL_COLORS } from './genechannels';
import { TransportError } from '../shared/transport';
import type { GeneNames } from '../shared/types';

/** Suggestions shown while typing. */
const MAX_OPTIONS = 8;
/** Genes a score combines. */
export const MAX_GENES = 3;
/** Characters typed before the nearest names are offered for a text no name holds. */
const MIN_NEAR = 2;

/** How several picked genes color the cells: one colour channel each, added, or their mean. */
export type Combine = 'channels' | 'mean';

/** One gene as the box offers it: the var name, and its symbol when var has a symbol column. */
export type GeneEntry = { name: string; symbol: string | null };

export function geneEntries(data: GeneNames): GeneEntry[] {
  return data.names.map((name, i) => ({ name, symbol: data.symbols?.[i] || null }));
}

/** What is shown for an entry, and what a person types to find it. */
function shown(e: GeneEntry): string {
  return e.symbol && e.symbol !== e.name ? `${e.symbol} (${e.name})` : e.name;
}

/** Entries whose name or symbol starts with `text` (case ignored), then those containing it. */
export function matchGenes(entries: GeneEntry[], text: string, max = MAX_OPTIONS): GeneEntry[] {
  const q = text.trim().toLowerCase();
  if (!q) {
    return [];
  }
  const keys = (e: GeneEntry) => [e.name.toLowerCase(), (e.symbol ?? '').toLowerCase()];
  const starts = entries.filter(e => keys(e).some(k => k.startsWith(q)));
  const inside = entries.filter(e => !starts.includes(e) && keys(e).some(k => k.includes(q)));
  return [...starts, ...inside].slice(0, max);
}

/** The entry a typed name means exactly (case ignored), or null. */
export function exactGene(entries: GeneEntry[], text: string): GeneEntry | null {
  const q = text.trim().toLowerCase();
  return entries.find(e => e.name.toLowerCase() === q) ?? entries.find(e => (e.symbol ?? '').toLowerCase() === q) ?? null;
}

/** Levenshtein distance, for the nearest names to a wrong one. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length];
}

/** The names nearest to `text` by edit distance (case ignored). */
export function nearestGenes(entries: GeneEntry[], text: string, max = 5): GeneEntry[] {
  const q = text.trim().toLowerCase();
  const scored = entries.map(e => ({
    e,
    d: Math.min(distance(q, e.name.toLowerCase()), e.symbol ? distance(q, e.symbol.toLowerCase()) : Infinity)
  }));
  scored.sort((x, y) => x.d - y.d || x.e.name.localeCompare(y.e.name));
  return scored.slice(0, max).map(s => s.e);
}

let boxes = 0;

export class GeneBox {
  readonly node: HTMLElement;
  readonly input: HTMLInputElement;
  /** The popup under the box: a note (a wrong name, a failure) above the listbox of genes. */
  private readonly popup: HTMLElement;
  private readonly note: HTMLElement;
  private readonly list: HTMLElement;
  private readonly chips: HTMLElement;
  private entries: Promise<GeneEntry[]> | null = null;
  private options: GeneEntry[] = [];
  private active = -1;
  private readonly id = `sds-genes-${++boxes}`;
  /** The genes picked so far (var names as stored). */
  picked: string[] = [];
  /** How a picked gene is named on its chip: its symbol when var's index holds IDs. */
  private readonly labels = new Map<string, string>();
  /** How two or three genes combine (the choice shows once there are two). */
  combine: Combine = 'channels';
  private readonly combineSelect: HTMLSelectElement | null;

  /** `what`: the box's name to assistive technology; `combining`: offer channels or mean (coloring, not a plot). */
  constructor(
    private readonly load: () => Promise<GeneNames>,
    private readonly onPick: (genes: string[]) => void,
    what = `Color cells by genes (up to ${MAX_GENES})`,
    combining = true
  ) {
    this.input = h('input', {
      type: 'text',
      class: 'sds-select sds-gene',
      placeholder: 'gene',
      role: 'combobox',
      'aria-autocomplete': 'list',
      'aria-expanded': 'false',
      'aria-controls': `${this.id}-list`,
      'aria-label': what,
      title: `${what}: type part of a name, any case; arrows and Enter pick, Escape closes`,
      autocomplete: 'off',
      spellcheck: 'false',
      size: '8'
    }) as HTMLInputElement;
    this.list = h('ul', { class: 'sds-gene-options', role: 'listbox', id: `${this.id}-list`, 'aria-label': 'Genes' });
    this.note = h('div', { class: 'sds-gene-note', role: 'status' });
    this.popup = h('div', { class: 'sds-gene-list', hidden: '' }, this.note, this.list);
    this.chips = h('span', { class: 'sds-gene-chips' });
    this.combineSelect = combining
      ? (h(
          'select',
          { class: 'sds-select sds-gene-combine', 'aria-label': 'How the genes combine', hidden: '' },
          h('option', { value: 'channels' }, 'channels (added)'),
          h('option', { value: 'mean' }, 'mean score')
        ) as HTMLSelectElement)
      : null;
    this.combineSelect?.addEventListener('change', () => {
      this.combine = this.combineSelect!.value as Combine;
      this.onPick(this.picked);
    });
    this.node = h('span', { class: 'sds-genebox' }, this.chips, this.input, this.popup, this.combineSelect);
    this.input.addEventListener('focus', () => void this.names());
    this.input.addEventListener('input', () => void this.suggest());
    this.input.addEventListener('keydown', ev => this.key(ev));
    this.input.addEventListener('blur', () => setTimeout(() => this.close(), 150));
  }

  /** The genes, asked once. */
  private names(): Promise<GeneEntry[]> {
    this.entries ??= this.load().then(geneEntries, err => {
      this.entries = null;
      throw err;
    });
    return this.entries;
  }

  private async suggest(): Promise<void> {
    const text = this.input.value;
    let entries: GeneEntry[];
    try {
      entries = await this.names();
    } catch (err) {
      this.showMessage(TransportError.from(err).message, []);
      return;
    }
    if (text !== this.input.value) {
      return;
    }
    const matches = matchGenes(entries, text);
    // no name holds the text: the nearest names at once, as Enter would show them
    if (!matches.length && text.trim().length >= MIN_NEAR) {
      this.showMessage(`No gene “${text.trim()}”. Nearest:`, nearestGenes(entries, text.trim()));
      return;
    }
    this.showOptions(matches);
  }

  private key(ev: KeyboardEvent): void {
    const open = !this.popup.hidden && this.options.length > 0;
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      ev.preventDefault();
      if (!open) {
        void this.suggest();
        return;
      }
      const step = ev.key === 'ArrowDown' ? 1 : -1;
      this.setActive((this.active + step + this.options.length) % this.options.length);
    } else if (ev.key === 'Enter') {
      ev.preventDefault();
      void this.commit(open && this.active >= 0 ? this.options[this.active] : null);
    } else if (ev.key === 'Escape') {
      if (!this.popup.hidden) {
        ev.preventDefault();
        ev.stopPropagation();
        this.close();
      }
    } else if (ev.key === 'Backspace' && !this.input.value && this.picked.length) {
      this.remove(this.picked[this.picked.length - 1]);
    }
  }

  /** Pick `entry`, or the gene the typed text names; a wrong name opens the nearest names instead. */
  private async commit(entry: GeneEntry | null): Promise<void> {
    const text = this.input.value.trim();
    if (!entry && !text) {
      return;
    }
    const entries = await this.names().catch(() => [] as GeneEntry[]);
    const chosen = entry ?? exactGene(entries, text);
    if (!chosen) {
      this.showMessage(`No gene “${text}”. Nearest:`, nearestGenes(entries, text));
      return;
    }
    if (!this.picked.includes(chosen.name) && this.picked.length >= MAX_GENES) {
      // never drop a gene silently (every channel's colour would shift): say how to make room
      const shownNames = this.picked.map(g => this.labels.get(g) ?? g).join(', ');
      this.showMessage(`Up to ${MAX_GENES} genes at once (${shownNames}): remove one (×) to add ${chosen.symbol ?? chosen.name}.`, []);
      return;
    }
    this.input.value = '';
    this.close();
    this.labels.set(chosen.name, chosen.symbol ?? chosen.name);
    if (!this.picked.includes(chosen.name)) {
      this.picked = [...this.picked, chosen.name];
    }
    this.renderChips();
    this.onPick(this.picked);
  }

  /** Forget the picked genes (the view went back to a column). */
  clear(): void {
    this.picked = [];
    this.renderChips();
  }

  private remove(name: string): void {
    this.picked = this.picked.filter(g => g !== name);
    this.renderChips();
    this.onPick(this.picked);
  }

  private renderChips(): void {
    if (this.combineSelect) {
      this.combineSelect.hidden = this.picked.length < 2;
      this.combineSelect.value = this.combine;
    }
    this.chips.replaceChildren(
      ...this.picked.map(g => {
        const label = this.labels.get(g) ?? g;
        const x = h('button', { type: 'button', class: 'sds-gene-chip', title: `Remove ${label}`, 'aria-label': `Remove ${label}` }, `${label} ×`);
        // in channels, each chip is outlined in its gene's colour
        const k = this.picked.indexOf(g);
        if (this.combineSelect && this.combine === 'channels' && this.picked.length > 1) {
          x.dataset.channel = String(k);
          x.style.borderColor = CHANNEL_COLORS[k];
        }
        x.addEventListener('click', () => this.remove(g));
        return x;
      })
    );
  }

  private showOptions(options: GeneEntry[]): void {
    this.options = options;
    this.active = -1;
    this.note.textContent = '';
    this.list.replaceChildren(...options.map((e, i) => this.option(e, i)));
    this.setOpen(options.length > 0);
  }

  private showMessage(text: string, options: GeneEntry[]): void {
    this.options = options;
    this.active = -1;
    this.note.textContent = text;
    this.list.replaceChildren(...options.map((e, i) => this.option(e, i)));
    this.setOpen(true);
  }

  private option(e: GeneEntry, i: number): HTMLElement {
    const li = h('li', { role: 'option', id: `${this.id}-${i}`, class: 'sds-gene-option', 'aria-selected': 'false' }, shown(e));
    // mousedown, not click: the input keeps focus (its blur would close the list first)
    li.addEventListener('mousedown', ev => {
      ev.preventDefault();
      void this.commit(e);
    });
    return li;
  }

  private setActive(i: number): void {
    this.active = i;
    for (const [j, li] of [...this.list.querySelectorAll('[role=option]')].entries()) {
      li.setAttribute('aria-selected', String(j === i));
    }
    this.input.setAttribute('aria-activedescendant', `${this.id}-${i}`);
    this.list.querySelector(`#${this.id}-${i}`)?.scrollIntoView({ block: 'nearest' });
  }

  private setOpen(open: boolean): void {
    this.popup.hidden = !open;
    this.list.hidden = !this.options.length; // a listbox is never shown empty
    this.input.setAttribute('aria-expanded', String(open));
    if (!open) {
      this.input.removeAttribute('aria-activedescendant');
    }
  }

  private close(): void {
    this.setOpen(false);
  }
}
