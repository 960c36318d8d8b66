import { isUtf8 } from 'node:buffer';
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { newId, verifyCallerContext, isInternalServiceToken, INTERNAL_CONTEXT_HEADER, INTERNAL_SIGNATURE_HEADER, INTERNAL_TOKEN_HEADER, type CallerContext } from '@dap/contracts';
import type { Logger } from '@dap/logger';
import { DomainError } from '@dap/errors';
import { context, withAccount } from '@dap/tracing';
import { problemHeaders, problemOf, statusOf } from './errors.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import { traceRequests } from './tracing.ts';
import { checkJsonShape } from './validation.ts';

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
    caller?: CallerContext;
  }
  interface Locals {
    /** The account the request acts for, when the caller is not a signed context (the gateway sets it after auth). */
    accountId?: string;
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const UNAVAILABLE_ERRORS = new Set([
  'MongoServerSelectionError',
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoPoolClearedError',
]);

export interface HttpAppOptions {
  logger: Logger;
  bodyLimitBytes: number;
  /** Services pass the internal secret; every /v1 request must then carry a valid gateway signature. */
  internalSecret?: string;
  /** Readiness probe: resolves when the process's dependencies answer. */
  ready?: () => Promise<void>;
  /** This process's metrics registry; one is made (named after the logger's `service`) when not given. */
  metrics?: Metrics;
  /**
   * Routes that read their own request body (streamed file uploads): mounted after the gateway-signature check
   * and before the JSON body parser, which never sees their requests. Mounted at `path`, as every router is.
   */
  streamRoutes?: { path: string; routes: RequestHandler };
}

export function requestId(req: Request, res: Response, next: NextFunction): void {
  const given = req.header('x-request-id');
  req.requestId = given && REQUEST_ID.test(given) ? given : newId('req');
  res.setHeader('X-Request-Id', req.requestId);
  next();
}

export function accessLog(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const start = process.hrtime.bigint();
    res.on('finish', () => {
      const level = res.statusCode >= 500 ? 'error' : 'debug';
      // Most requests log at debug, which production leaves off: no entry is built for them.
      if (!logger.isLevelEnabled(level)) return;
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      logger[level](
        {
          requestId: req.requestId,
          accountId: req.caller?.accountId ?? res.locals.accountId,
          method: req.method,
          path: req.path,
          status: res.statusCode,
          ms: Math.round(ms * 100) / 100,
        },
        'request',
      );
    });
    next();
  };
}

/** JSON only: a body with another content type is a 400, a malformed one a 400, an oversize one a 413. */
export function jsonBody(limitBytes: number) {
  // Invalid UTF-8 would be decoded to U+FFFD and stored silently: remember it here, refuse it after parsing.
  const invalidUtf8 = new WeakSet<object>();
  const parse = express.json({
    limit: limitBytes,
    strict: true,
    type: () => true,
    verify: (req, _res, buf) => void (isUtf8(buf) || invalidUtf8.add(req)),
  });
  return (req: Request, res: Response, next: NextFunction): void => {
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    if (!hasBody) return next();
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') {
      return next(new DomainError('unsupported_content_type', 'the request body must be application/json'));
    }
    parse(req, res, (err?: unknown) => {
      if (err) return next(err);
      if (invalidUtf8.has(req)) return next(new DomainError('bad_request', 'the request body is not valid UTF-8'));
      try {
        checkJsonShape(req.body);
        next();
      } catch (e) {
        next(e);
      }
    });
  };
}

export function requireGatewaySignature(secret: string) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const caller = verifyCallerContext(secret, req.header(INTERNAL_CONTEXT_HEADER), req.header(INTERNAL_SIGNATURE_HEADER));
    if (!caller) return next(new DomainError('unauthorized', 'requests must come through the API gateway'));
    req.caller = caller;
    if (!req.header('x-request-id')) req.requestId = caller.requestId;
    // The request's trace is the caller account's: events of that account written now carry it.
    if (req.traceContext) return context.with(withAccount(req.traceContext, caller.accountId), next);
    next();
  };
}

/** The caller of an authenticated route; routes behind requireGatewaySignature always have one. */
export function callerOf(req: Request): CallerContext {
  if (!req.caller?.accountId) throw new DomainError('unauthorized', 'no authenticated caller');
  return req.caller;
}

function serviceNameOf(logger: Logger): string {
  const bound = logger.bindings() as { service?: unknown; name?: unknown };
  return String(bound.service ?? bound.name ?? 'unknown');
}

