import type { NextFunction, Request, Response } from 'express';
import { carrierOf, context, extractContext, SpanKind, SpanStatusCode, startSpan, trace, tracingEnabled, type Context, type TraceCarrier } from '@dap/tracing';
import { routeLabel } from './metrics.ts';

declare module 'express-serve-static-core' {
  interface Request {
    /** The request's trace context (its server span), when it has one: what is passed on to the next hop. */
    traceContext?: Context;
    /** That context as headers, for the next hop (made where `traceResponse` is asked for: the gateway). */
    traceCarrier?: TraceCarrier;
  }
}

/**
 * A server span per request, child of the caller's `traceparent` (an invalid one is ignored: a new trace).
 * The span is named after the route template (`POST /v1/sources`), never the raw path, and carries no
 * headers, bodies or credentials. Its context is active for the rest of the request, so events written while
 * handling it carry the trace on. With tracing off and no `traceparent`, nothing at all is done.
 * `traceResponse` adds the W3C `traceresponse` header (the gateway's answer to its clients).
 */
export function traceRequests(opts: { traceResponse?: boolean } = {}) {
  const answer = (req: Request, res: Response, ctx: Context) => {
    req.traceContext = ctx;
    if (!opts.traceResponse) return;
    req.traceCarrier = carrierOf(ctx);
    if (req.traceCarrier) res.setHeader('traceresponse', req.traceCarrier.traceparent);
  };
  return (req: Request, res: Response, next: NextFunction): void => {
    const parent = extractContext(req.headers);
    if (!tracingEnabled()) {
      // Nothing recorded: the caller's context (if valid) is passed on as it came, without a span of our own.
      if (!trace.getSpan(parent)) return next();
      answer(req, res, parent);
      return context.with(parent, next);
    }
    const span = startSpan(req.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method } }, parent)!;
    const ctx = trace.setSpan(parent, span);
    answer(req, res, ctx);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      // A router mounted at its collection's path labels that route `/v1/sources/`; the span says `/v1/sources`.
      const label = routeLabel(req, res);
      const route = label.length > 1 && label.endsWith('/') ? label.slice(0, -1) : label;
      span.updateName(`${req.method} ${route}`);
      span.setAttribute('http.route', route);
      span.setAttribute('http.response.status_code', res.statusCode);
      if (req.requestId) span.setAttribute('dap.request_id', req.requestId);
      const accountId = req.caller?.accountId ?? res.locals.accountId;
      if (accountId) span.setAttribute('dap.account_id', accountId);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
    res.once('finish', end);
    res.once('close', end);
    context.with(ctx, next);
  };
}
