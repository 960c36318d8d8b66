import { INTERNAL_CONTEXT_HEADER, INTERNAL_SIGNATURE_HEADER, verifyCallerContext } from '@dap/contracts';
import { http, TEST_INTERNAL_SECRET, waitFor } from '@dap/testing';
import { startGateway } from '../src/index.ts';
import { quietLogger, startHarness } from './harness.ts';

let h: Awaited<ReturnType<typeof startHarness>>;
let upstream: Awaited<ReturnType<typeof startHarness>>['upstream'];
let accounts: Awaited<ReturnType<typeof startHarness>>['accounts'];
const gateways: Awaited<ReturnType<typeof startGateway>>[] = [];
const gatewayConfig = (o: Record<string, string> = {}) => h.gatewayConfig(o);
const newAccount = (plan: 'starter' | 'professional' = 'starter') => h.newAccount(plan);
const logger = quietLogger;

beforeAll(async () => {
  h = await startHarness();
  upstream = h.upstream;
  accounts = h.accounts;
  gateways.push(await h.gateway(), await h.gateway());
});
afterAll(() => h?.stop());

const auth = (secret: string) => ({ authorization: `Bearer ${secret}` });

describe('gateway authentication', () => {
  it('answers 401 with WWW-Authenticate and a problem body when the key is missing, and forwards nothing', async () => {
    const before = upstream.seen.length;
    const res = await http('GET', `${gateways[0]!.url}/v1/sources`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 401, code: 'unauthorized', title: 'Unauthorized', instance: '/v1/sources' });
    expect(res.body.requestId).toBe(res.headers.get('x-request-id'));
    expect(upstream.seen.length).toBe(before);
    // Positive control: the same request with a key reaches the service.
    const { secret } = await newAccount();
    expect((await http('GET', `${gateways[0]!.url}/v1/sources`, { headers: auth(secret) })).status).toBe(200);
    expect(upstream.seen.length).toBe(before + 1);
  });

  it.each([
    ['a malformed header', 'Basic abc'],
    ['a malformed key', 'Bearer not-a-key'],
    ['an unknown but well-formed key', 'Bearer dap_sk_000000000000000000000000000000000000'],
  ])('answers 401 for %s', async (_what, header) => {
    const res = await http('GET', `${gateways[0]!.url}/v1/sources`, { headers: { authorization: header } });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('proxies a valid key with a signed caller context and without the client credentials', async () => {
    const { accountId, secret, keyId } = await newAccount();
    const res = await http('GET', `${gateways[0]!.url}/v1/sources?limit=5`, {
      headers: { ...auth(secret), 'x-request-id': 'req-from-client-1', [INTERNAL_CONTEXT_HEADER]: 'forged' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('req-from-client-1');
    const forwarded = upstream.seen.at(-1)!;
    expect(forwarded.url).toBe('/v1/sources?limit=5');
    expect(forwarded.headers.authorization).toBeUndefined();
    const caller = verifyCallerContext(TEST_INTERNAL_SECRET, forwarded.headers[INTERNAL_CONTEXT_HEADER] as string, forwarded.headers[INTERNAL_SIGNATURE_HEADER] as string);
    expect(caller).toMatchObject({ accountId, keyId, plan: 'starter', requestId: 'req-from-client-1' });
    expect(JSON.stringify(forwarded.headers)).not.toContain(secret);
  });

  it('answers 403 when the key lacks the scope, 404 for unknown paths and 405 for a wrong method', async () => {
    const { accountId } = await newAccount();
    const { secret } = await accounts.accounts.createKey(accountId, { name: 'read-only', scopes: ['sources:read'] });
    expect((await http('GET', `${gateways[0]!.url}/v1/sources`, { headers: auth(secret) })).status).toBe(200);
    const forbidden = await http('POST', `${gateways[0]!.url}/v1/webhooks`, { headers: auth(secret), body: { url: 'https://example.com' } });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.detail).toContain('webhooks:write');
    const missing = await http('GET', `${gateways[0]!.url}/v1/nothing-here`, { headers: auth(secret) });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('not_found');
    const wrong = await http('PUT', `${gateways[0]!.url}/v1/sources`, { headers: auth(secret), body: {} });
    expect([wrong.status, wrong.headers.get('allow'), wrong.body.code]).toEqual([405, 'GET, HEAD, POST', 'method_not_allowed']);
    const one = await http('PUT', `${gateways[0]!.url}/v1/sources/src_01JCQ3N6W4X8Z5Y7A9B2C4D6E8`, { headers: auth(secret), body: {} });
    expect([one.status, one.headers.get('allow')]).toEqual([405, 'GET, HEAD, PATCH, DELETE']);
    // HEAD is GET without the body.
    const head = await fetch(`${gateways[0]!.url}/v1/sources`, { method: 'HEAD', headers: auth(secret) });
    expect([head.status, head.headers.get('content-type'), await head.text()]).toEqual([200, expect.stringMatching(/^application\/json/), '']);
    expect(head.headers.get('ratelimit-policy')).toBeTruthy();
  });

  it('refuses an expired key and a revoked key on every instance within 2 s', async () => {
    const { accountId, secret, keyId } = await newAccount();
    const expiring = await accounts.accounts.createKey(accountId, { name: 'short', expiresAt: new Date(h.clock.now() + 60_000) });
    for (const g of gateways) {
      expect((await http('GET', `${g.url}/v1/sources`, { headers: auth(secret) })).status).toBe(200);
      expect((await http('GET', `${g.url}/v1/sources`, { headers: auth(expiring.secret) })).status).toBe(200);
    }
    await accounts.accounts.revokeKey(accountId, keyId);
    const revokedAt = Date.now();
    for (const g of gateways) {
      // The wait outlasts the 2-s promise, so a slow revocation fails on the time measured below.
      await waitFor(async () => (await http('GET', `${g.url}/v1/sources`, { headers: auth(secret) })).status === 401, { timeoutMs: 10_000, intervalMs: 50, what: 'revocation' });
    }
    expect(Date.now() - revokedAt).toBeLessThan(2_000);
    // The positive control: still accepted until its expiry, which the shared clock then passes.
    expect((await http('GET', `${gateways[1]!.url}/v1/sources`, { headers: auth(expiring.secret) })).status).toBe(200);
    h.clock.advance(60_000);
    const expired = await http('GET', `${gateways[1]!.url}/v1/sources`, { headers: auth(expiring.secret) });
    expect(expired.status).toBe(401);
    expect(expired.body.detail).toMatch(/expired/);
  });
});

describe('gateway rate limit', () => {
  it('admits exactly the plan limit per account across two instances and keys, then 429 with Retry-After', async () => {
    const { accountId, secret } = await newAccount('starter');
    const second = await accounts.accounts.createKey(accountId, { name: 'second' });
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof http>> | undefined;
    for (let i = 0; i < 100; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: 10 }, (_, j) => http('GET', `${gateways[j % 2]!.url}/v1/models`, { headers: auth(j % 3 === 0 ? second.secret : secret) })),
      );
      statuses.push(...batch.map((r) => r.status));
      last = batch.at(-1);
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(100);
    expect(last!.headers.get('x-ratelimit-limit')).toBe('100');
    expect(last!.headers.get('ratelimit-policy')).toBe('"per-account";q=100;w=60');
    expect(last!.headers.get('ratelimit')).toMatch(/^"per-account";r=\d+;t=\d+$/);
    const over = await http('GET', `${gateways[1]!.url}/v1/models`, { headers: auth(secret) });
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(over.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(over.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(over.body).toMatchObject({ status: 429, code: 'quota_exceeded', type: expect.stringContaining('quota-exceeded') });
    const metrics = await http('GET', `${gateways[1]!.metricsUrl}/metrics`);
    expect(metrics.text).toMatch(/dap_rate_limit_decisions_total\{[^}]*outcome="rejected"[^}]*store="redis"[^}]*\} [1-9]/);
    expect(metrics.text).toMatch(/http_request_duration_seconds_count\{[^}]*route="\/v1\/models"[^}]*status_code="429"[^}]*\} [1-9]/);
    // Routes outside /v1 are labelled by their path, never by a raw unknown path.
    expect((await http('GET', `${gateways[1]!.url}/healthz`)).status).toBe(200);
    await http('GET', `${gateways[1]!.url}/no-such-page-${Date.now()}`);
    const after = (await http('GET', `${gateways[1]!.metricsUrl}/metrics`)).text;
    expect(after).toMatch(/http_request_duration_seconds_count\{[^}]*route="\/healthz"[^}]*status_code="200"[^}]*\} [1-9]/);
    expect(after).not.toMatch(/route="\/no-such-page/);
    // Another account is not affected.
    const other = await newAccount('starter');
    expect((await http('GET', `${gateways[0]!.url}/v1/models`, { headers: auth(other.secret) })).status).toBe(200);
  });

  it('serves /metrics on the metrics port only: the public port answers 404 for it, the metrics port nothing else', async () => {
    const g = gateways[0]!;
    const scraped = await http('GET', `${g.metricsUrl}/metrics`);
    expect([scraped.status, scraped.headers.get('content-type')]).toEqual([200, expect.stringMatching(/^text\/plain/)]);
    expect(scraped.text).toContain('http_request_duration_seconds');
    expect(new URL(g.metricsUrl!).port).not.toBe(new URL(g.url).port);
    const outside = await http('GET', `${g.url}/metrics`);
    expect([outside.status, outside.body?.code]).toEqual([404, 'not_found']);
    expect(outside.text).not.toContain('http_request_duration_seconds');
    for (const path of ['/healthz', '/v1/sources', '/v1/openapi.json']) expect((await fetch(`${g.metricsUrl}${path}`)).status).toBe(404);
  });

  it('fails open to the per-instance fallback limit when Redis is unreachable, never a 5xx', async () => {
    const g = await startGateway(gatewayConfig({ REDIS_URL: 'redis://127.0.0.1:1' }), { logger });
    try {
      const { secret } = await newAccount('starter');
      const statuses: number[] = [];
      for (let i = 0; i < 105; i++) statuses.push((await http('GET', `${g.url}/v1/models`, { headers: auth(secret) })).status);
      expect(statuses.filter((s) => s >= 500)).toHaveLength(0);
      expect(statuses.filter((s) => s === 200)).toHaveLength(100);
      expect(statuses.filter((s) => s === 429)).toHaveLength(5);
      expect(g.stats.limiterFallbacks).toBeGreaterThanOrEqual(105);
      expect((await http('GET', `${g.metricsUrl}/metrics`)).text).toMatch(/dap_rate_limit_fallback_total\{[^}]*\} (10[5-9]|1[1-9]\d|[2-9]\d\d)/);
    } finally {
      await g.stop();
    }
  });
});

