import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { newId, type CallerContext, type CreateSourceBody, type DomainEvent } from '@dap/contracts';
import { DatasetStore, sqlLiteral } from '@dap/datasets';
import { createLogger } from '@dap/logger';
import { connectMongo, type MongoHandle } from '@dap/mongo';
import { columns, stackEnv, uniqueSuffix, waitFor } from '@dap/testing';
import { SourceService } from '../src/domain/source.service.ts';
import { toSourceDto } from '../src/http/dto.ts';
import { SourceRepository } from '../src/persistence/source.repository.ts';
import type { SourceSyncer } from '../src/workers/sync/source-syncer.ts';
import { testSecurity, testSyncer, TEST_LIMITS } from './syncer.ts';

/**
 * Scheduled syncs on the real sync path (MongoDB, the dataset store, a URL source on a local file server),
 * with the clock moved by hand: a sweep starts a run only when the clock says it is due. No relay runs, so
 * the events each write raised stay in the document's outbox, where they are counted.
 */
const MIN = 60_000;
const T0 = new Date('2030-01-07T10:00:00.000Z');
const CSV = 'id,amount\n1,2.5\n2,3.5\n';
const RETRY = { backoff: { baseMs: MIN, capMs: 10 * MIN, jitter: [0.8, 1.2] as const }, maxRetries: 3 };

let now = T0;
const clock = () => now;
const at = (ms: number) => new Date(T0.getTime() + ms);

let files: Server;
let filesUrl = '';
/** Whether the file server answers, and how many downloads each path had (the create-time check included). */
let failing = false;
const hits = new Map<string, number>();
/** Downloads of these paths wait here until the test answers them (a sync held mid-run). */
const holdPaths = new Set<string>();
const held: ServerResponse[] = [];
/** What each path serves, when not CSV. */
const content = new Map<string, string>();
const answer = (res: ServerResponse, body = CSV) => void res.writeHead(200, { 'content-type': 'text/csv' }).end(body);
function serve(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '').split('?')[0]!;
  hits.set(path, (hits.get(path) ?? 0) + 1);
  if (failing) return void res.writeHead(503, { 'content-type': 'text/plain' }).end('down');
  if (holdPaths.has(path)) return void held.push(res);
  answer(res, content.get(path));
}

let mongo: MongoHandle;
let repo: SourceRepository;
let store: DatasetStore;
let datasetDir: string;
let service: SourceService;
const syncers: SourceSyncer[] = [];
const logger = createLogger({ name: 'sources', level: 'silent' });
const { cipher, guard } = testSecurity();

function syncer(name: string): SourceSyncer {
  // A jitter factor of exactly 1.
  const s = testSyncer({ repo, store, logger, cipher, guard, retry: RETRY }, { instanceId: `${name}-${uniqueSuffix()}`, clock, random: () => 0.5 });
  syncers.push(s);
  return s;
}

beforeAll(async () => {
  files = createServer(serve);
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', () => r()));
  filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  mongo = await connectMongo(stackEnv().MONGO_URL, `src_sched_${uniqueSuffix()}`);
  repo = new SourceRepository(mongo.db, () => undefined);
  await repo.ensureIndexes();
  datasetDir = await mkdtemp(join(tmpdir(), 'dap-sched-'));
  store = await DatasetStore.open(datasetDir);
  // Sources are created without a first sync: each test runs (or sweeps) exactly the syncs it counts.
  service = new SourceService({ repo, store, syncer: { schedule: () => undefined }, logger, cipher, guard, limits: TEST_LIMITS, shutdown: new AbortController().signal, clock });
});

afterAll(async () => {
  for (const s of syncers) await s.stop();
  store?.duck.close();
  await mongo?.db.dropDatabase().catch(() => undefined);
  await mongo?.close();
  await rm(datasetDir, { recursive: true, force: true });
  for (const res of held.splice(0)) answer(res);
  files.closeAllConnections();
  await new Promise((r) => files.close(r));
});

