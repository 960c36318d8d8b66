import { MongoClient, type Db } from 'mongodb';
import { newId, type UsageCalls } from '@dap/contracts';
import { stackEnv, uniqueSuffix } from '@dap/testing';
import { UsageStatsService } from '../src/domain/usage-stats.service.ts';
import { USAGE_RESOLUTIONS, UsageStatsRepository } from '../src/persistence/usage-stats.repository.ts';

/** The per-minute and per-hour usage buckets on the test stack's MongoDB, read through the service as the route does. */
const suffix = uniqueSuffix();
let client: MongoClient;
let db: Db;
let repo: UsageStatsRepository;

const NOW = new Date('2026-11-20T10:30:20.000Z');
const accountA = newId('acct');
const accountB = newId('acct');

const keyCalls = (keyId: string, operationId: string, c: Partial<UsageCalls> = {}): UsageCalls => ({
  caller: 'key',
  keyId,
  keyHint: `dap_sk_…${keyId.slice(-4)}`,
  operationId,
  success: 0,
  clientErrors: 0,
  serverErrors: 0,
  rateLimited: 0,
  ...c,
});

beforeAll(async () => {
  client = await MongoClient.connect(stackEnv().MONGO_URL);
  db = client.db(`usage_stats_${suffix}`);
  repo = new UsageStatsRepository(db);
  await repo.ensureIndexes();
});

afterAll(async () => {
  await db.dropDatabase().catch(() => undefined);
  await client.close();
});

