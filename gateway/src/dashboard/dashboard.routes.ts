import { existsSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { Logger } from '@dap/logger';

/**
 * The dashboard's own policy, stricter than a default web app's: its scripts and styles come only from
 * this origin (no inline code), it talks only to this origin's API, and no one may frame it.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Paths the API and operations own: the dashboard never answers them, not even with its index page. */
const RESERVED = /^\/(v1|docs|healthz|readyz|metrics)(\/|$)/;

const NOT_BUILT_PAGE =
  '<!doctype html><html lang="en"><meta charset="utf-8"><title>Dashboard not built</title>' +
  '<h1>The dashboard is not built</h1><p>Run <code>bash deploy/local/bootstrap.sh</code> (or <code>npm start</code>), then reload.</p></html>';

/**
 * Serves the built single-page dashboard under `/`: hashed assets cached forever, and index.html (never
 * cached) for any other GET that is not an API or operations path, so client-side routes survive a reload.
 */
export function dashboardRoutes(opts: { dir: string; logger: Logger }): (app: Express) => void {
  const dir = resolve(opts.dir);
  const indexFile = join(dir, 'index.html');
  const files = express.static(dir, {
    index: false,
    redirect: false,
    dotfiles: 'ignore',
    setHeaders: (res, path) => {
      if (path.startsWith(join(dir, 'assets'))) res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
      else if (path.endsWith('.html')) res.setHeader('Cache-Control', 'no-cache');
      else res.setHeader('Cache-Control', 'public, max-age=3600');
    },
  });

  const sendIndex = (req: Request, res: Response, next: NextFunction) => {
    // A missing file (an old asset name, a typo) is a 404, not the app.
    if (extname(req.path) !== '') return next();
    if (!existsSync(indexFile)) {
      res.setHeader('Cache-Control', 'no-store');
      return void res.status(503).type('html').send(NOT_BUILT_PAGE);
    }
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(indexFile, (err) => {
      if (err && !res.headersSent) next(err);
    });
  };

  return (app) => {
    if (!existsSync(indexFile)) opts.logger.warn({ dir }, 'the dashboard is not built; `/` answers 503 until it is');
    app.use((req, res, next) => {
      if ((req.method !== 'GET' && req.method !== 'HEAD') || RESERVED.test(req.path)) return next();
      res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
      files(req, res, () => sendIndex(req, res, next));
    });
  };
}