beforeEach(() => {
  now = T0;
  failing = false;
});

const caller = (accountId: string): CallerContext => ({ accountId, plan: 'starter', scopes: [], requestId: newId('req'), issuedAt: Date.now() });

async function createScheduled(accountId: string, schedule: unknown): Promise<{ id: string; path: string }> {
  const path = `/${uniqueSuffix()}.csv`;
  const doc = await service.create(caller(accountId), { type: 'url', name: 'scheduled', url: `${filesUrl}${path}`, schedule } as CreateSourceBody);
  return { id: doc._id, path };
}

const downloads = (path: string) => (hits.get(path) ?? 1) - 1; // less the create-time check

async function outbox(accountId: string, id: string): Promise<DomainEvent[]> {
  const raw = await repo.coll.raw.findOne({ accountId, _id: id as never });
  return (raw?._outbox ?? []) as DomainEvent[];
}
const countOf = (events: DomainEvent[], type: string) => events.filter((e) => e.type === type).length;

/** Waits for the run a sweep started to finish at the current clock time (the queue runs it in the background). */
async function ranAt(accountId: string, id: string, when: Date) {
  return waitFor(
    async () => {
      const doc = await repo.findById(accountId, id);
      return doc && (doc.status === 'ready' || doc.status === 'failed') && doc.lastSync && doc.lastSync.at.getTime() === when.getTime() ? doc : null;
    },
    { timeoutMs: 15_000, intervalMs: 20, what: `the run at ${when.toISOString()}` },
  );
}

/** A new account's source on `schedule`, not synced yet, and a syncer of its own to sweep it. */
async function scheduledSource(syncerName: string, schedule: unknown) {
  const account = newId('acct');
  const s = syncer(syncerName);
  return { account, s, ...(await createScheduled(account, schedule)) };
}

/**
 * Moves the clock to `when` and sweeps a source that is not due: it keeps its status (the sweep would have
 * set a due one pending before returning) and has still been downloaded `downloaded` times.
 */
async function sweepNotDue(s: SourceSyncer, accountId: string, id: string, path: string, when: Date, downloaded: number) {
  const before = (await repo.findById(accountId, id))!.status;
  now = when;
  await s.sweep();
  expect((await repo.findById(accountId, id))!.status).toBe(before);
  expect(downloads(path)).toBe(downloaded);
}

/** Moves the clock to `when`, sweeps, and waits for the run that sweep started. */
async function sweepAndRun(s: SourceSyncer, accountId: string, id: string, when: Date) {
  now = when;
  await s.sweep();
  return ranAt(accountId, id, when);
}

it('runs a source when its interval comes round, not before, and shows the next run as nextSyncAt', async () => {
  const { account, s, id, path } = await scheduledSource('a', { every: '15m' });
  expect(toSourceDto((await repo.findById(account, id))!)).toMatchObject({ schedule: { every: '15m' }, nextSyncAt: at(15 * MIN).toISOString() });
  await s.syncOne(account, id); // the first sync, as at creation
  expect(downloads(path)).toBe(1);

  expect((await repo.findById(account, id))!.status).toBe('ready');
  await sweepNotDue(s, account, id, path, at(15 * MIN - 1), 1);

  const done = await sweepAndRun(s, account, id, at(15 * MIN));
  expect(downloads(path)).toBe(2);
  expect(toSourceDto(done)).toMatchObject({ status: 'ready', rowCount: 2, nextSyncAt: at(30 * MIN).toISOString(), lastSync: { status: 'succeeded', at: now.toISOString() } });

  // Overdue by hours (the service was down): one run, and the next counts from it.
  expect(toSourceDto(await sweepAndRun(s, account, id, at(5 * 60 * MIN))).nextSyncAt).toBe(at(5 * 60 * MIN + 15 * MIN).toISOString());
  expect(downloads(path)).toBe(3);
});

