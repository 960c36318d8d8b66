import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Prometheus metrics for one process. Each process (or each service started in a test process) makes its own
 * `Metrics`, so nothing is registered in prom-client's global registry and two services in one process never
 * collide.
 *
 * Other code registers its own metrics through it:
 *
 *   const decisions = metrics.counter({ name: 'dap_rate_limit_decisions_total', help: 'Limiter decisions', labelNames: ['outcome'] });
 *   decisions.inc({ outcome: 'allowed' });
 *   const lag = metrics.gauge({ name: 'dap_kafka_consumer_lag', help: 'Messages behind', labelNames: ['topic', 'partition'] });
 *   const attempt = metrics.histogram({ name: 'dap_webhook_attempt_seconds', help: '…', labelNames: ['outcome'], buckets: [0.05, 0.25, 1, 5, 15] });
 *
 * Label values must come from small, fixed sets (outcomes, topics, routes), never from ids or user input.
 * Registering the same name twice returns the metric already registered when its type matches.
 */
export interface Metrics {
  readonly registry: Registry;
  readonly service: string;
  counter<L extends string = string>(opts: MetricOptions<L>): Counter<L>;
  gauge<L extends string = string>(opts: MetricOptions<L>): Gauge<L>;
  histogram<L extends string = string>(opts: MetricOptions<L> & { buckets?: number[] }): Histogram<L>;
  /**
   * Express middleware that times every request into `http_request_duration_seconds`. `captureRoutes: false`
   * skips watching express assign `req.route` (a property defined on every request), for an app that labels
   * its requests itself through `res.locals.metricsRoute`.
   */
  httpMiddleware(opts?: { captureRoutes?: boolean }): RequestHandler;
  /** `GET /metrics`: the text exposition format. */
  handler(): RequestHandler;
}

export interface MetricOptions<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
}

export const HTTP_DURATION_METRIC = 'http_request_duration_seconds';
export const HTTP_DURATION_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** The route label of a request that matched no route (a 404, or a middleware that answered first). */
export const UNMATCHED_ROUTE = '(unmatched)';

declare module 'express-serve-static-core' {
  interface Locals {
    /** Overrides the route label of this request, e.g. the gateway's `/v1/sources/{id}` operation path. */
    metricsRoute?: string;
  }
}

/**
 * The route label: the Express route pattern (`/v1/sources/:id`), never the raw path, so ids do not
 * multiply the series. The router assigns `req.route` while `req.baseUrl` still names the router's mount
 * path, and restores `baseUrl` when an error leaves the router, so the label is taken at that assignment.
 */
const ROUTE_LABEL = Symbol('routeLabel');
type LabelledRequest = Request & { [ROUTE_LABEL]?: string };

function captureRoute(req: Request): void {
  let current: unknown;
  Object.defineProperty(req, 'route', {
    configurable: true,
    enumerable: true,
    get: () => current,
    set: (route: { path?: unknown } | undefined) => {
      current = route;
      if (route?.path === undefined) return;
      const path = Array.isArray(route.path) ? route.path.map(String).join('|') : String(route.path);
      (req as LabelledRequest)[ROUTE_LABEL] = `${req.baseUrl ?? ''}${path}` || '/';
    },
  });
}

export function routeLabel(req: Request, res: Response): string {
  return res.locals.metricsRoute ?? (req as LabelledRequest)[ROUTE_LABEL] ?? UNMATCHED_ROUTE;
}

export function createMetrics(opts: { service: string; defaultMetrics?: boolean }): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: opts.service });
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });

  const existing = <T>(name: string, type: new (...args: never[]) => T): T | undefined => {
    const found = registry.getSingleMetric(name);
    if (!found) return undefined;
    if (!(found instanceof type)) throw new Error(`metric ${name} is already registered with another type`);
    return found;
  };

  const metrics: Metrics = {
    registry,
    service: opts.service,
    counter: (o) => existing(o.name, Counter) ?? new Counter({ name: o.name, help: o.help, labelNames: o.labelNames ?? [], registers: [registry] }),
    gauge: (o) => existing(o.name, Gauge) ?? new Gauge({ name: o.name, help: o.help, labelNames: o.labelNames ?? [], registers: [registry] }),
    histogram: (o) =>
      existing(o.name, Histogram) ??
      new Histogram({ name: o.name, help: o.help, labelNames: o.labelNames ?? [], buckets: o.buckets ?? HTTP_DURATION_BUCKETS, registers: [registry] }),
    httpMiddleware: ({ captureRoutes = true } = {}) => {
      const duration = metrics.histogram({
        name: HTTP_DURATION_METRIC,
        help: 'HTTP request duration in seconds, by method, route pattern and status code.',
        labelNames: ['method', 'route', 'status_code'],
      });
      return (req: Request, res: Response, next: NextFunction) => {
        const end = duration.startTimer();
        if (captureRoutes) captureRoute(req);
        res.once('finish', () => end({ method: req.method, route: routeLabel(req, res), status_code: String(res.statusCode) }));
        next();
      };
    },
    handler: () => async (_req: Request, res: Response, next: NextFunction) => {
      try {
        const body = await registry.metrics();
        res.setHeader('Content-Type', registry.contentType);
        res.setHeader('Cache-Control', 'no-store');
        res.send(body);
      } catch (err) {
        next(err);
      }
    },
  };
  return metrics;
}
