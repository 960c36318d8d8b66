// ESLint (flat config) for every TypeScript file: typescript-eslint's recommended rules, plus the type-aware
// rules that catch real bugs here (promises left floating or passed where a callback's result is ignored,
// awaiting what is not a promise). Formatting is Prettier's (prettier.config.js), not ESLint's.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.cache/**', '.local/**', 'bench-results/**', 'test-artifacts/**', 'coverage/**', 'libs/sdk/src/generated/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      globals: { ...globals.node },
      // The two programs every file belongs to, built once each (a project service per file is twice as slow).
      parserOptions: { project: ['./tsconfig.json', './gateway/dashboard/tsconfig.json'], tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-console': 'error',
    },
  },
  // Domain and persistence code knows failures by their codes (@dap/errors), never HTTP: statuses are chosen at the edge.
  {
    files: ['services/*/src/domain/**/*.ts', 'services/*/src/persistence/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: '@dap/http', message: 'Domain and persistence code raises DomainErrors from @dap/errors; @dap/http is for routes and apps.' },
            { name: 'express', message: 'Domain and persistence code does not see HTTP requests or responses.' },
          ],
        },
      ],
    },
  },
  // Benchmarks and the soak print their reports on the console.
  { files: ['**/bench/**/*.ts', 'test/faults/soak.ts'], rules: { 'no-console': 'off' } },
  { files: ['gateway/dashboard/src/**/*.{ts,tsx}'], languageOptions: { globals: { ...globals.browser } } },
  { files: ['**/*.js'], languageOptions: { globals: { ...globals.node } } },
  prettier,
);