it('runs a scheduled incremental database source incrementally: only the rows past the cursor are pulled', async () => {
  const account = newId('acct');
  const s = syncer('incremental');
  const table = `sched_inc_${uniqueSuffix()}`;
  const db = new pg.Client(stackEnv().POSTGRES_URL);
  await db.connect();
  try {
    await db.query(`CREATE TABLE ${table} (id bigint PRIMARY KEY, amount int, updated_at timestamptz)`);
    await db.query(`INSERT INTO ${table} VALUES (1, 10, '2030-01-01T00:00:00Z'), (2, 20, '2030-01-02T00:00:00Z')`);
    const body = {
      type: 'postgres',
      name: 'scheduled db',
      connection: { url: stackEnv().POSTGRES_URL },
      table,
      schedule: { every: '15m' },
      incremental: { cursorField: 'updated_at', primaryKey: ['id'] },
    };
    const { _id: id } = await service.create(caller(account), body as CreateSourceBody);
    await s.syncOne(account, id); // the first sync, as at creation: full
    expect(toSourceDto((await repo.findById(account, id))!).lastSync).toMatchObject({ mode: 'full', rowsPulled: 2 });

    await db.query(`INSERT INTO ${table} VALUES (3, 30, '2030-01-03T00:00:00Z')`);
    const done = toSourceDto(await sweepAndRun(s, account, id, at(15 * MIN)));
    // The row at the cursor value and the new one: not the first.
    expect(done).toMatchObject({ rowCount: 3, lastSync: { mode: 'incremental', rowsPulled: 2, rowsMerged: 2 }, incremental: { cursor: '2030-01-03 00:00:00+00' } });
  } finally {
    await db.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
    await db.end();
  }
});

it('runs a cron schedule at the times it names in its time zone', async () => {
  // 06:00 in Berlin is 05:00 UTC in January.
  const { account, s, id, path } = await scheduledSource('cron', { cron: '0 6 * * *', timezone: 'Europe/Berlin' });
  expect(toSourceDto((await repo.findById(account, id))!).nextSyncAt).toBe('2030-01-08T05:00:00.000Z');
  expect(toSourceDto(await sweepAndRun(s, account, id, new Date('2030-01-08T05:00:00.000Z'))).nextSyncAt).toBe('2030-01-09T05:00:00.000Z');
  expect(downloads(path)).toBe(1);
});

it('starts a due run once when two instances sweep at the same time', async () => {
  const account = newId('acct');
  const [a, b] = [syncer('a'), syncer('b')];
  const { id, path } = await createScheduled(account, { every: '1m' });
  for (let i = 1; i <= 5; i++) {
    now = at(i * MIN);
    // What each sweep returns (how many sources it queued) depends on timing: another account's source may be
    // waiting too, and a run another sweep queued may already hold this one. So the test counts runs.
    await Promise.all([a.sweep(), b.sweep(), a.sweep(), b.sweep()]);
    await ranAt(account, id, now);
    // Four sweeps on two instances, yet the download count moved by exactly one: one run per due time.
    expect(downloads(path)).toBe(i);
  }
  expect(countOf(await outbox(account, id), 'source.ready')).toBe(5);

  // An instance whose sweep read the due run before another started and finished it does not start it again.
  now = at(6 * MIN);
  const stale = (await repo.findDueAcrossAccounts(now, 500)).find((d) => d._id === id)!;
  expect(stale).toBeDefined();
  await a.sweep();
  await ranAt(account, id, now);
  const seen = { scheduleRev: stale.scheduleRev ?? null, nextRunAt: stale.nextRunAt ?? null, retryAt: stale.retryAt ?? null };
  expect(await repo.startScheduled(account, id, seen, { nextRunAt: at(7 * MIN), retryAt: null }, now)).toBeNull();
  expect((await repo.findById(account, id))!.status).toBe('ready');
  expect(downloads(path)).toBe(6);
});

