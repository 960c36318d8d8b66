import { Agent, createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { verifyCallerContext } from '@dap/contracts';
import { traceRequests } from '@dap/http';
import { createLogger } from '@dap/logger';
import { startReceiver } from '@dap/testing';
import { startTracing } from '@dap/tracing';
import { parsedTarget, serviceProxy } from './service-proxy.ts';
import { forwardBuffered } from './upstream.ts';

const SECRET = 'proxy-test-secret-0123456789abcdef0123456789';
const port = (s: Server) => (s.address() as AddressInfo).port;
/** A GET with the path exactly as given (fetch would normalise it). */
const rawGet = (to: number, path: string) =>
  new Promise<number>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: to, path }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });

type Targets = Parameters<typeof serviceProxy>[0]['targets'];
type Operation = NonNullable<express.Request['operation']>;

/** A gateway in front of `targets` that routes each request to the service `serviceOf` names, as a key's caller. */
async function gatewayFor(targets: Targets, agent: Agent, serviceOf: (req: express.Request) => Operation['service']): Promise<Server> {
  const proxy = serviceProxy({ targets, internalSecret: SECRET, timeoutMs: 5_000, agent, logger: createLogger({ name: 'test', level: 'silent' }) });
  const app = express();
  app.use(traceRequests({ traceResponse: true })); // as the gateway's app does for /v1
  // The idempotency path: the body in hand, sent upstream buffered.
  app.post('/v1/buffered', express.raw({ type: () => true }), (req, res, next) => {
    req.operation = { service: serviceOf(req) } as Operation;
    req.principal = { kind: 'key', accountId: 'acct_01HZZZZZZZZZZZZZZZZZZZZZZZ', plan: 'starter', scopes: [] };
    req.requestId = 'req_test';
    forwardBuffered({ req, body: req.body as Buffer, target: targets[serviceOf(req) as keyof Targets], internalSecret: SECRET, agent, timeoutMs: 5_000 }).then(
      (up) => void res.status(up.status).end(up.body),
      next,
    );
  });
  app.use((req, res, next) => {
    req.operation = { service: serviceOf(req) } as Operation;
    req.principal = { kind: 'key', accountId: 'acct_01HZZZZZZZZZZZZZZZZZZZZZZZ', plan: 'starter', scopes: [] };
    req.requestId = 'req_test';
    proxy(req, res, next);
  });
  const gateway = app.listen(0, '127.0.0.1');
  await new Promise((r) => gateway.once('listening', r));
  return gateway;
}

/** Closes the test gateway, its agent and the upstream, dropping their kept-alive connections. */
function shutDown(gateway: Server, agent: Agent, upstream: Server): void {
  gateway.closeAllConnections();
  gateway.close();
  agent.destroy();
  upstream.closeAllConnections();
  upstream.close();
}

