/**
 * The anywidget entry (the model's `_esm`): a few kilobytes that load the app.
 *
 * anywidget gives a model 2 s to import its `_esm` and run `initialize`; past that it
 * rejects the model ("[anywidget] Failed to initialize model.") and drops every comm
 * message of it, so a widget whose module takes longer (the app with deck.gl and vega,
 * ~1.8 MB, on a loaded machine or in a notebook reopened with live widgets) never hears
 * its answers. This entry imports at once; the app comes as the `_app` trait (the module
 * source, built from `widget.ts`) and is imported in `render`, which anywidget does not
 * time. A blob URL, as anywidget uses for `_esm`: the app is one module with no imports
 * of its own, so nothing relative has to resolve, and no server route is needed (the
 * widget also runs where there is no Jupyter server to serve files).
 */

import type { RenderProps } from '@anywidget/types';
import { errorBox, loading } from './app/dom';

type AppModule = { default: { render(props: RenderProps): () => void } };

/** One import per app source in the page, shared by every model and view of the widget. */
const CACHE_KEY = '__sdsJupyterWidgetApp';

function cache(): Map<string, Promise<AppModule>> {
  const g = globalThis as unknown as Record<string, Map<string, Promise<AppModule>> | undefined>;
  return (g[CACHE_KEY] ??= new Map());
}

/** The app module of `source`, imported once (a failed import is tried again next time). */
export function loadApp(source: string): Promise<AppModule> {
  const loaded = cache();
  let app = loaded.get(source);
  if (!app) {
    const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
    app = (import(/* @vite-ignore */ url) as Promise<AppModule>).finally(() => URL.revokeObjectURL(url));
    app.catch(() => loaded.delete(source));
    loaded.set(source, app);
  }
  return app;
}

function render(props: RenderProps): () => void {
  const { model, el } = props;
  // the app's own look (its colors are set on .sds-app) until the app replaces it
  const status = document.createElement('div');
  status.className = 'sds-app';
  status.append(loading('Loading the version browser…'));
  el.append(status);
  let disposed = false;
  let cleanup: (() => void) | undefined;
  const source = model.get('_app') as string | undefined;
  const app = source ? loadApp(source) : Promise.reject(new Error('the kernel sent no app (`_app` is empty)'));
  app.then(
    mod => {
      if (!disposed) {
        status.remove();
        cleanup = mod.default.render(props);
      }
    },
    (err: unknown) => {
      // text from an Error, shown as text
      status.replaceChildren(errorBox(`The version browser could not load: ${err instanceof Error ? err.message : String(err)}`));
    }
  );
  return () => {
    disposed = true;
    cleanup?.();
    status.remove();
  };
}

export default { render };
