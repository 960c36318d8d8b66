import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { AppError, accessLog, finishApp, requestId } from '@dap/http';
import type { Logger } from '@dap/logger';
import { authenticate } from './auth/authenticate.ts';
import type { KeyVerifier } from './auth/key-verifier.ts';
import { buildOpenApi, docsPage } from './openapi/openapi.ts';
import { routeOperation } from './proxy/route.ts';
import { rateLimit } from './rate-limit/rate-limit.middleware.ts';
import type { Limiter } from './rate-limit/sliding-window.limiter.ts';

export interface GatewayAppDeps {
  logger: Logger;
  verifier: KeyVerifier;
  limiter: Limiter;
  proxy: express.RequestHandler;
  windowMs: number;
  bodyLimitBytes: number;
  publicUrl: () => string;
  ready: () => Promise<void>;
}

function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
  res.setHeader('Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'");
  next();
}

/** Refuses an oversize body from its declared length before anything is read or proxied. */
function declaredBodyLimit(limit: number) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const length = Number(req.headers['content-length'] ?? 0);
    next(length > limit ? new AppError('payload_too_large', `the request body is larger than ${limit} bytes`) : undefined);
  };
}

export function createApp(deps: GatewayAppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');
  app.use(requestId);
  app.use(securityHeaders);
  app.use(accessLog(deps.logger));
  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', async (_req, res, next) => {
    try {
      await deps.ready();
      res.json({ status: 'ready' });
    } catch (err) {
      next(new AppError('unavailable', 'a dependency is not ready', { cause: err, headers: { 'Retry-After': '5' } }));
    }
  });

  let openapi: string | null = null;
  const openapiJson = () => (openapi ??= JSON.stringify(buildOpenApi(deps.publicUrl())));
  app.get('/v1/openapi.json', (_req, res) => void res.type('application/json').send(openapiJson()));
  app.get('/docs', (_req, res) => {
    res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
    res.type('html').send(docsPage(JSON.parse(openapiJson())));
  });

  app.use('/v1', (req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });
  app.use('/v1', authenticate(deps.verifier, deps.logger));
  app.use('/v1', rateLimit(deps.limiter, deps.windowMs));
  app.use('/v1', routeOperation);
  app.use('/v1', declaredBodyLimit(deps.bodyLimitBytes));
  app.use('/v1', (req, res, next) => {
    req.url = req.originalUrl; // the services route on the full /v1 path
    deps.proxy(req, res, next);
  });
  return finishApp(app, deps.logger);
}
