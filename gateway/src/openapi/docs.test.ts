import { readFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { DomainError, ERROR_CODES, type ErrorCode } from '@dap/errors';
import { PROBLEM_TYPES, PROBLEM_TYPE_BASE, createHttpApp, finishApp, listen, problemOf, type RunningServer } from '@dap/http';
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

it('answers every problem type with a page: title, status, what it means, what to do, its codes', async () => {
  for (const [name, entry] of Object.entries(PROBLEM_TYPES)) {
    const res = await get(`/docs/problems/${entry.slug}`);
    expect({ name, status: res.status, type: res.headers.get('content-type') }).toEqual({ name, status: 200, type: expect.stringMatching(/^text\/html/) });
    const html = await res.text();
    const guide = PROBLEM_GUIDE[name as keyof typeof PROBLEM_GUIDE];
    expect(guide.meaning.length).toBeGreaterThan(40);
    for (const text of [`<h1>${entry.title}`, `<code>${entry.slug}</code>`, `<dd>${entry.status}</dd>`, 'What it means', 'What to do', `/docs/problems/${entry.slug}`])
      expect({ name, has: html.includes(text) ? text : html }).toEqual({ name, has: text });
  }
  const index = await (await get('/docs/problems')).text();
  for (const entry of Object.values(PROBLEM_TYPES)) expect(index).toContain(`href="/docs/problems/${entry.slug}"`);
});

it('serves a page for the type of every code a response can carry, and the page lists that code', async () => {
  for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
    const { type } = problemOf(new DomainError(code, 'x'), '/v1/x', 'req_1');
    expect(type.startsWith(PROBLEM_TYPE_BASE)).toBe(true);
    const res = await get(type);
    expect({ code, status: res.status }).toEqual({ code, status: 200 });
    expect({ code, listed: (await res.text()).includes(`<li id="${code}"><code>${code}</code>`) }).toEqual({ code, listed: true });
  }
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
