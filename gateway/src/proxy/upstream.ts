import { type Agent, request } from 'node:http';
import type { Request } from 'express';
import { INTERNAL_CONTEXT_HEADER, INTERNAL_SIGNATURE_HEADER, signCallerContext, type ServiceName } from '@dap/contracts';

/**
 * Headers a client may not forge or pass through to a service. The client's trace context is replaced by the
 * gateway's own span (or dropped, when it was invalid).
 */
export const STRIPPED_HEADERS = [
  'authorization',
  'cookie',
  INTERNAL_CONTEXT_HEADER,
  INTERNAL_SIGNATURE_HEADER,
  'x-dap-internal-token',
  'idempotency-key',
  'traceparent',
  'tracestate',
];

/** The gateway-signed identity of the caller, replacing the client's credentials. */
export function signedHeaders(req: Request, internalSecret: string): Record<string, string> {
  const p = req.principal!;
  const { context, signature } = signCallerContext(internalSecret, {
    accountId: p.accountId,
    plan: p.plan,
    scopes: p.scopes,
    ...(p.keyId ? { keyId: p.keyId } : {}),
    ...(p.sessionId ? { sessionId: p.sessionId, userId: p.userId } : {}),
    requestId: req.requestId,
    issuedAt: Date.now(),
  });
  const headers: Record<string, string> = { [INTERNAL_CONTEXT_HEADER]: context, [INTERNAL_SIGNATURE_HEADER]: signature, 'x-request-id': req.requestId };
  return req.traceCarrier ? Object.assign(headers, req.traceCarrier) : headers;
}

export interface BufferedResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
}

export type Targets = Record<Exclude<ServiceName, 'gateway'>, string>;

/** Sends a fully buffered request upstream and buffers the answer (used where the gateway must keep it). */
export function forwardBuffered(opts: { req: Request; body: Buffer; target: string; internalSecret: string; agent: Agent; timeoutMs: number }): Promise<BufferedResponse> {
  const { req, body } = opts;
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !STRIPPED_HEADERS.includes(k)) headers[k] = v;
  Object.assign(headers, signedHeaders(req, opts.internalSecret), { 'content-length': String(body.length), 'x-forwarded-for': req.ip ?? '' });
  delete headers['transfer-encoding'];
  return new Promise((resolve, reject) => {
    const up = request(`${opts.target}${req.originalUrl}`, { method: req.method, headers, agent: opts.agent, timeout: opts.timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 502, headers: res.headers as Record<string, string | string[]>, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    up.on('timeout', () => up.destroy(new Error('upstream timeout')));
    up.on('error', reject);
    up.end(body);
  });
}
