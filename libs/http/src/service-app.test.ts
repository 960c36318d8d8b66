import { Router } from 'express';
import { INTERNAL_CONTEXT_HEADER, INTERNAL_SIGNATURE_HEADER, newId, signCallerContext } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { createServiceApp } from './app.ts';
import { listen, type RunningServer } from './server.ts';

/** A service's app: its routers at their paths, in order, behind the shared conventions and in front of the 404. */
let server: RunningServer;
let ready = true;
const SECRET = 'service-app-test-secret-0123456789abcdef';

/** The headers the gateway signs a request with. */
function signed(): Record<string, string> {
  const { context, signature } = signCallerContext(SECRET, { accountId: newId('acct'), plan: 'starter', scopes: [], requestId: newId('req'), issuedAt: Date.now() });
  return { [INTERNAL_CONTEXT_HEADER]: context, [INTERNAL_SIGNATURE_HEADER]: signature };
}

beforeAll(async () => {
  const logger = createLogger({ name: 'service-app-test', level: 'silent' });
  const first = Router().get('/things', (_req, res) => void res.json({ from: 'first' }));
  const second = Router()
    .get('/things', (_req, res) => void res.json({ from: 'second' }))
    .get('/other', (_req, res) => void res.json({ from: 'second' }));
  const open = Router().get('/ping', (_req, res) => void res.json({ pong: true }));
  const app = createServiceApp(
    {
      logger,
      bodyLimitBytes: 1024,
      internalSecret: SECRET,
      ready: async () => {
        if (!ready) throw new Error('mongodb down');
      },
    },
    [
      ['/v1/a', first],
      ['/v1/a', second],
      ['/internal', open],
    ],
  );
  server = await listen(app, '127.0.0.1', 0);
});
afterAll(() => server.close());

it('mounts the routers in order, behind the gateway signature on /v1, and answers an unknown path with a problem body', async () => {
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${server.url}${path}`, { headers });
    return [res.status, await res.json()];
  };
  // The first router mounted at a path answers what it has; the next one what only it has.
  expect(await get('/v1/a/things', signed())).toEqual([200, { from: 'first' }]);
  expect(await get('/v1/a/other', signed())).toEqual([200, { from: 'second' }]);
  expect(await get('/v1/a/things')).toEqual([401, expect.objectContaining({ code: 'unauthorized' })]);
  const ping = await fetch(`${server.url}/internal/ping`);
  expect([ping.status, await ping.json()]).toEqual([200, { pong: true }]);
  const missing = await fetch(`${server.url}/internal/nothing`);
  expect([missing.status, missing.headers.get('content-type')]).toEqual([404, expect.stringMatching(/^application\/problem\+json/)]);
});

it('answers readiness from the given probe', async () => {
  ready = true;
  expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  ready = false;
  expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
});
