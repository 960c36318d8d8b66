import { Agent, createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { verifyCallerContext } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { serviceProxy } from './service-proxy.ts';

const SECRET = 'proxy-test-secret-0123456789abcdef0123456789';
const port = (s: Server) => (s.address() as AddressInfo).port;

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
    const proxy = serviceProxy({
      targets: { accounts: target, sources: target, analytics: target, models: target, webhooks: target },
      internalSecret: SECRET,
      timeoutMs: 5_000,
      agent,
      logger: createLogger({ name: 'test', level: 'silent' }),
    });
    const app = express();
    app.use((req, res, next) => {
      req.operation = { service: 'models' } as NonNullable<typeof req.operation>;
      req.principal = { kind: 'key', accountId: 'acct_01HZZZZZZZZZZZZZZZZZZZZZZZ', plan: 'starter', scopes: [] };
      req.requestId = 'req_test';
      proxy(req, res, next);
    });
    const gateway = app.listen(0, '127.0.0.1');
    await new Promise((r) => gateway.once('listening', r));
    try {
      const statuses = await Promise.all(
        Array.from({ length: 6 }, () => fetch(`http://127.0.0.1:${port(gateway)}/v1/models`, { headers: { authorization: 'Bearer dap_secret', cookie: 'a=b' } }).then((r) => r.status)),
      );
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
      expect(seen).toHaveLength(6);
      for (const h of seen) {
        expect(h.authorization).toBeUndefined();
        expect(h.cookie).toBeUndefined();
        expect(verifyCallerContext(SECRET, h['x-dap-context'] as string, h['x-dap-signature'] as string)?.accountId).toBe('acct_01HZZZZZZZZZZZZZZZZZZZZZZZ');
      }
    } finally {
      gateway.closeAllConnections();
      gateway.close();
      agent.destroy();
      upstream.closeAllConnections();
      upstream.close();
    }
  });
});