it('retries a failed scheduled run with growing backoff before the next regular run, and raises source.failed once per failure streak', async () => {
  const { account, s, id, path } = await scheduledSource('retry', { every: '1h' });
  failing = true;
  const sweepAt = (ms: number) => sweepAndRun(s, account, id, at(ms));

  // The regular run fails: retries follow after 1, 2 and 4 minutes (the backoff of @dap/retry), then none.
  let doc = await sweepAt(60 * MIN);
  expect(toSourceDto(doc)).toMatchObject({ status: 'failed', nextSyncAt: at(61 * MIN).toISOString() });
  await sweepNotDue(s, account, id, path, at(61 * MIN - 1), 1); // the retry is not due yet
  doc = await sweepAt(61 * MIN);
  expect(toSourceDto(doc).nextSyncAt).toBe(at(63 * MIN).toISOString());
  doc = await sweepAt(63 * MIN);
  expect(toSourceDto(doc).nextSyncAt).toBe(at(67 * MIN).toISOString());
  doc = await sweepAt(67 * MIN);
  // Retries used up: the next try is the next regular run.
  expect(toSourceDto(doc).nextSyncAt).toBe(at(120 * MIN).toISOString());
  await sweepNotDue(s, account, id, path, at(119 * MIN), 4);
  doc = await sweepAt(120 * MIN);
  expect(downloads(path)).toBe(5);
  expect(doc.failStreak).toBe(5);

  // Five failures in one streak: one source.failed.
  expect(countOf(await outbox(account, id), 'source.failed')).toBe(1);

  // A success ends the streak (source.ready as always); the next failure starts a new one and is announced.
  failing = false;
  doc = await sweepAt(121 * MIN); // the first retry of the 120-minute run
  expect(toSourceDto(doc)).toMatchObject({ status: 'ready', nextSyncAt: at(180 * MIN).toISOString() });
  failing = true;
  await sweepAt(180 * MIN);
  await sweepAt(181 * MIN);
  const events = await outbox(account, id);
  expect([countOf(events, 'source.ready'), countOf(events, 'source.failed')]).toEqual([1, 2]);
  expect(events.map((e) => e.type)).toEqual(['source.created', 'source.failed', 'source.ready', 'source.failed']);
});

it('a source without a schedule still raises source.failed on every failed sync', async () => {
  const account = newId('acct');
  const s = syncer('plain');
  const path = `/${uniqueSuffix()}.csv`;
  const created = await service.create(caller(account), { type: 'url', name: 'plain', url: `${filesUrl}${path}` } as CreateSourceBody);
  failing = true;
  await s.syncOne(account, created._id);
  await repo.requestSync(account, created._id, newId('req'), now);
  await s.syncOne(account, created._id);
  expect(countOf(await outbox(account, created._id), 'source.failed')).toBe(2);
  expect(toSourceDto((await repo.findById(account, created._id))!)).toMatchObject({ schedule: null, nextSyncAt: null });
});

it('PATCH sets a new schedule from now and null removes it: no more runs', async () => {
  const { account, s, id, path } = await scheduledSource('patch', { every: '10m' });
  await sweepAndRun(s, account, id, at(10 * MIN));
  expect(downloads(path)).toBe(1); // positive control: the schedule runs

  now = at(12 * MIN);
  const changed = await service.update(caller(account), id, { schedule: { every: '1h' } });
  expect(toSourceDto(changed)).toMatchObject({ schedule: { every: '1h' }, nextSyncAt: at(72 * MIN).toISOString() });
  await sweepNotDue(s, account, id, path, at(20 * MIN), 1); // the old schedule's next run

  const removed = await service.update(caller(account), id, { schedule: null });
  expect(toSourceDto(removed)).toMatchObject({ schedule: null, nextSyncAt: null });
  expect((await repo.findById(account, id))!.status).toBe('ready');
  await sweepNotDue(s, account, id, path, at(24 * 60 * MIN), 1);
});