describe('gateway documents', () => {
  it('serves the OpenAPI 3.1 document and a docs page without a key', async () => {
    const doc = await http('GET', `${gateways[0]!.url}/v1/openapi.json`);
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.1.0');
    for (const p of [
      '/sources',
      '/sources/{id}',
      '/analytics/overview',
      '/analytics/reports/{id}',
      '/analytics/query',
      '/models',
      '/models/{id}/predict',
      '/models/{id}/metrics',
      '/webhooks',
      '/webhooks/{id}',
    ]) {
      expect(doc.body.paths[p]).toBeDefined();
    }
    const page = await http('GET', `${gateways[0]!.url}/docs`);
    expect(page.status).toBe(200);
    // The reference page loads the renderer and the document from the gateway itself.
    expect(page.text).toContain('<script src="/docs/assets/scalar.js"></script>');
    expect(page.text).toContain('href="/v1/openapi.json"');
  });
});

describe('gateway request path', () => {
  it('hands an API request to the API before any route outside /v1 (the dashboard) sees it', async () => {
    const passed: string[] = [];
    const g = await startGateway(gatewayConfig(), {
      logger,
      extraRoutes: (app) =>
        app.use((req, _res, next) => {
          passed.push(req.path);
          next();
        }),
    });
    gateways.push(g);
    try {
      const { secret } = await newAccount();
      const api = await http('GET', `${g.url}/v1/sources`, { headers: auth(secret) });
      expect(api.status).toBe(200);
      expect(api.headers.get('cache-control')).toBe('no-store');
      // The positive control: a path outside /v1 does reach the extra routes (and then the 404).
      const other = await http('GET', `${g.url}/elsewhere`);
      expect(other.status).toBe(404);
      expect(passed).toEqual(['/elsewhere']);
    } finally {
      await g.stop();
      gateways.splice(gateways.indexOf(g), 1);
    }
  });
});
