// ESLint for the front end (`npm run lint`, called by `make lint`): the rules
// typescript-eslint recommends, on the app, its unit tests and the JupyterLab flows.
// Layout is the editor's business, not the linter's; import cycles are checked beside
// this (madge, in the same npm script).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

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
  }
);
