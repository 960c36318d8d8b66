import { Agent, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Request, RequestHandler } from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { INTERNAL_CONTEXT_HEADER, INTERNAL_SIGNATURE_HEADER, signCallerContext, type ServiceName } from '@dap/contracts';
import { AppError, sendProblem } from '@dap/http';
import type { Logger } from '@dap/logger';

declare module 'express-serve-static-core' {
  interface Request {
    targetService?: ServiceName;
  }
}

/** Headers a client may not forge or pass through to a service. */
const STRIPPED = ['authorization', 'cookie', INTERNAL_CONTEXT_HEADER, INTERNAL_SIGNATURE_HEADER, 'x-dap-internal-token'];

/**
 * Proxies to the service that owns the route, over keep-alive connections, replacing the client's
 * credentials with the gateway-signed caller context.
 */
export function serviceProxy(opts: { targets: Record<ServiceName, string>; internalSecret: string; timeoutMs: number; logger: Logger }): RequestHandler {
  const agent = new Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, keepAliveMsecs: 10_000 });
  return createProxyMiddleware<Request, ServerResponse>({
    router: (req) => opts.targets[req.targetService!],
    agent,
    xfwd: true,
    proxyTimeout: opts.timeoutMs,
    on: {
      proxyReq: (proxyReq: ClientRequest, req: Request) => {
        for (const h of STRIPPED) proxyReq.removeHeader(h);
        const key = req.apiKey!;
        const { context, signature } = signCallerContext(opts.internalSecret, {
          accountId: key.accountId,
          plan: key.plan,
          scopes: key.scopes,
          keyId: key.keyId,
          requestId: req.requestId,
          issuedAt: Date.now(),
        });
        proxyReq.setHeader(INTERNAL_CONTEXT_HEADER, context);
        proxyReq.setHeader(INTERNAL_SIGNATURE_HEADER, signature);
        proxyReq.setHeader('x-request-id', req.requestId);
      },
      error: (err: Error, req: IncomingMessage, res: ServerResponse | Socket) => {
        const r = req as Request;
        opts.logger.error({ err, requestId: r.requestId, service: r.targetService }, 'upstream failed');
        if (!('setHeader' in res)) return void res.destroy();
        const code = (err as NodeJS.ErrnoException).code;
        const appErr =
          code === 'ECONNREFUSED' || code === 'ECONNRESET'
            ? new AppError('unavailable', 'the service is temporarily unavailable; retry shortly', { headers: { 'Retry-After': '5' } })
            : new AppError('bad_gateway', 'the service did not answer in time');
        sendProblem(r, res as unknown as Parameters<typeof sendProblem>[1], appErr);
      },
    },
  });
}
