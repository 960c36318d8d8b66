import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keyHint, newId } from '@dap/contracts';
import { http, serviceTestEnv, waitFor } from '@dap/testing';
import { loadAnalyticsConfig } from '../../services/analytics/src/config.ts';
import { startAnalytics } from '../../services/analytics/src/index.ts';
import { bearer, quietLogger, signUp, startHarness } from './harness.ts';

/**
 * Calls through a real gateway to the real analytics service, counted by the gateway's usage recorder and
 * flushed once by hand (the timer is an hour), then read back from GET /v1/analytics/usage.
 */
let h: Awaited<ReturnType<typeof startHarness>>;
let analytics: Awaited<ReturnType<typeof startAnalytics>>;
let g: Awaited<ReturnType<typeof h.gateway>>;
let dataDir: string;

beforeAll(async () => {
  h = await startHarness();
  dataDir = await mkdtemp(join(tmpdir(), 'gateway-usage-'));
  analytics = await startAnalytics(loadAnalyticsConfig(serviceTestEnv(`ana_${h.suffix}`, `t${h.suffix}.`, { DATASET_DIR: dataDir })), { logger: quietLogger });
  g = await h.gateway({ ANALYTICS_URL: analytics.url, USAGE_FLUSH_MS: '3600000', PLAN_LIMITS_OVERRIDE: 'starter=8' });
}, 60_000);

afterAll(async () => {
  await h?.stop();
  await analytics?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

const strip = <T extends { series: unknown }>({ series: _s, ...rest }: T) => rest;

it('counts per API key and per operation with 4xx and 429s exactly, the dashboard apart (and out of the per-day totals), and no other tenant’s calls', async () => {
  const { session } = await signUp(g.url, { email: `usage-${h.suffix}@example.com`, accountName: 'Usage Ltd' });
  const createKey = (name: string) => http('POST', `${g.url}/v1/keys`, { headers: session, body: { name } });
  const [k1, k2] = [await createKey('etl'), await createKey('reporting')];
  expect([k1.status, k2.status]).toEqual([201, 201]);
  const key1 = bearer(k1.body.secret as string);
  const key2 = bearer(k2.body.secret as string);
  const other = await h.newAccount();

  const get = async (path: string, headers: Record<string, string>) => (await http('GET', `${g.url}/v1${path}`, { headers })).status;
  // key1: three lists and one unknown report (404); key2: four overviews, then one over the plan's 8 per minute (429).
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) statuses.push(await get('/analytics/reports', key1));
  statuses.push(await get(`/analytics/reports/${newId('rpt')}`, key1));
  for (let i = 0; i < 5; i++) statuses.push(await get('/analytics/overview', key2));
  expect(statuses).toEqual([200, 200, 200, 404, 200, 200, 200, 200, 429]);
  // The dashboard (two key creations above, two overviews): its own bucket, its own group.
  expect([await get('/analytics/overview', session), await get('/analytics/overview', session)]).toEqual([200, 200]);
  // Another tenant, in the same flush.
  expect(await get('/analytics/reports', bearer(other.secret))).toBe(200);

  await g.usage.flush();
  const usage = (query: string, headers: Record<string, string> = session) => http('GET', `${g.url}/v1/analytics/usage?${query}`, { headers });
  const byKey = await waitFor(
    async () => {
      const r = await usage('window=1h&groupBy=key');
      return r.status === 200 && r.body.totals.requests === 13 ? r.body : null;
    },
    { what: 'the flushed usage counts' },
  );
  expect(byKey.totals).toEqual({ requests: 13, clientErrors: 1, serverErrors: 0, rateLimited: 1, errorRate: 1 / 13 });
  // Most requests first; a tie in group order.
  expect(byKey.groups.map(strip)).toEqual([
    {
      group: k2.body.id,
      caller: 'key',
      keyId: k2.body.id,
      keyHint: keyHint(k2.body.secret),
      operationId: null,
      requests: 5,
      clientErrors: 0,
      serverErrors: 0,
      rateLimited: 1,
      errorRate: 0,
    },
    { group: 'dashboard', caller: 'dashboard', keyId: null, keyHint: null, operationId: null, requests: 4, clientErrors: 0, serverErrors: 0, rateLimited: 0, errorRate: 0 },
    {
      group: k1.body.id,
      caller: 'key',
      keyId: k1.body.id,
      keyHint: keyHint(k1.body.secret),
      operationId: null,
      requests: 4,
      clientErrors: 1,
      serverErrors: 0,
      rateLimited: 0,
      errorRate: 0.25,
    },
  ]);
  expect(byKey.groups[0].keyHint).toBe(k2.body.hint); // as the key list shows it
  expect(byKey.series.reduce((n: number, p: { requests: number }) => n + p.requests, 0)).toBe(13);

  const byOperation = (await usage('window=24h&groupBy=operation')).body;
  expect(
    byOperation.groups.map((o: { group: string; requests: number; clientErrors: number; rateLimited: number }) => [o.group, o.requests, o.clientErrors, o.rateLimited]),
  ).toEqual([
    ['getOverview', 7, 0, 1],
    ['listReports', 3, 0, 0],
    ['createKey', 2, 0, 0],
    ['getReport', 1, 1, 0],
  ]);
  expect((await usage('window=30d&groupBy=key')).body.totals.requests).toBe(13);

  // The per-day chart counts the API keys' calls only: 9 of them, one refused with 429.
  const overview = await http('GET', `${g.url}/v1/analytics/overview`, { headers: session });
  expect(overview.body.apiRequestsPerDay.at(-1)).toMatchObject({ requests: 9, rejected: 1 });

  // No secret anywhere, and the other tenant sees its one call only.
  for (const body of [byKey, byOperation]) {
    expect(JSON.stringify(body)).not.toContain(k1.body.secret);
    expect(JSON.stringify(body)).not.toContain(k2.body.secret);
  }
  // Usually in the same flush as the others' calls; a loaded machine may split it, so wait for it too.
  const theirs = await waitFor(
    async () => {
      const r = await usage('window=1h&groupBy=key', bearer(other.secret));
      return r.status === 200 && r.body.totals.requests >= 1 ? r : null;
    },
    { what: "the other tenant's flushed call" },
  );
  expect(theirs.body.groups.map(strip)).toEqual([
    {
      group: other.keyId,
      caller: 'key',
      keyId: other.keyId,
      keyHint: keyHint(other.secret),
      operationId: null,
      requests: 1,
      clientErrors: 0,
      serverErrors: 0,
      rateLimited: 0,
      errorRate: 0,
    },
  ]);
  expect(JSON.stringify(theirs.body)).not.toContain(k1.body.id);
  expect(JSON.stringify(theirs.body)).not.toContain('dashboard');

  // A bad window is a 400 problem naming the field.
  const bad = await usage('window=7d');
  expect(bad.status).toBe(400);
  expect(bad.body.errors[0].path).toBe('window');
}, 60_000);
