// Bundle the anywidget entry (app + vega) into one offline ES module and its CSS.
import { build } from 'esbuild';
import { mkdirSync } from 'node:fs';

const outdir = '../sds_jupyter/static';
mkdirSync(outdir, { recursive: true });
const production = process.env.NODE_ENV !== 'development';

await build({
  entryPoints: { widget: 'src/widget.ts' },
  bundle: true,
  format: 'esm',
  target: 'es2020',
  outdir,
  minify: production,
  sourcemap: production ? false : 'inline',
  legalComments: 'none',
  logLevel: 'info'
});

await build({
  entryPoints: { widget: 'style/base.css' },
  bundle: true,
  outdir,
  minify: production,
  logLevel: 'info'
});
