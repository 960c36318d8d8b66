import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Plan } from '@dap/contracts';
import { AppError, accessLog, finishApp, requestId, type Metrics } from '@dap/http';
import type { Logger } from '@dap/logger';
import { authenticate } from './auth/authenticate.ts';
import type { AuthFailureLimiter } from './auth/auth-failure.limiter.ts';
import type { KeyVerifier } from './auth/key-verifier.ts';
import type { SessionVerifier } from './auth/session-verifier.ts';
import { mountDocs } from './openapi/docs.ts';
import { buildOpenApi } from './openapi/openapi.ts';
import { authorizeOperation, findOperation } from './proxy/route.ts';
import { rateLimit, usageRoute } from './rate-limit/rate-limit.middleware.ts';
import type { Limiter } from './rate-limit/sliding-window.limiter.ts';

export interface GatewayAppDeps {
  logger: Logger;
  metrics: Metrics;
  keys: KeyVerifier;
  sessions: SessionVerifier;
  failures: AuthFailureLimiter;
  /** Express's `trust proxy`: who may name the client in X-Forwarded-For (TRUST_PROXY in config.ts). */
  trustProxy: false | number | string[];
  limiter: Limiter;
  limits: Record<Plan, number>;
  publicPerMinute: number;
  proxy: RequestHandler;
  idempotency: RequestHandler;
  windowMs: number;
  bodyLimitBytes: number;
  corsOrigins: string[];
  publicUrl: () => string;
  ready: () => Promise<void>;
  onResponse: (req: Request, res: Response) => void;
  /** Extra routes mounted before the API (the dashboard's static files). */
  extraRoutes?: (app: Express) => void;
}

function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
  res.setHeader('Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'");
  if (_req.header('x-forwarded-proto') === 'https') res.setHeader('Strict-Transport-Security', 'max-age=31536000; includeSubDomains');
  next();
}

/** CORS for the configured dashboard origins only; any other origin gets no CORS headers at all. */
function cors(origins: string[]) {
  const allowed = new Set(origins);
  return (req: Request, res: Response, next: NextFunction): void => {
    const origin = req.header('origin');
    if (!origin || !allowed.has(origin)) return next();
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    res.setHeader('Vary', 'Origin');
    res.setHeader('Access-Control-Expose-Headers', 'Location, Retry-After, RateLimit, RateLimit-Policy, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-Request-Id');
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'GET, POST, DELETE');
      res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, Idempotency-Key, X-CSRF-Token, X-Request-Id');
      res.setHeader('Access-Control-Max-Age', '600');
      return void res.status(204).end();
    }
    next();
  };
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
  app.locals.metrics = deps.metrics; // served by listen() on the metrics port only, never on the public one
  app.set('trust proxy', deps.trustProxy);
  app.use(requestId);
  app.use(securityHeaders);
  app.use(deps.metrics.httpMiddleware({ captureRoutes: false })); // labelled by operation (findOperation)
  app.use(accessLog(deps.logger));
  app.use(cors(deps.corsOrigins));
  // Routes outside /v1 label their metrics with their path; /v1 ones get their operation's (findOperation).
  const ownRoutes = new Set(['/healthz', '/readyz', '/v1/openapi.json', '/docs']);
  app.use((req, res, next) => {
    if (ownRoutes.has(req.path)) res.locals.metricsRoute = req.path;
    else if (req.path.startsWith('/docs/')) res.locals.metricsRoute = req.path.startsWith('/docs/problems/') ? '/docs/problems/:slug' : '/docs/*';
    else if (!req.path.startsWith('/v1/')) res.locals.metricsRoute = '(dashboard)';
    next();
  });
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
  mountDocs(app);
  deps.extraRoutes?.(app);

  const v1 = express.Router();
  v1.use((req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    res.on('finish', () => deps.onResponse(req, res));
    next();
  });
  v1.use(findOperation);
  v1.use(authenticate({ keys: deps.keys, sessions: deps.sessions, failures: deps.failures, logger: deps.logger }));
  const decisions = deps.metrics.counter({
    name: 'dap_rate_limit_decisions_total',
    help: 'Rate-limit decisions by outcome and by the store that made them.',
    labelNames: ['outcome', 'store'],
  });
  v1.use(
    rateLimit(deps.limiter, {
      windowMs: deps.windowMs,
      limits: deps.limits,
      publicPerMinute: deps.publicPerMinute,
      onDecision: (d) => decisions.inc({ outcome: d.allowed ? 'allowed' : 'rejected', store: d.source }),
    }),
  );
  v1.use(authorizeOperation);
  v1.use(declaredBodyLimit(deps.bodyLimitBytes));
  v1.get('/usage', usageRoute(deps.limiter, { windowMs: deps.windowMs, limits: deps.limits }));
  v1.use(deps.idempotency);
  v1.use((req, res, next) => {
    req.url = req.originalUrl; // the services route on the full /v1 path
    deps.proxy(req, res, next);
  });
  app.use('/v1', v1);
  return finishApp(app, deps.logger);
}
