import { readFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { ERROR_CATALOGUE, createHttpApp, finishApp, listen, type RunningServer } from '@dap/http';
import { createLogger } from '@dap/logger';
import { DOCS_CSP, SCALAR_STANDALONE, mountDocs } from './docs.ts';
import { PROBLEM_GUIDE } from './problems.ts';

/** /docs, its assets, and the problem pages every error body's `type` points to. */
let server: RunningServer;

beforeAll(async () => {
  const logger = createLogger({ name: 'docs-test', level: 'silent' });
  const app = createHttpApp({ logger, bodyLimitBytes: 1024 });
  mountDocs(app);
  app.get('/boom', () => {
    throw new Error('x');
  });
  server = await listen(finishApp(app, logger), '127.0.0.1', 0);
});
afterAll(() => server.close());

const get = (path: string) => fetch(`${server.url}${path}`);

it('serves the reference page and Scalar from this origin, with a CSP that allows only self', async () => {
  const page = await get('/docs');
  expect(page.status).toBe(200);
  expect(page.headers.get('content-security-policy')).toBe(DOCS_CSP);
  for (const directive of ['script-src', 'connect-src', 'font-src', 'img-src']) expect(DOCS_CSP).toMatch(new RegExp(`${directive} 'self'[^;]*(;|$)`));
  expect(DOCS_CSP).not.toMatch(/https?:|\*/);
  const html = await page.text();
  expect(html).toContain('<script src="/docs/assets/scalar.js"></script><script src="/docs/assets/init.js"></script>');
  expect(html).not.toMatch(/<script>|https?:\/\//); // nothing inline, nothing from elsewhere

  const scalar = await get('/docs/assets/scalar.js');
  expect(scalar.status).toBe(200);
  expect(scalar.headers.get('content-type')).toMatch(/^text\/javascript/);
  expect(await scalar.text()).toBe(readFileSync(SCALAR_STANDALONE, 'utf8'));

  const init = await (await get('/docs/assets/init.js')).text();
  const config = JSON.parse(init.match(/createApiReference\('#reference', (.*)\);/)![1]!);
  expect(config).toMatchObject({ url: '/v1/openapi.json', withDefaultFonts: false, telemetry: false, agent: { disabled: true }, mcp: { disabled: true } });
  expect(config).not.toHaveProperty('proxyUrl');
});

it('sends the 4.8 MB script gzipped to a client that takes gzip, plain to one that does not, and 304 when unchanged', async () => {
  const raw = (encoding: string, extra: Record<string, string> = {}) =>
    new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
      httpGet(`${server.url}/docs/assets/scalar.js`, { headers: { 'accept-encoding': encoding, ...extra } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      }).on('error', reject);
    });
  const file = readFileSync(SCALAR_STANDALONE);
  const zipped = await raw('gzip, deflate, br');
  expect(zipped.headers['content-encoding']).toBe('gzip');
  expect(zipped.body.length).toBeLessThan(file.length / 2);
  expect(gunzipSync(zipped.body).equals(file)).toBe(true);
  const plain = await raw('identity');
  expect(plain.headers['content-encoding']).toBeUndefined();
  expect(plain.body.equals(file)).toBe(true);
  const again = await raw('gzip', { 'if-none-match': String(zipped.headers.etag) });
  expect([again.status, again.body.length]).toEqual([304, 0]);
});

it('answers every problem type of the catalogue with a page: title, status, what it means, what to do', async () => {
  for (const [code, entry] of Object.entries(ERROR_CATALOGUE)) {
    const res = await get(`/docs/problems/${entry.slug}`);
    expect({ code, status: res.status, type: res.headers.get('content-type') }).toEqual({ code, status: 200, type: expect.stringMatching(/^text\/html/) });
    const html = await res.text();
    const guide = PROBLEM_GUIDE[code as keyof typeof PROBLEM_GUIDE];
    expect(guide.meaning.length).toBeGreaterThan(40);
    for (const text of [`<h1>${entry.title}`, `<code>${code}</code>`, `<dd>${entry.status}</dd>`, 'What it means', 'What to do', `/docs/problems/${entry.slug}`])
      expect({ code, has: html.includes(text) ? text : html }).toEqual({ code, has: text });
  }
  const index = await (await get('/docs/problems')).text();
  for (const entry of Object.values(ERROR_CATALOGUE)) expect(index).toContain(`href="/docs/problems/${entry.slug}"`);
});

it('answers an unknown problem slug with a 404 problem, which itself links to a served page', async () => {
  const res = await get('/docs/problems/no-such-thing');
  expect(res.status).toBe(404);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await res.json()) as { type: string };
  expect(body).toMatchObject({ status: 404, code: 'not_found', type: '/docs/problems/not-found' });
  const target = await get(new URL(body.type, `${server.url}/docs/problems/no-such-thing`).pathname);
  expect(target.status).toBe(200);
  expect(await target.text()).toContain('<h1>Not Found');
});

it('gives every error body a type that resolves, against the request URL, to its page here', async () => {
  const res = await get('/boom');
  const body = (await res.json()) as { type: string };
  expect(body).toMatchObject({ status: 500, code: 'internal', type: '/docs/problems/internal' });
  const page = await get(new URL(body.type, res.url).pathname);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain('Internal Server Error');
});
