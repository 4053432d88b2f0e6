// Bundle the anywidget's two modules and its CSS, offline (nothing from a CDN):
// widget.js, the small `_esm` entry (src/widgetentry.ts), imports within anywidget's 2 s;
// widget-app.js, the app with deck.gl and vega (src/widget.ts), which that entry imports in
// `render` from the model's `_app` trait (one self-contained module: no chunks to resolve).
import { build } from 'esbuild';
import { mkdirSync } from 'node:fs';

const outdir = '../sds_jupyter/static';
mkdirSync(outdir, { recursive: true });
const production = process.env.NODE_ENV !== 'development';

const modules = {
  bundle: true,
  format: 'esm',
  target: 'es2020',
  outdir,
  minify: production,
  sourcemap: production ? false : 'inline',
  legalComments: 'none',
  logLevel: 'info'
};
await build({ ...modules, entryPoints: { widget: 'src/widgetentry.ts' } });
await build({ ...modules, entryPoints: { 'widget-app': 'src/widget.ts' } });

await build({
  entryPoints: { widget: 'style/base.css' },
  bundle: true,
  outdir,
  minify: production,
  logLevel: 'info'
});
