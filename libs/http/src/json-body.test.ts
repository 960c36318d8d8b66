import { createLogger } from '@dap/logger';
import { createHttpApp, finishApp } from './app.ts';
import { listen, type RunningServer } from './server.ts';

/** The JSON body gate: what cannot be stored faithfully is refused before any route sees it. */
let server: RunningServer;

beforeAll(async () => {
  const logger = createLogger({ name: 'json-body-test', level: 'silent' });
  const app = createHttpApp({ logger, bodyLimitBytes: 1024 });
  app.post('/echo', (req, res) => void res.json(req.body));
  server = await listen(finishApp(app, logger), '127.0.0.1', 0);
});
afterAll(() => server.close());

const post = (body: string | Uint8Array) => fetch(`${server.url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

it('refuses a body that is not valid UTF-8 with a 400 problem, and keeps valid multi-byte text', async () => {
  for (const bad of [Buffer.from([0xff, 0xfe]), Buffer.from([0xc0, 0xaf]), Buffer.from([0x80])]) {
    const res = await post(Buffer.concat([Buffer.from('{"name":"a'), bad, Buffer.from('"}')]));
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await res.json()).toMatchObject({ status: 400, code: 'bad_request', detail: 'the request body is not valid UTF-8' });
  }
  const ok = await post('{"name":"Zoë 💩 東京"}');
  expect(ok.status).toBe(200);
  expect(await ok.json()).toEqual({ name: 'Zoë 💩 東京' });
});

it('refuses a lone surrogate escape, which no store keeps', async () => {
  const res = await post('{"name":"a\\ud800b"}');
  expect(res.status).toBe(400);
  expect(await res.json()).toMatchObject({ code: 'validation_failed', errors: [{ path: 'name', message: 'not valid Unicode' }] });
});
