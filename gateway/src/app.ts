import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Plan } from '@dap/contracts';
import { AppError, accessLog, finishApp, lingerAfterEarlyAnswer, pipeline, requestId, traceRequests, type Metrics } from '@dap/http';
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
  /** The dashboard's session requests per minute per account (a bucket apart from the plan's API limit). */
  dashboardPerMinute: number;
  proxy: RequestHandler;
  idempotency: RequestHandler;
  windowMs: number;
  bodyLimitBytes: number;
  /** Streamed file uploads (operations with `upload`): their size limit, and how long their body may stall. */
  uploads: { limitBytes: number; idleTimeoutMs: number };
  /** How long any other request may take to arrive whole (the server's own limit is raised for uploads). */
  requestTimeoutMs: number;
  corsOrigins: string[];
  publicUrl: () => string;
  ready: () => Promise<void>;
  onResponse: (req: Request, res: Response) => void;
  /** Extra routes mounted before the API (the dashboard's static files). */
  extraRoutes?: (app: Express) => void;
}

function securityHeaders(req: Request, res: Response, next: NextFunction): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
  res.setHeader('Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'");
  // req.secure believes X-Forwarded-Proto only from the proxies TRUST_PROXY names.
  if (req.secure) res.setHeader('Strict-Transport-Security', 'max-age=31536000; includeSubDomains');
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
    res.setHeader(
      'Access-Control-Expose-Headers',
      'Location, Retry-After, RateLimit, RateLimit-Policy, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-Request-Id, traceresponse',
    );
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PUT, PATCH, DELETE');
      res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, Idempotency-Key, X-CSRF-Token, X-Request-Id, traceparent, tracestate');
      res.setHeader('Access-Control-Max-Age', '600');
      return void res.status(204).end();
    }
    next();
  };
}

/**
 * Refuses an oversize body from its declared length before anything is read or proxied. Uploads have their
 * own, larger limit; the service counts a body without a declared length as it streams.
 */
function declaredBodyLimit(limit: number, uploadLimit: number) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const length = Number(req.headers['content-length'] ?? 0);
    if (req.operation?.upload) {
      return next(length > uploadLimit ? new AppError('payload_too_large', `the file is larger than the upload limit of ${uploadLimit} bytes`) : undefined);
    }
    next(length > limit ? new AppError('payload_too_large', `the request body is larger than ${limit} bytes`) : undefined);
  };
}

/**
 * The server lets a request take as long as an upload may (UPLOAD_TIMEOUT_MS); every other request still
 * has to arrive whole within the usual time, and an upload that stalls is cut by its idle timeout.
 */
export function arrivalDeadline(opts: { requestTimeoutMs: number; uploadIdleMs: number }) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.operation?.upload) {
      req.setTimeout(opts.uploadIdleMs, () => req.destroy());
      // A refusal here (401, 403, 413, 429…) or the service's own early answer: the rest of the file is
      // dropped for a moment, then the connection closes, rather than reading up to UPLOAD_LIMIT_BYTES.
      lingerAfterEarlyAnswer(req, res);
      return next();
    }
    // A request without a body (no Content-Length, no Transfer-Encoding) is whole once its headers are in.
    if (!req.complete && (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined)) {
      const timer = setTimeout(() => {
        if (!req.complete) req.socket.destroy();
      }, opts.requestTimeoutMs);
      timer.unref();
      req.once('end', () => clearTimeout(timer));
      req.once('close', () => clearTimeout(timer));
    }
    next();
  };
}

/**
 * An Idempotency-Key needs the whole body in hand (its fingerprint, a replay), which a streamed upload never
 * is at the gateway: refused rather than ignored, so a client does not believe its retries are safe.
 */
function noIdempotentUploads(req: Request, _res: Response, next: NextFunction): void {
  if (req.operation?.upload && req.header('idempotency-key') !== undefined) {
    return next(
      new AppError('validation_failed', 'Idempotency-Key is not supported on streamed uploads: check for the source (GET /v1/sources) before uploading again', {
        errors: [{ path: 'Idempotency-Key', message: 'not supported on this operation' }],
      }),
    );
  }
  next();
}