describe('serviceProxy', () => {
  // More requests in flight than the agent has sockets: the extra ones wait in the agent's queue. The
  // credentials used to be swapped in the 'proxyReq' event, which a queued request reaches after its headers
  // were sent, and the gateway crashed with ERR_HTTP_HEADERS_SENT.
  it('signs and strips headers on requests queued behind maxSockets', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const upstream = createServer((req, res) => {
      seen.push(req.headers);
      setTimeout(() => res.end('ok'), 50);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
    const target = `http://127.0.0.1:${port(upstream)}`;
    const agent = new Agent({ keepAlive: true, maxSockets: 2 });
    const gateway = await gatewayFor({ accounts: target, sources: target, analytics: target, models: target, webhooks: target }, agent, () => 'models');
    try {
      const statuses = await Promise.all(
        Array.from({ length: 6 }, () =>
          fetch(`http://127.0.0.1:${port(gateway)}/v1/models`, { headers: { authorization: 'Bearer dap_secret', cookie: 'a=b' } }).then((r) => r.status),
        ),
      );
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
      expect(seen).toHaveLength(6);
      for (const h of seen) {
        expect(h.authorization).toBeUndefined();
        expect(h.cookie).toBeUndefined();
        expect(verifyCallerContext(SECRET, h['x-dap-context'] as string, h['x-dap-signature'] as string)?.accountId).toBe('acct_01HZZZZZZZZZZZZZZZZZZZZZZZ');
      }
    } finally {
      shutDown(gateway, agent, upstream);
    }
  });

  it('parses service URLs once into the form the proxy uses', () => {
    expect(parsedTarget('http://127.0.0.1:8094')).toEqual({ protocol: 'http:', host: '127.0.0.1', hostname: '127.0.0.1', port: '8094', pathname: '' });
    expect(parsedTarget('http://[::1]:8094/')).toMatchObject({ hostname: '::1', port: '8094', pathname: '' });
    expect(parsedTarget('https://models.internal/base/')).toMatchObject({ protocol: 'https:', hostname: 'models.internal', port: '443', pathname: '/base' });
  });

  it('sends the path upstream exactly as matched, with its query, and answers 503 when the service is down', async () => {
    const paths: string[] = [];
    const upstream = createServer((req, res) => {
      paths.push(req.url ?? '');
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
    const live = `http://127.0.0.1:${port(upstream)}`;
    const down = createServer();
    await new Promise<void>((r) => down.listen(0, '127.0.0.1', () => r()));
    const dead = `http://127.0.0.1:${port(down)}`;
    await new Promise((r) => down.close(r)); // nothing listens there any more
    const agent = new Agent({ keepAlive: true });
    const gateway = await gatewayFor({ accounts: dead, sources: live, analytics: live, models: live, webhooks: live }, agent, (req) =>
      req.path.startsWith('/v1/account') ? 'accounts' : 'sources',
    );
    try {
      const base = `http://127.0.0.1:${port(gateway)}`;
      const ok = await fetch(`${base}/v1/sources?limit=5&cursor=a%2Fb`);
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ ok: true });
      expect(paths).toEqual(['/v1/sources?limit=5&cursor=a%2Fb']);
      // fetch would normalise these; a raw request keeps them, and so must the proxy.
      for (const raw of ['/v1/sources/a\\b?x=1', '/v1/sources//x', '/v1/sources/%2e%2e/y']) {
        expect(await rawGet(port(gateway), raw)).toBe(200);
        expect(paths.at(-1)).toBe(raw);
      }

      const failed = await fetch(`${base}/v1/account`);
      expect(failed.status).toBe(503);
      expect(failed.headers.get('content-type')).toContain('application/problem+json');
      expect(failed.headers.get('retry-after')).toBe('5');
      expect(await failed.json()).toMatchObject({ status: 503, instance: '/v1/account' });
    } finally {
      shutDown(gateway, agent, upstream);
    }
  });

  describe('trace context', () => {
    const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
    const CLIENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

    async function withGateway(run: (base: string, seen: IncomingHttpHeaders[]) => Promise<void>) {
      const seen: IncomingHttpHeaders[] = [];
      const upstream = createServer((req, res) => {
        seen.push(req.headers);
        req.resume();
        req.on('end', () => res.end('ok'));
      });
      await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
      const target = `http://127.0.0.1:${port(upstream)}`;
      const agent = new Agent({ keepAlive: true });
      const gateway = await gatewayFor({ accounts: target, sources: target, analytics: target, models: target, webhooks: target }, agent, () => 'sources');
      try {
        await run(`http://127.0.0.1:${port(gateway)}`, seen);
      } finally {
        shutDown(gateway, agent, upstream);
      }
    }
    const both = (base: string, headers: Record<string, string>) =>
      Promise.all([fetch(`${base}/v1/sources`, { headers }), fetch(`${base}/v1/buffered`, { method: 'POST', headers, body: '{}' })]);

    it('tracing off: passes a valid client context on as it is, and drops an invalid one instead of forwarding it', async () => {
      await withGateway(async (base, seen) => {
        for (const res of await both(base, { traceparent: CLIENT, tracestate: 'vendor=1' })) {
          expect(res.status).toBe(200);
          expect(res.headers.get('traceresponse')).toBe(CLIENT);
        }
        expect(seen.map((h) => [h.traceparent, h.tracestate])).toEqual([
          [CLIENT, 'vendor=1'],
          [CLIENT, 'vendor=1'],
        ]);
        seen.length = 0;
        for (const res of await both(base, { traceparent: `00-${TRACE_ID}-zz-01`, tracestate: 'vendor=1' })) {
          expect(res.status).toBe(200);
          expect(res.headers.get('traceresponse')).toBeNull();
        }
        for (const res of await both(base, {})) expect(res.headers.get('traceresponse')).toBeNull();
        expect(seen).toHaveLength(4);
        for (const h of seen) expect([h.traceparent, h.tracestate]).toEqual([undefined, undefined]);
      });
    });

    it("tracing on: the service gets the gateway's span, a child of the client's, which traceresponse names", async () => {
      const collector = await startReceiver();
      const tracing = startTracing({ serviceName: 'gateway', endpoint: collector.url, sampleRatio: 1, exportDelayMs: 60_000 });
      try {
        await withGateway(async (base, seen) => {
          const answers = await both(base, { traceparent: CLIENT });
          expect(seen).toHaveLength(2);
          seen.forEach((h, i) => {
            expect(h.traceparent).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
            expect(h.traceparent).not.toBe(CLIENT);
            expect(answers[i]!.headers.get('traceresponse')).toBe(h.traceparent);
          });
          // A request without one starts a new trace (sampled at ratio 1).
          await fetch(`${base}/v1/sources`);
          expect(seen[2]!.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
          expect(seen[2]!.traceparent).not.toContain(TRACE_ID);
        });
      } finally {
        await tracing.shutdown();
        await collector.close();
      }
    });
  });
});
