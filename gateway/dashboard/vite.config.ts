import { defineConfig } from 'vite';

// Built from deploy/local/bootstrap.sh (`vite build gateway/dashboard`); the gateway serves dist/ at `/`.
export default defineConfig({
  base: '/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'react' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    // The gateway's CSP allows scripts from 'self' only: no inline polyfill.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  logLevel: 'warn',
});