export function createApp(deps: GatewayAppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.locals.metrics = deps.metrics; // served by listen() on the metrics port only, never on the public one
  app.set('trust proxy', deps.trustProxy);
  // Routes outside /v1 label their metrics with their path; /v1 ones get their operation's (findOperation).
  const ownRoutes = new Set(['/healthz', '/readyz', '/v1/openapi.json', '/docs']);
  const labelOwnRoutes = (req: Request, res: Response, next: NextFunction) => {
    if (ownRoutes.has(req.path)) res.locals.metricsRoute = req.path;
    else if (req.path.startsWith('/docs/')) res.locals.metricsRoute = req.path.startsWith('/docs/problems/') ? '/docs/problems/:slug' : '/docs/*';
    else if (!req.path.startsWith('/v1/')) res.locals.metricsRoute = '(dashboard)';
    next();
  };
  // One express layer for what every request gets (see pipeline in libs/http).
  app.use(
    pipeline(
      requestId,
      securityHeaders,
      deps.metrics.httpMiddleware({ captureRoutes: false }), // labelled by operation (findOperation)
      accessLog(deps.logger),
      cors(deps.corsOrigins),
      labelOwnRoutes,
    ),
  );

  let openapi: string | null = null;
  const openapiJson = () => (openapi ??= JSON.stringify(buildOpenApi(deps.publicUrl())));
  app.get('/v1/openapi.json', (_req, res) => void res.type('application/json').send(openapiJson()));

  const decisions = deps.metrics.counter({
    name: 'dap_rate_limit_decisions_total',
    help: 'Rate-limit decisions by outcome and by the store that made them.',
    labelNames: ['outcome', 'store'],
  });
  const usage = usageRoute(deps.limiter, { windowMs: deps.windowMs, limits: deps.limits });
  // The API, mounted before the operations routes and the dashboard (none of which answers under /v1/), so
  // its requests pass no layer of theirs.
  app.use(
    '/v1',
    pipeline(
      // A span per API request, child of the client's traceparent; its context goes to the service (signedHeaders).
      traceRequests({ traceResponse: true }),
      (req, res, next) => {
        res.setHeader('Cache-Control', 'no-store');
        res.on('finish', () => deps.onResponse(req, res));
        next();
      },
      findOperation,
      arrivalDeadline({ requestTimeoutMs: deps.requestTimeoutMs, uploadIdleMs: deps.uploads.idleTimeoutMs }),
      authenticate({ keys: deps.keys, sessions: deps.sessions, failures: deps.failures, logger: deps.logger }),
      rateLimit(deps.limiter, {
        windowMs: deps.windowMs,
        limits: deps.limits,
        publicPerMinute: deps.publicPerMinute,
        dashboardPerMinute: deps.dashboardPerMinute,
        onDecision: (d) => decisions.inc({ outcome: d.allowed ? 'allowed' : 'rejected', store: d.source }),
      }),
      authorizeOperation,
      declaredBodyLimit(deps.bodyLimitBytes, deps.uploads.limitBytes),
      noIdempotentUploads,
      // The one operation the gateway answers itself (service "gateway" in the route table).
      (req, res, next) => (req.operation!.service === 'gateway' ? usage(req, res) : next()),
      deps.idempotency,
      (req, res, next) => {
        req.url = req.originalUrl; // the services route on the full /v1 path
        deps.proxy(req, res, next);
      },
    ),
  );

  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', async (_req, res, next) => {
    try {
      await deps.ready();
      res.json({ status: 'ready' });
    } catch (err) {
      next(new AppError('unavailable', 'a dependency is not ready', { cause: err, headers: { 'Retry-After': '5' } }));
    }
  });
  mountDocs(app);
  deps.extraRoutes?.(app);
  return finishApp(app, deps.logger);
}
