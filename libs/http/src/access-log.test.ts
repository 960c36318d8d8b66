import { Writable } from 'node:stream';
import { INTERNAL_CONTEXT_HEADER, INTERNAL_SIGNATURE_HEADER, signCallerContext } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { createHttpApp, finishApp } from './app.ts';
import { listen, type RunningServer } from './server.ts';

/** The access log line: JSON, with the request id and the account the request acted for. */
const SECRET = 'access-log-test-secret-0123456789abcdef';
const lines: Array<Record<string, unknown>> = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
    done();
  },
});
let server: RunningServer;

beforeAll(async () => {
  const logger = createLogger({ name: 'access-test', level: 'debug', destination: sink });
  const app = createHttpApp({ logger, bodyLimitBytes: 1024, internalSecret: SECRET });
  app.get('/v1/things/:id', (_req, res) => void res.json({ ok: true }));
  app.get('/public', (_req, res) => {
    res.locals.accountId = 'acct_set_by_gateway';
    res.json({ ok: true });
  });
  server = await listen(finishApp(app, logger), '127.0.0.1', 0);
});
afterAll(() => server.close());

const accessLines = () => lines.filter((l) => l.msg === 'request');

it("carries the request id and the signed caller's account id", async () => {
  const { context, signature } = signCallerContext(SECRET, { accountId: 'acct_1', plan: 'starter', scopes: [], requestId: 'req_ctx', issuedAt: Date.now() });
  const res = await fetch(`${server.url}/v1/things/t1`, { headers: { [INTERNAL_CONTEXT_HEADER]: context, [INTERNAL_SIGNATURE_HEADER]: signature, 'x-request-id': 'req_given' } });
  expect(res.status).toBe(200);
  await new Promise((r) => setImmediate(r));
  expect(accessLines().at(-1)).toMatchObject({ service: 'access-test', requestId: 'req_given', accountId: 'acct_1', method: 'GET', path: '/v1/things/t1', status: 200 });
});

it('takes the account from res.locals where no signed context exists (the gateway after auth)', async () => {
  expect((await fetch(`${server.url}/public`)).status).toBe(200);
  await new Promise((r) => setImmediate(r));
  expect(accessLines().at(-1)).toMatchObject({ accountId: 'acct_set_by_gateway', path: '/public', status: 200 });
  expect(accessLines().at(-1)!.requestId).toMatch(/^req_/);
});

it('builds no entry for a request logged at a level that is off, and still logs a 500', async () => {
  const quiet = createLogger({ name: 'access-quiet', level: 'info', destination: sink });
  const debug = jest.spyOn(quiet, 'debug');
  const error = jest.spyOn(quiet, 'error');
  const app = createHttpApp({ logger: quiet, bodyLimitBytes: 1024, internalSecret: SECRET });
  app.get('/ok', (_req, res) => void res.json({ ok: true }));
  app.get('/boom', () => {
    throw new Error('boom');
  });
  const s = await listen(finishApp(app, quiet), '127.0.0.1', 0);
  try {
    expect((await fetch(`${s.url}/ok`)).status).toBe(200);
    expect((await fetch(`${s.url}/boom`)).status).toBe(500);
    await new Promise((r) => setImmediate(r));
    expect(debug).not.toHaveBeenCalled();
    // The positive control: the 500's entry is built and written.
    expect(error).toHaveBeenCalledWith(expect.objectContaining({ path: '/boom', status: 500 }), 'request');
  } finally {
    await s.close();
  }
});