/** The metrics of an app made by createHttpApp, for code that registers its own counters or histograms. */
export function metricsOf(app: Express): Metrics {
  return app.locals.metrics as Metrics;
}

/** Creates an express app with the shared conventions; routes go on it, then `finishApp`. */
export function createHttpApp(opts: HttpAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');
  const metrics = opts.metrics ?? createMetrics({ service: serviceNameOf(opts.logger) });
  app.locals.metrics = metrics;
  app.use(requestId);
  app.use(metrics.httpMiddleware());
  app.use(accessLog(opts.logger));
  // No /metrics here: listen() serves it on the metrics port only (see metricsApp in server.ts).
  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', async (_req, res, next) => {
    try {
      await opts.ready?.();
      res.json({ status: 'ready' });
    } catch (err) {
      next(new DomainError('unavailable', 'a dependency is not ready', { cause: err, retryAfterSeconds: 5 }));
    }
  });
  // Before the signature check, so a refused request is traced too.
  app.use('/v1', traceRequests());
  if (opts.internalSecret) app.use('/v1', requireGatewaySignature(opts.internalSecret));
  if (opts.streamRoutes) app.use(opts.streamRoutes.path, opts.streamRoutes.routes);
  app.use(jsonBody(opts.bodyLimitBytes));
  return app;
}

/** What every service's app is made with, besides its own routes (createHttpApp says what each does). */
export type ServiceAppOptions = Pick<HttpAppOptions, 'logger' | 'bodyLimitBytes'> & Required<Pick<HttpAppOptions, 'internalSecret' | 'ready'>>;

/** A service's app: the shared conventions, its routers mounted in order, then the 404 and the error handler. */
export function createServiceApp(opts: ServiceAppOptions & Pick<HttpAppOptions, 'streamRoutes'>, routes: ReadonlyArray<readonly [path: string, router: RequestHandler]>): Express {
  const app = createHttpApp(opts);
  for (const [path, router] of routes) app.use(path, router);
  return finishApp(app, opts.logger);
}

export function toDomainError(err: unknown): DomainError {
  if (err instanceof DomainError) return err;
  const e = err as { type?: string; status?: number; name?: string; message?: string };
  switch (e?.type) {
    case 'entity.parse.failed': {
      // The parser also refuses valid JSON that is not an object or array at the top (`null`, `1`, `"x"`).
      const raw = (err as { body?: unknown }).body;
      if (typeof raw === 'string' && isJson(raw)) {
        return new DomainError('validation_failed', 'the request body must be a JSON object', { errors: [{ path: '(root)', message: 'expected an object' }] });
      }
      return new DomainError('malformed_json', 'the request body is not valid JSON');
    }
    case 'entity.too.large':
      return new DomainError('payload_too_large', 'the request body is too large');
    case 'charset.unsupported':
    case 'encoding.unsupported':
      return new DomainError('bad_request', 'the request body encoding is not supported; send UTF-8 JSON');
    case 'request.aborted':
      return new DomainError('bad_request', 'the request was aborted');
  }
  if (e?.name && UNAVAILABLE_ERRORS.has(e.name)) {
    return new DomainError('unavailable', 'the service is temporarily unavailable; retry shortly', { cause: err, retryAfterSeconds: 5 });
  }
  if (err instanceof URIError) return new DomainError('not_found', 'the path is malformed');
  return new DomainError('internal', 'an unexpected error occurred; contact support with the request id if it persists', { cause: err });
}

export function sendProblem(req: Request, res: Response, err: DomainError): void {
  if (res.headersSent) return;
  for (const [k, v] of Object.entries(problemHeaders(err))) res.setHeader(k, v);
  res
    .status(statusOf(err.code))
    .type('application/problem+json')
    .send(JSON.stringify(problemOf(err, req.originalUrl, req.requestId ?? 'unknown')));
}

/** Adds the 404 for unknown paths and the one error handler that turns everything into a problem body. */
export function finishApp(app: Express, logger: Logger): Express {
  app.use((req, _res, next) => next(new DomainError('not_found', `no route for ${req.method} ${req.path}`)));
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const failure = toDomainError(err);
    if (statusOf(failure.code) >= 500) logger.error({ err: failure.cause ?? failure, requestId: req.requestId }, 'request failed');
    sendProblem(req, res, failure);
  });
  return app;
}

/** Guards /internal routes: only our own services, holding the internal secret, may call them. */
export function requireInternalToken(secret: string) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (!isInternalServiceToken(secret, req.header(INTERNAL_TOKEN_HEADER))) return next(new DomainError('unauthorized', 'internal route'));
    next();
  };
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