it('a schedule changed while its sync runs keeps its own next run', async () => {
  const { account, s, id, path } = await scheduledSource('race', { every: '10m' });
  await s.syncOne(account, id);
  // The regular run at 10m starts and is held downloading; the customer changes the schedule meanwhile.
  holdPaths.add(path);
  now = at(10 * MIN);
  await s.sweep();
  await waitFor(() => held.length === 1 || null, { timeoutMs: 10_000, intervalMs: 20, what: 'the held download' });
  expect((await repo.findById(account, id))!).toMatchObject({ status: 'syncing', nextRunAt: at(20 * MIN) });
  now = at(11 * MIN);
  await service.update(caller(account), id, { schedule: { every: '2h' } });
  answer(held.pop()!);
  const after = await ranAt(account, id, now);
  // The run's outcome is recorded; the next run is the new schedule's (11m + 2h), not the old one's 20m.
  expect(toSourceDto(after)).toMatchObject({ status: 'ready', rowCount: 2, schedule: { every: '2h' }, nextSyncAt: at(131 * MIN).toISOString() });
});

describe('schema drift', () => {
  const CHANGED = 'id,amount,coupon\n1,n/a,SPRING\n2,3.5,\n3,4.5,X\n';
  /** The columns of the first sync (the CSV the file server serves by default), which freeze and quarantine keep. */
  const FIRST_SCHEMA = columns({ id: 'integer', amount: 'number' });

  async function syncedOnce(schemaPolicy?: 'evolve' | 'freeze' | 'quarantine') {
    const account = newId('acct');
    const path = `/${uniqueSuffix()}.csv`;
    const doc = await service.create(caller(account), { type: 'url', name: 'drift', url: `${filesUrl}${path}`, ...(schemaPolicy ? { schemaPolicy } : {}) } as CreateSourceBody);
    const s = syncer('drift');
    await s.syncOne(account, doc._id);
    const first = (await repo.findById(account, doc._id))!;
    expect(first).toMatchObject({ status: 'ready', rowCount: 2 });
    /** Serves `csv` at the source's URL and syncs it again; the source after. */
    const resync = async (csv: string) => {
      content.set(path, csv);
      await repo.requestSync(account, doc._id, newId('req'), now);
      await s.syncOne(account, doc._id);
      return (await repo.findById(account, doc._id))!;
    };
    return { account, id: doc._id, resync, file: await store.currentFile(account, doc._id) };
  }

  const parquet = (select: string, file: string) => store.duck.run(`SELECT ${select} FROM read_parquet(${sqlLiteral(file)})`);

  it('evolve (the default) takes the new columns and says what changed in source.schema_changed', async () => {
    const { account, id, resync } = await syncedOnce();
    const after = await resync(CHANGED);
    expect(toSourceDto(after)).toMatchObject({ status: 'ready', rowCount: 3, schemaPolicy: 'evolve', lastSync: { status: 'succeeded' } });
    expect(after.schema).toEqual(columns({ id: 'integer', amount: 'string', coupon: 'string' }));
    const changed = (await outbox(account, id)).filter((e) => e.type === 'source.schema_changed');
    expect(changed.map((e) => e.data)).toEqual([
      { id, name: 'drift', policy: 'evolve', applied: true, added: [{ name: 'coupon', type: 'string' }], removed: [], retyped: [{ name: 'amount', from: 'number', to: 'string' }] },
    ]);
  });

  it('freeze fails the sync naming the columns and keeps the old data; unchanged columns sync as usual', async () => {
    const { account, id, resync, file } = await syncedOnce('freeze');
    // Positive control: the same columns again sync under freeze, with no schema_changed.
    const same = await resync('id,amount\n7,1.5\n8,2.5\n9,3.5\n');
    expect(same).toMatchObject({ status: 'ready', rowCount: 3, lastSync: { status: 'succeeded' } });
    const kept = await store.currentFile(account, id);
    expect(kept).not.toBe(file);

    const after = await resync('id,total\n1,2\n');
    expect(toSourceDto(after)).toMatchObject({ status: 'ready', rowCount: 3, schemaPolicy: 'freeze', schema: FIRST_SCHEMA });
    expect(after.lastSync).toMatchObject({
      status: 'failed',
      error: "the data's columns changed (added total (integer); removed amount) and the source's schema policy is freeze: its data was kept",
    });
    expect(await store.currentFile(account, id)).toBe(kept);
    const rows = await parquet('count(*) AS n', kept!);
    expect(Number(rows.rows[0]!.n)).toBe(3);
    const events = await outbox(account, id);
    expect(events.map((e) => e.type)).toEqual(['source.created', 'source.ready', 'source.ready', 'source.schema_changed', 'source.failed']);
    expect(events[3]!.data).toEqual({
      id,
      name: 'drift',
      policy: 'freeze',
      applied: false,
      added: [{ name: 'total', type: 'integer' }],
      removed: [{ name: 'amount', type: 'number' }],
      retyped: [],
    });
  });

  it('quarantine loads the rows that fit the old schema and sets the others aside; rows read = loaded + quarantined', async () => {
    const { account, id, resync } = await syncedOnce('quarantine');
    const after = await resync('id,amount,coupon\n1,2.5,\n2,n/a,\n3,4.5,SPRING\n4,5.5,\n5,oops,X\n');
    // Rows 1 and 4 fit (amount parses, no coupon); 2 and 5 do not parse, 3 has a coupon.
    expect(toSourceDto(after)).toMatchObject({
      status: 'ready',
      rowCount: 2,
      schemaPolicy: 'quarantine',
      schema: FIRST_SCHEMA,
      quarantine: { rowCount: 3, at: now.toISOString() },
      lastSync: { status: 'succeeded' },
    });
    const file = (await store.currentFile(account, id))!;
    const rows = await parquet('id, amount', file);
    expect(rows.rows.map((r) => [Number(r.id), r.amount])).toEqual([
      [1, 2.5],
      [4, 5.5],
    ]);
    expect(await readFile(join(store.dir(account, id), 'quarantine.csv'), 'utf8')).toBe('id,amount,coupon\n2,n/a,\n3,4.5,SPRING\n5,oops,X\n');
    const changed = (await outbox(account, id)).filter((e) => e.type === 'source.schema_changed');
    expect(changed.map((e) => e.data)).toEqual([
      {
        id,
        name: 'drift',
        policy: 'quarantine',
        applied: false,
        added: [{ name: 'coupon', type: 'string' }],
        removed: [],
        retyped: [{ name: 'amount', from: 'number', to: 'string' }],
        rows: { read: 5, loaded: 2, quarantined: 3 },
      },
    ]);

    // A removed column fits no row: every row is set aside, and the source keeps its columns with none loaded.
    const removed = await resync('id\n1\n2\n3\n');
    expect(removed).toMatchObject({ status: 'ready', rowCount: 0, quarantine: { rowCount: 3 } });
    expect(removed.schema.map((c) => c.name)).toEqual(['id', 'amount']);
    expect(await readFile(join(store.dir(account, id), 'quarantine.csv'), 'utf8')).toBe('id\n1\n2\n3\n');
    expect((await outbox(account, id)).at(-2)!.data).toMatchObject({ removed: [{ name: 'amount', type: 'number' }], rows: { read: 3, loaded: 0, quarantined: 3 } });
  });

  it('PATCH changes the schema policy', async () => {
    const { account, id } = await syncedOnce();
    expect(toSourceDto(await service.update(caller(account), id, { schemaPolicy: 'freeze' }))).toMatchObject({ schemaPolicy: 'freeze', schedule: null });
  });
});
