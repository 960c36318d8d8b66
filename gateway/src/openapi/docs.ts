import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { dirname, join } from 'node:path';
import type { Express } from 'express';
import { AppError } from '@dap/http';
import { PROBLEM_PAGE_CSS, problemIndexPage, problemPage } from './problems.ts';

const gzipAsync = promisify(gzipCallback);

/** Scalar's self-contained browser build, shipped in the npm package (no CDN). */
export const SCALAR_STANDALONE = join(dirname(createRequire(import.meta.url).resolve('@scalar/api-reference/style.css')), 'browser', 'standalone.js');

/**
 * Scalar's settings: everything it would fetch from elsewhere is off (fonts, the request proxy, telemetry,
 * the AI agent and MCP links), so the page talks to this origin only; the CSP enforces that.
 */
export const SCALAR_CONFIGURATION = {
  url: '/v1/openapi.json',
  withDefaultFonts: false,
  telemetry: false,
  hideClientButton: true,
  hideTestRequestButton: true,
  showDeveloperTools: 'never',
  agent: { disabled: true },
  mcp: { disabled: true },
  documentDownloadType: 'json',
  defaultOpenAllTags: false,
  orderSchemaPropertiesBy: 'preserve',
  slug: 'api',
  title: 'Data Analytics and Model Prediction API',
  metaData: { title: 'Data Analytics and Model Prediction API — reference' },
};

/** Starts Scalar from a file of our own, since the CSP allows no inline script. */
const INIT_SCRIPT = `Scalar.createApiReference('#reference', ${JSON.stringify(SCALAR_CONFIGURATION)});\n`;

const DOCS_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${SCALAR_CONFIGURATION.metaData.title}</title></head>
<body><noscript>The reference needs JavaScript; the machine-readable document is <a href="/v1/openapi.json">/v1/openapi.json</a> (OpenAPI 3.1) and the error types are at <a href="/docs/problems">/docs/problems</a>.</noscript><div id="reference"></div>
<script src="/docs/assets/scalar.js"></script><script src="/docs/assets/init.js"></script></body></html>`;

/**
 * Only this origin: Scalar injects its styles as <style> elements (hence 'unsafe-inline' for styles only)
 * and draws some icons as data: images; no script, font or request may go elsewhere.
 */
export const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** /docs (the reference), its assets, and the pages problem `type` URLs point to (/docs/problems/<slug>). */
export function mountDocs(app: Express): void {
  app.get('/docs', (_req, res) => {
    res.setHeader('Content-Security-Policy', DOCS_CSP);
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html').send(DOCS_PAGE);
  });
  app.get('/docs/assets/init.js', (_req, res) => {
    res.setHeader('Cache-Control', 'no-cache');
    res.type('text/javascript').send(INIT_SCRIPT);
  });
  // Read and gzipped once, on first use, off the event loop: 4.9 MB of script is 1.4 MB on the wire.
  let scalar: Promise<{ plain: Buffer; gzip: Buffer; etag: string }> | undefined;
  const loadScalar = async () => {
    const plain = await readFile(SCALAR_STANDALONE);
    return { plain, gzip: await gzipAsync(plain, { level: 9 }), etag: `"${createHash('sha256').update(plain).digest('base64url').slice(0, 27)}"` };
  };
  app.get('/docs/assets/scalar.js', (req, res, next) => {
    (scalar ??= loadScalar()).then(
      (js) => {
        res.setHeader('Cache-Control', 'public, max-age=3600');
        res.setHeader('ETag', js.etag);
        res.setHeader('Vary', 'Accept-Encoding');
        res.type('text/javascript');
        if (req.header('if-none-match') === js.etag) return void res.status(304).end();
        const gzip = /\bgzip\b/.test(req.header('accept-encoding') ?? '');
        if (gzip) res.setHeader('Content-Encoding', 'gzip');
        res.send(gzip ? js.gzip : js.plain);
      },
      (err: unknown) => {
        scalar = undefined;
        next(err);
      },
    );
  });
  app.get('/docs/assets/problems.css', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.type('text/css').send(PROBLEM_PAGE_CSS);
  });
  const problemCsp = "default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
  app.get('/docs/problems', (_req, res) => {
    res.setHeader('Content-Security-Policy', problemCsp);
    res.type('html').send(problemIndexPage());
  });
  app.get('/docs/problems/:slug', (req, res, next) => {
    const html = problemPage(req.params.slug);
    if (!html) return next(new AppError('not_found', 'no problem type has this name; /docs/problems lists them all'));
    res.setHeader('Content-Security-Policy', problemCsp);
    res.type('html').send(html);
  });
}
