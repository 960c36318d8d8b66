import { createServer, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '@dap/contracts';
import { DatasetStore } from '@dap/datasets';
import { listen, type RunningServer } from '@dap/http';
import { createLogger } from '@dap/logger';
import { connectMongo, type MongoHandle } from '@dap/mongo';
import { callerHeaders, http, stackEnv, TEST_INTERNAL_SECRET, uniqueSuffix, waitFor } from '@dap/testing';
import { createApp } from '../src/app.ts';
import { SourceService } from '../src/domain/source.service.ts';
import { SourceRepository } from '../src/persistence/source.repository.ts';
import type { SourceSyncer } from '../src/workers/sync/source-syncer.ts';
import { testSecurity, testSyncer, TEST_LIMITS } from './syncer.ts';

/**
 * The schedule over HTTP: set at creation or with PATCH, removed with null, and every bad one a 400 naming the
 * field. The service's app, domain and syncs on MongoDB and the dataset store; no event relay (events stay in
 * the documents' outboxes), so these tests do not need Kafka.
 */
let files: Server;
/** What a path serves instead of the default CSV. */
const served = new Map<string, string>();
let filesUrl = '';
let mongo: MongoHandle;
let store: DatasetStore;
let datasetDir: string;
let syncer: SourceSyncer;
let server: RunningServer;
const logger = createLogger({ name: 'sources', level: 'silent' });

beforeAll(async () => {
  files = createServer((req, res) => res.writeHead(200, { 'content-type': 'text/csv' }).end(served.get(req.url ?? '') ?? 'id,amount\n1,2.5\n'));
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', () => r()));
  filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  mongo = await connectMongo(stackEnv().MONGO_URL, `src_schedapi_${uniqueSuffix()}`);
  const repo = new SourceRepository(mongo.db, () => undefined);
  await repo.ensureIndexes();
  datasetDir = await mkdtemp(join(tmpdir(), 'dap-schedapi-'));
  store = await DatasetStore.open(datasetDir);
  const { cipher, guard } = testSecurity();
  syncer = testSyncer({ repo, store, logger, cipher, guard, retry: { backoff: { baseMs: 60_000, capMs: 600_000 }, maxRetries: 3 } });
  const service = new SourceService({ repo, store, syncer, logger, cipher, guard, limits: TEST_LIMITS, shutdown: new AbortController().signal });
  const app = createApp({
    logger,
    bodyLimitBytes: 1024 ** 2,
    internalSecret: TEST_INTERNAL_SECRET,
    service,
    uploads: { maxBytes: 1024 ** 2, idleTimeoutMs: 5_000 },
    ready: async () => undefined,
  });
  server = await listen(app, '127.0.0.1', 0);
});

afterAll(async () => {
  await server?.close();
  await syncer?.stop();
  store?.duck.close();
  await mongo?.db.dropDatabase().catch(() => undefined);
  await mongo?.close();
  await rm(datasetDir, { recursive: true, force: true });
  files.closeAllConnections();
  await new Promise((r) => files.close(r));
});

const defaultAccount = newId('acct');
const api = (method: string, path: string, opts: { body?: unknown; account?: string } = {}) =>
  http(method, `${server.url}${path}`, { body: opts.body, headers: callerHeaders(opts.account ?? defaultAccount) });
const settled = (id: string) =>
  waitFor(
    async () => {
      const r = await api('GET', `/v1/sources/${id}`);
      return r.body?.status === 'ready' || r.body?.status === 'failed' ? r.body : null;
    },
    { timeoutMs: 15_000, intervalMs: 50, what: `source ${id} to settle` },
  );

const urlSource = (schedule?: unknown) => ({ type: 'url', name: 'export', url: `${filesUrl}/export.csv`, ...(schedule !== undefined ? { schedule } : {}) });

it('creates a URL source with an interval schedule: nextSyncAt is one interval on', async () => {
  const before = Date.now();
  const res = await api('POST', '/v1/sources', { body: urlSource({ every: '15m' }) });
  expect(res.status).toBe(201);
  expect(res.body.schedule).toEqual({ every: '15m' });
  const next = Date.parse(res.body.nextSyncAt as string);
  expect(next).toBeGreaterThanOrEqual(before + 15 * 60_000);
  expect(next).toBeLessThanOrEqual(Date.now() + 15 * 60_000);
  // The first sync runs at once, as for every source; the schedule stays.
  expect(await settled(res.body.id as string)).toMatchObject({ status: 'ready', schedule: { every: '15m' }, nextSyncAt: res.body.nextSyncAt });
});

it('PATCH sets a cron schedule in a time zone, and null removes it', async () => {
  const account = newId('acct');
  const created = await api('POST', '/v1/sources', { account, body: urlSource() });
  expect(created.body).toMatchObject({ schedule: null, nextSyncAt: null });
  const id = created.body.id as string;

  const set = await api('PATCH', `/v1/sources/${id}`, { account, body: { schedule: { cron: '30 6 * * *', timezone: 'Asia/Kolkata' } } });
  expect(set.status).toBe(200);
  expect(set.body.schedule).toEqual({ cron: '30 6 * * *', timezone: 'Asia/Kolkata' });
  // 06:30 in Kolkata (UTC+05:30, no daylight saving) is 01:00 UTC, within the next day.
  const next = new Date(set.body.nextSyncAt as string);
  expect([next.getUTCHours(), next.getUTCMinutes(), next.getUTCSeconds()]).toEqual([1, 0, 0]);
  expect(next.getTime() - Date.now()).toBeGreaterThan(0);
  expect(next.getTime() - Date.now()).toBeLessThanOrEqual(24 * 3_600_000);
  expect((await api('GET', `/v1/sources/${id}`, { account })).body).toMatchObject({ schedule: set.body.schedule, nextSyncAt: set.body.nextSyncAt });

  const removed = await api('PATCH', `/v1/sources/${id}`, { account, body: { schedule: null } });
  expect(removed.status).toBe(200);
  expect(removed.body).toMatchObject({ id, schedule: null, nextSyncAt: null });

  // Another account's id is unknown, exactly like a made-up one.
  expect((await api('PATCH', `/v1/sources/${id}`, { body: { schedule: { every: '1h' } } })).status).toBe(404);
  expect((await api('PATCH', `/v1/sources/src_nope`, { account, body: { schedule: { every: '1h' } } })).status).toBe(404);
});

it('refuses a bad schedule with a 400 problem naming the field', async () => {
  const account = newId('acct');
  const inline = await api('POST', '/v1/sources', { account, body: { type: 'inline', name: 'rows', rows: [{ a: 1 }] } });
  const url = await api('POST', '/v1/sources', { account, body: urlSource() });
  const cases: [string, string, unknown, string][] = [
    ['POST', '/v1/sources', urlSource({ every: '30s' }), 'schedule.every'],
    ['POST', '/v1/sources', urlSource({ every: '15 minutes' }), 'schedule.every'],
    ['POST', '/v1/sources', urlSource({ cron: '61 * * * *' }), 'schedule.cron'],
    ['POST', '/v1/sources', urlSource({ cron: '* * * * * *' }), 'schedule.cron'],
    ['POST', '/v1/sources', urlSource({ cron: '0 0 31 2 *' }), 'schedule.cron'],
    ['POST', '/v1/sources', urlSource({ cron: '0 * * * *', timezone: 'Mars/Olympus' }), 'schedule.timezone'],
    ['POST', '/v1/sources', urlSource({ every: '1h', cron: '0 * * * *' }), 'schedule.cron'],
    ['POST', '/v1/sources', { type: 'csv', name: 'c', csv: 'a\n1\n', schedule: { every: '1h' } }, 'schedule'],
    ['PATCH', `/v1/sources/${url.body.id}`, { schedule: { every: '0m' } }, 'schedule.every'],
    ['PATCH', `/v1/sources/${url.body.id}`, { schedule: { cron: 'every day' } }, 'schedule.cron'],
    ['PATCH', `/v1/sources/${url.body.id}`, {}, '(root)'],
    ['PATCH', `/v1/sources/${url.body.id}`, { schemaPolicy: 'quarantine-all' }, 'schemaPolicy'],
    ['PATCH', `/v1/sources/${inline.body.id}`, { schedule: { every: '1h' } }, 'schedule'],
  ];
  for (const [method, path, body, field] of cases) {
    const res = await api(method, path, { account, body });
    expect({ body, status: res.status, type: res.headers.get('content-type'), code: res.body.code }).toEqual({
      body,
      status: 400,
      type: expect.stringContaining('application/problem+json'),
      code: 'validation_failed',
    });
    expect({ body, paths: (res.body.errors as { path: string }[]).map((e) => e.path) }).toEqual({ body, paths: [field] });
  }
  // Nothing was stored: the account still has its two sources, without a schedule.
  const list = await api('GET', '/v1/sources', { account });
  expect(list.body.data.map((s: { schedule: unknown }) => s.schedule)).toEqual([null, null]);
});

it('GET /quarantine downloads the rows a quarantining sync set aside, as CSV', async () => {
  const account = newId('acct');
  const created = await api('POST', '/v1/sources', { account, body: { ...urlSource(), url: `${filesUrl}/q.csv`, schemaPolicy: 'quarantine' } });
  expect(created.body).toMatchObject({ schemaPolicy: 'quarantine', quarantine: null });
  const id = created.body.id as string;
  await waitFor(async () => (await api('GET', `/v1/sources/${id}`, { account })).body.status === 'ready' || null, { timeoutMs: 15_000, intervalMs: 50, what: 'the first sync' });
  const none = await api('GET', `/v1/sources/${id}/quarantine`, { account });
  expect([none.status, none.body.code]).toEqual([404, 'source_quarantine_not_found']);

  served.set('/q.csv', 'id,amount\n1,2.5\n2,lots\n3,4\n');
  expect((await api('POST', `/v1/sources/${id}/sync`, { account })).status).toBe(202);
  const synced = await waitFor(
    async () => {
      const r = await api('GET', `/v1/sources/${id}`, { account });
      return r.body.status === 'ready' && r.body.quarantine ? r.body : null;
    },
    { timeoutMs: 15_000, intervalMs: 50, what: 'the quarantining sync' },
  );
  expect(synced).toMatchObject({ rowCount: 2, quarantine: { rowCount: 1 } });
  const csv = await api('GET', `/v1/sources/${id}/quarantine`, { account });
  expect([csv.status, csv.headers.get('content-type'), csv.text]).toEqual([200, 'text/csv; charset=utf-8', 'id,amount\n2,lots\n']);
  // Another account's source is unknown.
  expect((await api('GET', `/v1/sources/${id}/quarantine`)).status).toBe(404);
});