describe('usage stats buckets', () => {
  it('keeps minute buckets 2 days and hour buckets 35 days under TTL indexes', async () => {
    for (const r of ['minute', 'hour'] as const) {
      const indexes = await repo.raw(r).indexes();
      expect(indexes.find((i) => i.key.at === 1 && i.expireAfterSeconds !== undefined)?.expireAfterSeconds).toBe(USAGE_RESOLUTIONS[r].retentionSeconds);
    }
    expect([USAGE_RESOLUTIONS.minute.retentionSeconds, USAGE_RESOLUTIONS.hour.retentionSeconds]).toEqual([2 * 86_400, 35 * 86_400]);
  });

  it('answers exact counts per key and per operation over 1 h, 24 h and 30 d; a redelivered event counts once; another account sees none of it', async () => {
    const key1 = newId('key');
    const key2 = newId('key');
    const e1 = newId('evt');
    // Two minutes ago: key1 listed reports 5 times (one 404), key2 ran the overview (one 500, one 429); the dashboard read the overview twice.
    const at1 = new Date(NOW.getTime() - 2 * 60_000);
    await repo.add(
      accountA,
      e1,
      at1,
      [
        keyCalls(key1, 'listReports', { success: 4, clientErrors: 1 }),
        keyCalls(key2, 'getOverview', { success: 2, serverErrors: 1, rateLimited: 1 }),
        { caller: 'dashboard', operationId: 'getOverview', success: 2, clientErrors: 0, serverErrors: 0, rateLimited: 0 },
      ],
      NOW,
    );
    await repo.add(accountA, e1, at1, [keyCalls(key1, 'listReports', { success: 4, clientErrors: 1 })], NOW); // redelivery
    // Three hours ago (outside 1 h, inside 24 h): key1 once more; 5 days ago (only in 30 d): key2 10 times.
    await repo.add(accountA, newId('evt'), new Date(NOW.getTime() - 3 * 3_600_000), [keyCalls(key1, 'getReport', { success: 1 })], NOW);
    await repo.add(accountA, newId('evt'), new Date(NOW.getTime() - 5 * 86_400_000), [keyCalls(key2, 'getOverview', { success: 10 })], NOW);
    // 40 days ago: past every retention, stored nowhere.
    await repo.add(accountA, newId('evt'), new Date(NOW.getTime() - 40 * 86_400_000), [keyCalls(key2, 'getOverview', { success: 99 })], NOW);
    // Another account's calls in the same minute.
    await repo.add(accountB, newId('evt'), at1, [keyCalls(newId('key'), 'listReports', { success: 7 })], NOW);

    const svc = new UsageStatsService(repo, () => NOW);
    const byKey1h = await svc.stats(accountA, { window: '1h', groupBy: 'key' });
    expect(byKey1h).toMatchObject({ window: '1h', groupBy: 'key', bucketSeconds: 60, from: '2026-11-20T09:31:00.000Z', to: NOW.toISOString() });
    expect(byKey1h.totals).toEqual({ requests: 11, clientErrors: 1, serverErrors: 1, rateLimited: 1, errorRate: 2 / 11 });
    expect(byKey1h.series).toHaveLength(60);
    expect(byKey1h.series[57]).toEqual({ start: '2026-11-20T10:28:00.000Z', requests: 11, clientErrors: 1, serverErrors: 1, rateLimited: 1 });
    expect(byKey1h.series.reduce((n, p) => n + p.requests, 0)).toBe(11);
    expect(byKey1h.groups.map(({ series: _s, ...g }) => g)).toEqual([
      {
        group: key1,
        caller: 'key',
        keyId: key1,
        keyHint: `dap_sk_…${key1.slice(-4)}`,
        operationId: null,
        requests: 5,
        clientErrors: 1,
        serverErrors: 0,
        rateLimited: 0,
        errorRate: 0.2,
      },
      {
        group: key2,
        caller: 'key',
        keyId: key2,
        keyHint: `dap_sk_…${key2.slice(-4)}`,
        operationId: null,
        requests: 4,
        clientErrors: 0,
        serverErrors: 1,
        rateLimited: 1,
        errorRate: 0.25,
      },
      { group: 'dashboard', caller: 'dashboard', keyId: null, keyHint: null, operationId: null, requests: 2, clientErrors: 0, serverErrors: 0, rateLimited: 0, errorRate: 0 },
    ]);

    const byOp24h = await svc.stats(accountA, { window: '24h', groupBy: 'operation' });
    expect(byOp24h).toMatchObject({ bucketSeconds: 3600, from: '2026-11-19T11:00:00.000Z' });
    expect(byOp24h.series).toHaveLength(24);
    expect(byOp24h.groups.map((g) => [g.group, g.operationId, g.caller, g.requests, g.clientErrors, g.serverErrors, g.rateLimited])).toEqual([
      ['getOverview', 'getOverview', null, 6, 0, 1, 1],
      ['listReports', 'listReports', null, 5, 1, 0, 0],
      ['getReport', 'getReport', null, 1, 0, 0, 0],
    ]);
    expect(byOp24h.series[23]!.requests).toBe(11);
    expect(byOp24h.series[20]).toEqual({ start: '2026-11-20T07:00:00.000Z', requests: 1, clientErrors: 0, serverErrors: 0, rateLimited: 0 });

    const byKey30d = await svc.stats(accountA, { window: '30d', groupBy: 'key' });
    expect(byKey30d).toMatchObject({ bucketSeconds: 86_400, from: '2026-10-22T00:00:00.000Z' });
    expect(byKey30d.series).toHaveLength(30);
    expect(byKey30d.series[24]).toEqual({ start: '2026-11-15T00:00:00.000Z', requests: 10, clientErrors: 0, serverErrors: 0, rateLimited: 0 });
    expect(byKey30d.series[29]!.requests).toBe(12);
    expect(byKey30d.groups.map((g) => [g.group, g.requests])).toEqual([
      [key2, 14],
      [key1, 6],
      ['dashboard', 2],
    ]);

    // The other account sees its own calls only, and nothing of A's keys.
    const other = await svc.stats(accountB, { window: '1h', groupBy: 'key' });
    expect(other.totals.requests).toBe(7);
    expect(JSON.stringify(other)).not.toContain(key1);
    expect(JSON.stringify(other)).not.toContain(key2);
    expect(JSON.stringify(other)).not.toContain('dashboard');
  });
});
