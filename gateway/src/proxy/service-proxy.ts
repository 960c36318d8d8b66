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
  pathname: string;
}

/**
 * A service URL in the parsed form httpxy (http-proxy-middleware's proxy) uses: the hostname without IPv6
 * brackets (it goes to http.request as is), the port spelled out, and the base path, if any, as `pathname`.
 */
export function parsedTarget(url: string): ParsedTarget {
  const u = new URL(url);
  const hostname = u.hostname.replace(/^\[(.*)\]$/, '$1');
  return {
    protocol: u.protocol,
    host: hostname,
    hostname,
    port: u.port || (u.protocol === 'https:' ? '443' : '80'),
    pathname: u.pathname === '/' ? '' : u.pathname.replace(/\/$/, ''),
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
  // Parsed once: a string target would be parsed again on every request.
  const parsed = Object.fromEntries(Object.entries(opts.targets).map(([service, url]) => [service, parsedTarget(url)])) as Record<keyof Targets, ParsedTarget>;
  const proxy = createProxyMiddleware<Request, ServerResponse>({
    router: (req) => parsed[req.operation!.service as keyof Targets],
    agent: opts.agent,
    xfwd: true,
    // No `toProxy`: httpxy sends the path as the gateway matched and authorised it (split at `?` only, no URL
    // parsing, so a backslash stays a backslash); its toProxy mode would send `//v1/…`.
    // Our one plugin instead of the defaults: their logger and debug plugins add listeners and work to every
    // request, and errors are answered here as problem bodies.
    ejectPlugins: true,
    plugins: [
      (server) => {
        server.on('proxyRes', (proxyRes: IncomingMessage, req: Request) => opts.onUpstreamStatus?.(req, proxyRes.statusCode ?? 0));
        server.on('error', (err: Error, req?: IncomingMessage, res?: ServerResponse | Socket) => {
          const r = req as Request | undefined;
          opts.logger.error({ err, requestId: r?.requestId, service: r?.operation?.service }, 'upstream failed');
          if (!r || !res) return;
          if (!('setHeader' in res)) return void res.destroy();
          sendProblem(r, res as unknown as Parameters<typeof sendProblem>[1], upstreamError(err));
        });
      },
    ],
    proxyTimeout: opts.timeoutMs,
  });
  // The credentials are swapped on req.headers, which the proxy copies when it creates the upstream request,
  // and not in its 'proxyReq' event: that event fires when the request gets a socket, and a request queued in
  // the agent (more than maxSockets in flight to one service) has already sent its headers by then, so
  // removeHeader threw ERR_HTTP_HEADERS_SENT and crashed the gateway process (found by `npm run bench`).
  return (req, res, next) => {
    for (const h of STRIPPED_HEADERS) delete req.headers[h];
    Object.assign(req.headers, signedHeaders(req, opts.internalSecret));
    return proxy(req, res, next);
  };
}
