// ESLint for the front end (`npm run lint`, called by `make lint`): the rules
// typescript-eslint recommends, on the app, its unit tests and the JupyterLab flows.
// The app's folders are layered (APP_LAYERS below). Layout is the editor's business, not the linter's; import cycles are checked beside
// this (madge, in the same npm script).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// The app's feature folders and what each may import (the front end's import-linter):
// shared knows no feature; history, changes and spatial build on shared only; figures
// draw with spatial; compare and results show figures. index.ts (the app) wires them.
const APP_LAYERS = {
  shared: [],
  history: ['shared'],
  changes: ['shared'],
  spatial: ['shared'],
  figures: ['shared', 'spatial'],
  compare: ['shared', 'spatial', 'figures'],
  results: ['shared', 'spatial', 'figures']
};
const FOLDERS = Object.keys(APP_LAYERS);
const layerRules = Object.entries(APP_LAYERS).map(([folder, allowed]) => ({
  files: [`src/app/${folder}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            group: [...FOLDERS.filter(f => f !== folder && !allowed.includes(f)).map(f => `**/${f}/*`), '../index', '**/lab/*', '**/widget*'],
            message: `src/app/${folder}/ may import only from ${allowed.length ? allowed.join(', ') : 'no other folder'} (eslint.config.mjs APP_LAYERS).`
          }
        ]
      }
    ]
  }
}));

// Inside spatial/: the layer factories (spatial/layers/, one file per data kind) sit below the
// stage: they turn a scene into deck.gl layers and know nothing of who draws them, so they may
// not import the stage (spatial.ts, deck.ts, tier.ts and the stage's parts) nor the feature folders.
const STAGE = ['spatial', 'deck', 'tier', 'celldrawing', 'imagedrawing', 'framemeter', 'outlinegathering'];
const layersRule = {
  files: ['src/app/spatial/layers/**/*.ts'],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            group: [...STAGE.map(m => `../${m}`), ...FOLDERS.filter(f => f !== 'shared' && f !== 'spatial').map(f => `**/${f}/*`), '../index', '**/lab/*', '**/widget*'],
            message: 'src/app/spatial/layers/ sits below the stage: it may import deck.gl and spatial/ helpers, not the stage (eslint.config.mjs).'
          }
        ]
      }
    ]
  }
};

// The UI flows read what a step changed once it is there, never after a guessed pause (a flow
// read a status line before its reply and failed CI once): waits are for conditions, with the
// harness's until/settled/layoutSaved; an absence is proved over the product's own interval
// (harness.mjs pollIntervals).
const flowsRule = {
  files: ['ui-tests/**/*.mjs'],
  rules: {
    'no-restricted-syntax': [
      'error',
      {
        selector: "CallExpression[callee.property.name='waitForTimeout']",
        message: 'No fixed sleeps in UI flows: wait for the condition (locator.waitFor, waitForFunction, harness until/settled/layoutSaved).'
      }
    ]
  }
};

export default tseslint.config(
  { ignores: ['lib/', 'node_modules/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    // the app runs in the browser; the build scripts and the flows' drivers run in Node,
    // and the flows' page.evaluate callbacks in the browser
    languageOptions: { globals: { ...globals.browser, ...globals.node } },
    rules: {
      // `any` is sometimes the honest type at the deck.gl and test-double seams: shown, not fatal
      '@typescript-eslint/no-explicit-any': 'warn',
      // a leading underscore marks a parameter an override must accept but does not use
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' }]
    }
  },
  ...layerRules,
  layersRule,
  flowsRule
);
