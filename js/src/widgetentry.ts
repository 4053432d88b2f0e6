/**
 * The anywidget entry (the model's `_esm`): a few kilobytes that load the app.
 *
 * anywidget gives a model 2 s to import its `_esm` and run `initialize`; past that it
 * rejects the model ("[anywidget] Failed to initialize model.") and drops every comm
 * message of it, so a widget whose module takes longer (the app with deck.gl and vega,
 * ~1.8 MB, on a loaded machine or in a notebook reopened with live widgets) never hears
 * its answers. This entry imports at once; in `render`, which anywidget does not time, it
 * asks the kernel for the app (the module source built from `widget.ts`, named by the
 * `_app_hash` trait) with one `{type: "app"}` message per page and imports the answer.
 * The app is not a trait: JupyterLab restores a reopened notebook's widgets from one
 * reply of the kernel that it waits 4 s for, and an app in every widget's state made that
 * reply megabytes long. A blob URL, as anywidget uses for `_esm`: the app is one module
 * with no imports of its own, so nothing relative has to resolve, and no server route is
 * needed (the widget also runs where there is no Jupyter server to serve files).
 */

import type { AnyModel, RenderProps } from '@anywidget/types';
import { errorBox, loading } from './app/shared/dom';
import type { WidgetApp, WidgetAskApp } from './app/shared/types';

type AppModule = { default: { render(props: RenderProps): () => void } };

/** One import per app source in the page, shared by every model and view of the widget. */
const CACHE_KEY = '__sdsJupyterWidgetApp';

function cache(): Map<string, Promise<AppModule>> {
  const g = globalThis as unknown as Record<string, Map<string, Promise<AppModule>> | undefined>;
  return (g[CACHE_KEY] ??= new Map());
}

/** How long the entry waits for the kernel's answer before saying so (a busy kernel answers late). */
const APP_WAIT_MS = 120_000;

/** The app's module source, asked of the kernel (its answer's one buffer). */
export function requestApp(model: AnyModel, waitMs = APP_WAIT_MS): Promise<string> {
  const id = `app-${Math.random().toString(36).slice(2)}`;
  return new Promise<string>((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      model.off('msg:custom', onMessage);
    };
    const onMessage = (msg: unknown, buffers: DataView[] = []): void => {
      const reply = msg as Partial<WidgetApp> | null;
      if (reply?.type !== 'app' || reply.id !== id) return;
      done();
      const [source] = buffers;
      if (source) resolve(new TextDecoder().decode(source));
      else reject(new Error('the kernel answered without the app'));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error('the kernel did not send it; run the cell again once the kernel is idle'));
    }, waitMs);
    model.on('msg:custom', onMessage);
    const ask: WidgetAskApp = { type: 'app', id };
    model.send(ask);
  });
}

/** Import a module from its source, through a blob URL as anywidget does for `_esm`. */
function importSource(source: string): Promise<AppModule> {
  const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  return (import(/* @vite-ignore */ url) as Promise<AppModule>).finally(() => URL.revokeObjectURL(url));
}

/** The app module named `hash`, fetched and imported once per page (a failure is tried again next time). */
export function loadApp(
  hash: string,
  fetchSource: () => Promise<string>,
  importModule: (source: string) => Promise<AppModule> = importSource
): Promise<AppModule> {
  const loaded = cache();
  let app = loaded.get(hash);
  if (!app) {
    app = fetchSource().then(importModule);
    app.catch(() => loaded.delete(hash));
    loaded.set(hash, app);
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
  const hash = model.get('_app_hash') as string | undefined;
  const app = hash
    ? loadApp(hash, () => requestApp(model))
    : Promise.reject(new Error('the kernel named no app (`_app_hash` is empty); update sds-jupyter in the kernel'));
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
