/**
 * A layer's row in the figure's Layers menu, one builder for every layer a figure offers beside its cells
 * (labels, transcripts, shapes): a checkbox naming the layer, the layer's own controls, and a
 * status line for what went wrong. Why one: each layer's group is the same shape with the same
 * class names (`sds-<kind>-toggle`, `sds-<kind>-status`, `sds-<kind>-controls`) that styles,
 * flows and tests find it by.
 */

import { h } from '../shared/dom';
import { TransportError } from '../shared/transport';

export type LayerControls = {
  /** The row (a group), added to the Layers menu. */
  readonly group: HTMLElement;
  readonly toggle: HTMLInputElement;
  /** Where the layer says why it could not be shown (text only). */
  readonly status: HTMLElement;
};

/**
 * The group of a layer called `label` (also its group's accessible name); `kind` names its
 * classes; `onToggle` is told the checkbox's state; `parts` follow the checkbox.
 */
export function layerControls(label: string, kind: string, onToggle: (on: boolean) => void, parts: HTMLElement[]): LayerControls {
  const toggle = h('input', { type: 'checkbox', class: `sds-${kind}-toggle` }) as HTMLInputElement;
  toggle.addEventListener('change', () => onToggle(toggle.checked));
  const status = h('span', { class: `sds-${kind}-status`, role: 'status' });
  const group = h(
    'span',
    { class: `sds-layer-group sds-${kind}-controls`, role: 'group', 'aria-label': label },
    h('label', { class: 'sds-check' }, toggle, ` ${label}`),
    ...parts,
    status
  );
  return { group, toggle, status };
}

/** A small menu of a layer's (`options`: value and the words shown), titled `title`. */
export function layerMenu(cls: string, title: string, options: [string, string][], onChange: (value: string) => void): HTMLSelectElement {
  const select = h(
    'select',
    { class: `sds-select ${cls}`, 'aria-label': title, title },
    options.map(([value, words]) => h('option', { value }, words))
  ) as HTMLSelectElement;
  select.addEventListener('change', () => onChange(select.value));
  return select;
}

export type LayerSlider = {
  /** The slider's row: its visible name, the slider, its value as text. */
  readonly node: HTMLElement;
  readonly input: HTMLInputElement;
  /** Show `value` on the slider and in its text (a value set from a saved spec, not by a drag). */
  set(value: number): void;
};

let sliders = 0;

/**
 * A slider of a layer's (`cls` its class) with a visible name and its value as text, which sighted and
 * screen-reader users read alike: the name is the slider's `<label>`, the text beside it (`format` of
 * the value) is also its `aria-valuetext`. Why: a slider named only by an `aria-label` showed a sighted
 * user a bare track, and read a screen-reader user "0.35" where the view meant 35 %.
 */
export function layerSlider(
  cls: string,
  name: string,
  range: { min: number; max: number; step: number; value: number },
  format: (value: number) => string,
  onInput: (value: number) => void
): LayerSlider {
  const id = `sds-slider-${++sliders}`;
  const input = h('input', { type: 'range', id, class: `sds-slider-input ${cls}`, min: String(range.min), max: String(range.max), step: String(range.step) }) as HTMLInputElement;
  const text = h('span', { class: 'sds-slider-value', 'aria-hidden': 'true' });
  const set = (value: number): void => {
    input.value = String(value);
    text.textContent = format(Number(input.value));
    input.setAttribute('aria-valuetext', text.textContent);
  };
  set(range.value);
  input.addEventListener('input', () => {
    set(Number(input.value));
    onInput(Number(input.value));
  });
  const node = h('span', { class: 'sds-slider' }, h('label', { class: 'sds-slider-name', for: id }, name), input, text);
  return { node, input, set };
}

/** An opacity's words: "35%". */
export const percent = (value: number): string => `${Math.round(value * 100)}%`;

/**
 * Open a layer's data source the first time the layer is shown: `busy` in its status line while
 * `open` runs (empty for none), then the status cleared, or the error in the user's words and
 * null. Why one: every tiled layer (labels, shapes) opens the same way, and a second copy of this
 * drifted once (one said why it waited, the other did not).
 */
export async function openedOnce<T>(status: HTMLElement, busy: string, open: () => Promise<T>): Promise<T | null> {
  status.textContent = busy;
  try {
    const opened = await open();
    status.textContent = '';
    return opened;
  } catch (err) {
    status.textContent = TransportError.from(err).message;
    return null;
  }
}
