import type { Agent, IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Request, RequestHandler } from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { AppError, sendProblem } from '@dap/http';
import type { Logger } from '@dap/logger';
import { signedHeaders, STRIPPED_HEADERS, type Targets } from './upstream.ts';

interface ParsedTarget {
  protocol: string;
  host: string;
  hostname: string;
  port: string;
  path: string;
}

/** A service URL in the parsed form http-proxy uses (hostname without IPv6 brackets, no path prefix). */
export function parsedTarget(url: string): ParsedTarget {
  const u = new URL(url);
  const hostname = u.hostname.replace(/^\[(.*)\]$/, '$1');
  return {
    protocol: u.protocol,
    host: hostname,
    hostname,
    port: u.port || (u.protocol === 'https:' ? '443' : '80'),
    path: u.pathname === '/' ? '' : u.pathname.replace(/\/$/, ''),
  };
}

export function upstreamError(err: Error): AppError {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ECONNREFUSED' || code === 'ECONNRESET'
    ? new AppError('unavailable', 'the service is temporarily unavailable; retry shortly', { headers: { 'Retry-After': '5' } })
    : new AppError('bad_gateway', 'the service did not answer in time');
}

/**
 * Streams requests to the service that owns the route, over keep-alive connections, replacing the client's
 * credentials with the gateway-signed caller context.
 */
export function serviceProxy(opts: {
  targets: Targets;
  internalSecret: string;
  timeoutMs: number;
  agent: Agent;
  logger: Logger;
  onUpstreamStatus?: (req: Request, status: number) => void;
}): RequestHandler {
  // Parsed once: http-proxy parses a string target again on every request.
  const parsed = Object.fromEntries(Object.entries(opts.targets).map(([service, url]) => [service, parsedTarget(url)])) as Record<keyof Targets, ParsedTarget>;
  const proxy = createProxyMiddleware<Request, ServerResponse>({
    router: (req) => parsed[req.operation!.service as keyof Targets] as unknown as string, // http-proxy takes a parsed URL object as well as a string
    agent: opts.agent,
    xfwd: true,
    // The path goes upstream exactly as the gateway matched and authorised it (no url.parse rewriting, e.g. of
    // backslashes), which is also one URL parse less per request.
    toProxy: true,
    // Our one plugin instead of the defaults: their logger and debug plugins add listeners and work to every
    // request, and errors are answered here as problem bodies.
    ejectPlugins: true,
    plugins: [
      (server) => {
        server.on('proxyRes', (proxyRes: IncomingMessage, req: Request) => opts.onUpstreamStatus?.(req, proxyRes.statusCode ?? 0));
        server.on('error', (err: Error, req: IncomingMessage, res: ServerResponse | Socket) => {
          const r = req as Request;
          opts.logger.error({ err, requestId: r.requestId, service: r.operation?.service }, 'upstream failed');
          if (!('setHeader' in res)) return void res.destroy();
          sendProblem(r, res as unknown as Parameters<typeof sendProblem>[1], upstreamError(err));
        });
      },
    ],
    proxyTimeout: opts.timeoutMs,
  });
  // The credentials are swapped on req.headers, which http-proxy copies when it creates the upstream request,
  // and not in its 'proxyReq' event: that event fires when the request gets a socket, and a request queued in
  // the agent (more than maxSockets in flight to one service) has already sent its headers by then, so
  // removeHeader threw ERR_HTTP_HEADERS_SENT and crashed the gateway process (found by `npm run bench`).
  return (req, res, next) => {
    for (const h of STRIPPED_HEADERS) delete req.headers[h];
    Object.assign(req.headers, signedHeaders(req, opts.internalSecret));
    return proxy(req, res, next);
  };
}
