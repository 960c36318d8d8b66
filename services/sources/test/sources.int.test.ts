import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { newId, sourceSchema, TOPICS, type DomainEvent } from '@dap/contracts';
import { sqlLiteral } from '@dap/datasets';
import { createLogger } from '@dap/logger';
import { callerHeaders, columns, http, serviceTestEnv, uniqueSuffix, waitFor } from '@dap/testing';
import { startEventTap, type EventTap } from '@dap/testing/event-feed';
import { loadSourcesConfig } from '../src/config.ts';
import { startSources, type RunningSources } from '../src/index.ts';

const suffix = uniqueSuffix();
const logger = createLogger({ name: 'test', level: 'silent' });
const prefix = `t${suffix}.`;
const instanceId = `sources-test-${suffix}`;
const strictSource = z.strictObject(sourceSchema.shape);

let datasetDir: string;
let svc: RunningSources;
let tap: EventTap;
let events: DomainEvent[];

const configOf = (extra: Record<string, string> = {}) =>
  loadSourcesConfig(
    serviceTestEnv(`src_${suffix}`, prefix, {
      DATASET_DIR: datasetDir,
      BODY_LIMIT_BYTES: String(2 * 1024 * 1024),
      SYNC_SWEEP_MS: '300',
      SYNC_LEASE_MS: '3000',
      INSTANCE_ID: instanceId,
      ...extra,
    }),
  );

const accountA = newId('acct');
const accountB = newId('acct');

const api = (method: string, path: string, opts: { body?: unknown; account?: string; headers?: Record<string, string> } = {}) =>
  http(method, `${svc.url}${path}`, { body: opts.body, headers: { ...callerHeaders(opts.account ?? accountA), ...opts.headers } });

async function settled(id: string, account = accountA) {
  return waitFor(
    async () => {
      const r = await api('GET', `/v1/sources/${id}`, { account });
      return r.body?.status === 'ready' || r.body?.status === 'failed' ? r.body : null;
    },
    { timeoutMs: 15_000, what: `source ${id} to settle` },
  );
}

const rows = [
  { id: 1, amount: 10.5, city: 'Oslo', paid: true, at: '2024-01-01T10:00:00Z' },
  { id: 2, amount: 4, city: 'Rio', paid: false, at: '2024-01-02T11:30:00.250Z' },
  { id: 3, amount: null, city: 'Lima', paid: true, at: '2024-01-03 09:00:00' },
];

beforeAll(async () => {
  datasetDir = await mkdtemp(join(tmpdir(), `dap-sources-${suffix}-`));
  svc = await startSources(configOf(), { logger });
  tap = await startEventTap(prefix, 'sources-test');
  events = (await tap.watch(TOPICS.sources)).events;
});

afterAll(async () => {
  await tap?.stop();
  await svc?.stop();
  await rm(datasetDir, { recursive: true, force: true });
});

describe('authentication', () => {
  it('answers 401 to a direct call without the gateway signature, or with a forged one', async () => {
    const none = await http('GET', `${svc.url}/v1/sources`);
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ status: 401, code: 'unauthorized' });
    const forged = await http('GET', `${svc.url}/v1/sources`, { headers: { ...callerHeaders(accountA), 'x-dap-signature': 'x'.repeat(43) } });
    expect(forged.status).toBe(401);
    expect((await http('POST', `${svc.url}/v1/sources`, { body: { type: 'inline', name: 'x', rows: [{ a: 1 }] } })).status).toBe(401);
  });
});

describe('inline and CSV sources', () => {
  let inlineId: string;

  it('creates an inline source as pending (201 + Location), then syncs it to ready with exact types', async () => {
    const res = await api('POST', '/v1/sources', { body: { type: 'inline', name: ' Orders ', rows } });
    expect(res.status).toBe(201);
    const created = strictSource.parse(res.body);
    expect(created).toMatchObject({ name: 'Orders', type: 'inline', status: 'pending', error: null, schema: [], rowCount: 0, lastSyncedAt: null, lastSync: null });
    expect(created.id).toMatch(/^src_[0-9A-Z]{26}$/);
    expect(res.headers.get('location')).toBe(`/v1/sources/${created.id}`);
    inlineId = created.id;

    const ready = strictSource.parse(await settled(inlineId));
    expect(ready.status).toBe('ready');
    expect(ready.error).toBeNull();
    expect(ready.rowCount).toBe(3);
    expect(ready.schema).toEqual(columns({ id: 'integer', amount: 'number', city: 'string', paid: 'boolean', at: 'timestamp' }));
    expect(new Date(ready.lastSyncedAt!).toISOString()).toBe(ready.lastSyncedAt);
    expect(ready.lastSync).toEqual({ status: 'succeeded', error: null, at: ready.lastSyncedAt, mode: 'full', rowsPulled: 3, rowsMerged: 3 });
    expect(ready.createdAt).toBe(created.createdAt);

    const file = await svc.store.currentFile(accountA, inlineId);
    expect(file && existsSync(file)).toBe(true);
    const sum = await svc.store.duck.run(`SELECT sum(amount) AS s, count(*) AS n FROM read_parquet(${sqlLiteral(file!)})`);
    expect(sum.rows[0]).toEqual({ s: 14.5, n: 3 });
  });

  it('creates a CSV source that syncs to ready; its Parquet file holds the right data', async () => {
    const csv = 'region,units,price\nnorth,3,2.5\nsouth,7,1.25\n"east, far",10,4\n';
    const res = await api('POST', '/v1/sources', { body: { type: 'csv', name: 'Sales', csv } });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('pending');
    const ready = strictSource.parse(await settled(res.body.id));
    expect(ready).toMatchObject({ status: 'ready', rowCount: 3, type: 'csv', error: null });
    expect(ready.schema).toEqual(columns({ region: 'string', units: 'integer', price: 'number' }));
    const file = await svc.store.currentFile(accountA, ready.id);
    expect(file).toMatch(/\.parquet$/);
    expect(existsSync(file!)).toBe(true);
    const q = await svc.store.duck.run(`SELECT sum(units) AS u, sum(units * price) AS revenue FROM read_parquet(${sqlLiteral(file!)})`);
    expect(q.rows[0]).toEqual({ u: 20, revenue: 3 * 2.5 + 7 * 1.25 + 40 });
  });

  it('syncs a CSV whose decimal comes after the sniffer sample to a number column, no value changed', async () => {
    const rows = 30_000;
    let csv = 'id,n\n';
    for (let i = 0; i < rows; i++) csv += `${i},${i}\n`;
    csv += `${rows},9.5\n`;
    const res = await api('POST', '/v1/sources', { body: { type: 'csv', name: 'Late decimal', csv } });
    expect(res.status).toBe(201);
    const ready = strictSource.parse(await settled(res.body.id));
    expect(ready).toMatchObject({ status: 'ready', rowCount: rows + 1, error: null });
    expect(ready.schema).toEqual([
      { name: 'id', type: 'integer' },
      { name: 'n', type: 'number' },
    ]);
    const file = await svc.store.currentFile(accountA, ready.id);
    const q = await svc.store.duck.run(
      `SELECT count(*) FILTER (WHERE n <> id AND id < ${rows}) AS changed, max(n) FILTER (WHERE id = ${rows}) AS late FROM read_parquet(${sqlLiteral(file!)})`,
    );
    expect(q.rows[0]).toEqual({ changed: 0, late: 9.5 });
  });

  it('creates JSON and NDJSON upload sources that sync to ready', async () => {
    const objects = [
      { sku: 'a', qty: 2, meta: { tags: ['x'] } },
      { sku: 'b', qty: 5, meta: null },
    ];
    const json = await api('POST', '/v1/sources', { body: { type: 'json', name: 'Stock', json: JSON.stringify(objects) } });
    expect(json.status).toBe(201);
    const nd = await api('POST', '/v1/sources', { body: { type: 'ndjson', name: 'Stock lines', ndjson: objects.map((o) => JSON.stringify(o)).join('\n') } });
    expect(nd.status).toBe(201);
    for (const [id, type] of [
      [json.body.id, 'json'],
      [nd.body.id, 'ndjson'],
    ] as const) {
      const ready = strictSource.parse(await settled(id));
      expect(ready).toMatchObject({ status: 'ready', type, rowCount: 2 });
      expect(ready.schema).toEqual(columns({ sku: 'string', qty: 'integer', meta: 'string' }));
      const file = await svc.store.currentFile(accountA, id);
      const q = await svc.store.duck.run(`SELECT sum(qty) AS q FROM read_parquet(${sqlLiteral(file!)})`);
      expect(q.rows[0]).toEqual({ q: 7 });
    }
  });

  it('marks a source failed, with the reason, when the full load fails past the cheap check', async () => {
    // The check probes the first MiB; the ragged row sits after it.
    let csv = 'a,b\n';
    while (csv.length < 1_100_000) csv += '1234567,7654321\n';
    csv += '1,2,3\n';
    const res = await api('POST', '/v1/sources', { body: { type: 'csv', name: 'Broken', csv } });
    expect(res.status).toBe(201);
    const failed = strictSource.parse(await settled(res.body.id));
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/^the data could not be loaded: /);
    expect(failed.error).not.toContain(datasetDir);
    expect(failed.rowCount).toBe(0);
    expect(failed.lastSync).toEqual({ status: 'failed', error: failed.error, at: failed.updatedAt });
    expect(await svc.store.currentFile(accountA, failed.id)).toBeNull();
    await waitFor(() => events.find((e) => e.type === 'source.failed' && e.subject === failed.id), { what: 'source.failed' });
    const ev = events.find((e) => e.type === 'source.failed' && e.subject === failed.id)!;
    expect(ev.data).toEqual({ id: failed.id, name: 'Broken', error: failed.error });
  });

  it('re-syncs a ready source: 202 + Location, back to pending, then ready again with a later lastSyncedAt', async () => {
    const before = await api('GET', `/v1/sources/${inlineId}`);
    const res = await api('POST', `/v1/sources/${inlineId}/sync`);
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(`/v1/sources/${inlineId}`);
    expect(['pending', 'syncing']).toContain(strictSource.parse(res.body).status);
    const again = await waitFor(
      async () => {
        const r = await api('GET', `/v1/sources/${inlineId}`);
        return r.body.status === 'ready' && r.body.lastSyncedAt !== before.body.lastSyncedAt ? r.body : null;
      },
      { what: 'the re-sync' },
    );
    expect(again.rowCount).toBe(3);
    expect(Date.parse(again.lastSyncedAt)).toBeGreaterThan(Date.parse(before.body.lastSyncedAt));
    expect((await api('POST', `/v1/sources/${inlineId}/sync`, { body: { force: true } })).status).toBe(400);
    expect((await api('POST', `/v1/sources/${newId('src')}/sync`)).status).toBe(404);
  });

  it('keeps a source ready on its last good data when a re-sync fails; the failure is its lastSync', async () => {
    const res = await api('POST', '/v1/sources', { body: { type: 'inline', name: 'Kept', rows } });
    const first = strictSource.parse(await settled(res.body.id));
    expect(first).toMatchObject({ status: 'ready', rowCount: 3, lastSync: { status: 'succeeded', error: null } });
    const file = await svc.store.currentFile(accountA, first.id);
    // The staged rows every sync re-loads are gone, so the next sync fails.
    const dir = svc.store.dir(accountA, first.id);
    for (const f of await readdir(dir)) if (f.startsWith('staging.')) await rm(join(dir, f));

    expect((await api('POST', `/v1/sources/${first.id}/sync`)).status).toBe(202);
    const after = strictSource.parse(
      await waitFor(
        async () => {
          const r = await api('GET', `/v1/sources/${first.id}`);
          return r.body.lastSync?.status === 'failed' ? r.body : null;
        },
        { what: 'the failed re-sync' },
      ),
    );
    expect(after).toMatchObject({
      status: 'ready',
      error: null,
      rowCount: 3,
      schema: first.schema,
      lastSyncedAt: first.lastSyncedAt,
      lastSync: { status: 'failed', error: 'the uploaded data is no longer available; create the source again' },
    });
    expect(Date.parse(after.lastSync!.at)).toBeGreaterThan(Date.parse(first.lastSyncedAt!));
    // The data queries read is the same file, intact.
    expect(await svc.store.currentFile(accountA, first.id)).toBe(file);
    const q = await svc.store.duck.run(`SELECT count(*) AS n FROM read_parquet(${sqlLiteral(file!)})`);
    expect(q.rows[0]).toEqual({ n: 3 });
    // Subscribers still hear of the failure.
    const ev = await waitFor(() => events.find((e) => e.type === 'source.failed' && e.subject === first.id), { what: 'source.failed' });
    expect(ev.data).toEqual({ id: first.id, name: 'Kept', error: after.lastSync!.error, kept: { rowCount: 3, schema: first.schema } });
  });

  it('publishes source.created then source.ready with rowCount and schema on the sources topic', async () => {
    const mine = await waitFor(
      () => {
        const list = events.filter((e) => e.subject === inlineId);
        return list.some((e) => e.type === 'source.ready') ? list : null;
      },
      { what: 'source events', timeoutMs: 20_000 },
    );
    expect(mine[0]!.type).toBe('source.created');
    expect(mine[0]).toMatchObject({ accountId: accountA, version: 1, data: { id: inlineId, name: 'Orders', type: 'inline' } });
    const ready = mine.find((e) => e.type === 'source.ready')!;
    expect(mine.indexOf(ready)).toBeGreaterThan(0);
    expect(ready.data).toEqual({
      id: inlineId,
      name: 'Orders',
      type: 'inline',
      rowCount: 3,
      schema: columns({ id: 'integer', amount: 'number', city: 'string', paid: 'boolean', at: 'timestamp' }),
      sync: { mode: 'full', rowsPulled: 3, rowsMerged: 3 },
    });
    expect(ready.requestId).toBe(mine[0]!.requestId);
  });
});

describe('bad input', () => {
  const bad = async (body: unknown) => {
    const res = await api('POST', '/v1/sources', { body });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(Array.isArray(res.body.errors) && res.body.errors.length > 0).toBe(true);
    return res.body as { detail: string; errors: { path: string; message: string }[] };
  };

  it('refuses bodies that are missing fields or have wrong types, one entry per field', async () => {
    expect((await bad({ type: 'inline', rows: [{ a: 1 }] })).errors.map((e) => e.path)).toContain('name');
    await bad({ type: 'parquet', name: 'x' });
    await bad({ type: 'inline', name: 'x', rows: [] });
    await bad({ type: 'inline', name: 'x', rows: [{ a: { nested: 1 } }] });
    await bad({ type: 'csv', name: '   ', csv: 'a\n1\n' });
    await bad({ type: 'csv', name: 'x', csv: '' });
    await bad([]);
  });

  it('refuses unknown fields and $-keys', async () => {
    expect((await bad({ type: 'inline', name: 'x', rows: [{ a: 1 }], extra: true })).detail).toMatch(/extra/);
    await bad({ type: 'inline', name: 'x', rows: [{ $where: 'sleep(1000)' }] });
    await bad({ type: 'inline', name: 'x', rows: [{ a: 1 }], $set: { accountId: accountB } });
  });

  it('refuses an empty, header-only or unparseable CSV with the reason', async () => {
    const blank = await bad({ type: 'csv', name: 'x', csv: '  \n \n' });
    expect(blank.errors).toEqual([{ path: 'csv', message: 'the CSV is empty' }]);
    const headerOnly = await bad({ type: 'csv', name: 'x', csv: 'a,b,c\n' });
    expect(headerOnly.detail).toMatch(/header row but no data rows/);
    expect(headerOnly.errors[0]!.path).toBe('csv');
    let ragged = 'a,b\n';
    for (let i = 0; i < 2000; i++) ragged += `${i},${i}\n`;
    const unparseable = await bad({ type: 'csv', name: 'x', csv: `${ragged}1,2,3\n` });
    expect(unparseable.detail).toMatch(/could not be parsed/);
    expect(unparseable.detail).not.toMatch(/\/tmp\//);
    const list = await api('GET', '/v1/sources?limit=100');
    expect(list.body.data.some((s: { name: string }) => s.name === 'x')).toBe(false);
  });

  it('refuses JSON and NDJSON uploads that do not parse to rows', async () => {
    expect((await bad({ type: 'json', name: 'x', json: '{"a":1}' })).errors).toEqual([{ path: 'json', message: 'the JSON must be an array of objects' }]);
    expect((await bad({ type: 'json', name: 'x', json: '[{"$gt":1}]' })).errors[0]!.path).toBe('json');
    expect((await bad({ type: 'ndjson', name: 'x', ndjson: '{"a":1}\nnot json\n' })).errors[0]!.message).toMatch(/^line 2 is not valid JSON/);
  });

  it('refuses malformed JSON, a non-JSON content type and an oversize body', async () => {
    const malformed = await api('POST', '/v1/sources', { body: '{"type":', headers: { 'content-type': 'application/json' } });
    expect([malformed.status, malformed.body.detail]).toEqual([400, 'the request body is not valid JSON']);
    for (const scalar of ['null', '1', '"x"']) {
      const res = await api('POST', '/v1/sources', { body: scalar, headers: { 'content-type': 'application/json' } });
      expect([scalar, res.status, res.body.detail, res.body.errors]).toEqual([
        scalar,
        400,
        'the request body must be a JSON object',
        [{ path: '(root)', message: 'expected an object' }],
      ]);
    }
    expect((await api('POST', '/v1/sources', { body: 'a,b\n1,2', headers: { 'content-type': 'text/csv' } })).status).toBe(400);
    const huge = await api('POST', '/v1/sources', { body: { type: 'csv', name: 'x', csv: 'a\n' + '1\n'.repeat(1_100_000) } });
    expect(huge.status).toBe(413);
  });

  it('refuses bad list queries', async () => {
    for (const q of ['limit=0', 'limit=101', 'limit=', 'limit=1.5', 'limit=ten', 'limit=1&limit=2']) {
      const res = await api('GET', `/v1/sources?${q}`);
      expect([q, res.status, res.body.errors]).toEqual([q, 400, [{ path: 'limit', message: 'limit must be a whole number from 1 to 100, given once' }]]);
    }
    expect((await api('GET', '/v1/sources?cursor=bm9wZQ')).status).toBe(400);
    expect((await api('GET', '/v1/sources?sort=name')).status).toBe(400);
  });
});

describe('tenancy, delete and pagination', () => {
  it('answers 404 for another account’s id and for malformed ids', async () => {
    const res = await api('POST', '/v1/sources', { body: { type: 'inline', name: 'Private', rows: [{ a: 1 }] } });
    const id = res.body.id as string;
    expect((await api('GET', `/v1/sources/${id}`, { account: accountB })).status).toBe(404);
    expect((await api('POST', `/v1/sources/${id}/sync`, { account: accountB })).status).toBe(404);
    expect((await api('DELETE', `/v1/sources/${id}`, { account: accountB })).status).toBe(404);
    expect((await api('GET', '/v1/sources', { account: accountB })).body).toEqual({ data: [], hasMore: false, nextCursor: null });
    expect((await api('GET', `/v1/sources/${id}`)).status).toBe(200);
    for (const bad of ['nope', 'src_123', `mdl_${id.slice(4)}`, '%24where']) {
      const r = await api('GET', `/v1/sources/${bad}`);
      expect(r.status).toBe(404);
      expect(r.body.code).toBe('source_not_found');
    }
    expect((await api('DELETE', '/v1/sources/src_bad')).status).toBe(404);
    await settled(id);
  });

  it('deletes a source: 204, then 404, its data directory gone, and source.deleted published', async () => {
    const res = await api('POST', '/v1/sources', { body: { type: 'csv', name: 'Temp', csv: 'x\n1\n2\n' } });
    const id = res.body.id as string;
    await settled(id);
    const dir = svc.store.dir(accountA, id);
    expect(existsSync(dir)).toBe(true);
    const del = await api('DELETE', `/v1/sources/${id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await api('GET', `/v1/sources/${id}`)).status).toBe(404);
    expect((await api('DELETE', `/v1/sources/${id}`)).status).toBe(404);
    expect(existsSync(dir)).toBe(false);
    const ev = await waitFor(() => events.find((e) => e.type === 'source.deleted' && e.subject === id), { what: 'source.deleted' });
    expect(ev).toMatchObject({ accountId: accountA, data: { id } });
  });

  it('pages newest first: limit=1 gives hasMore and a cursor that fetches the next one', async () => {
    const account = newId('acct');
    const ids: string[] = [];
    for (const name of ['first', 'second', 'third']) {
      const r = await api('POST', '/v1/sources', { account, body: { type: 'inline', name, rows: [{ n: 1 }] } });
      ids.push(r.body.id);
    }
    const page1 = await api('GET', '/v1/sources?limit=1', { account });
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((s: { id: string }) => s.id)).toEqual([ids[2]]);
    expect(page1.body.hasMore).toBe(true);
    expect(typeof page1.body.nextCursor).toBe('string');
    strictSource.parse(page1.body.data[0]);
    const page2 = await api('GET', `/v1/sources?limit=1&cursor=${page1.body.nextCursor}`, { account });
    expect(page2.body.data.map((s: { id: string }) => s.id)).toEqual([ids[1]]);
    const rest = await api('GET', `/v1/sources?limit=5&cursor=${page2.body.nextCursor}`, { account });
    expect(rest.body).toMatchObject({ hasMore: false, nextCursor: null });
    expect(rest.body.data.map((s: { id: string }) => s.id)).toEqual([ids[0]]);
    const all = await api('GET', '/v1/sources', { account });
    expect(all.body.data).toHaveLength(3);
    await Promise.all(ids.map((id) => settled(id, account)));
  });
});

describe('crash recovery', () => {
  it('resumes sources left pending or syncing when the service starts again', async () => {
    await svc.stop();
    // An instance that accepts uploads but runs no syncs leaves the new source pending, like a crash right after 201.
    svc = await startSources(configOf({ SYNC_CONCURRENCY: '0' }), { logger });
    const pending = await api('POST', '/v1/sources', { body: { type: 'csv', name: 'Left pending', csv: 'v\n1\n2\n3\n' } });
    expect(pending.status).toBe(201);
    const interrupted = await api('POST', '/v1/sources', { body: { type: 'inline', name: 'Interrupted', rows: [{ v: 5 }, { v: 6 }] } });
    const abandoned = await api('POST', '/v1/sources', { body: { type: 'inline', name: 'Abandoned', rows: [{ v: 7 }] } });
    const held = await api('POST', '/v1/sources', { body: { type: 'inline', name: 'Held', rows: [{ v: 8 }] } });
    const raw = svc.repo.coll.raw;
    const now = Date.now();
    // Syncing when this very instance died (its lease has not run out), and syncing under another dead worker.
    await raw.updateOne({ _id: interrupted.body.id }, { $set: { status: 'syncing', syncToken: 'msg_old', syncOwner: instanceId, syncLeaseUntil: new Date(now + 600_000) } });
    await raw.updateOne({ _id: abandoned.body.id }, { $set: { status: 'syncing', syncToken: 'msg_old', syncOwner: 'other', syncLeaseUntil: new Date(now - 1_000) } });
    // Syncing under another instance whose lease is still live: left alone until the lease runs out.
    await raw.updateOne({ _id: held.body.id }, { $set: { status: 'syncing', syncToken: 'msg_old', syncOwner: 'other', syncLeaseUntil: new Date(now + 600_000) } });
    await new Promise((r) => setTimeout(r, 400));
    expect((await api('GET', `/v1/sources/${pending.body.id}`)).body.status).toBe('pending');
    await svc.stop();

    svc = await startSources(configOf(), { logger });
    const resumed = await settled(pending.body.id);
    expect(resumed).toMatchObject({ status: 'ready', rowCount: 3, schema: [{ name: 'v', type: 'integer' }] });
    expect(await settled(interrupted.body.id)).toMatchObject({ status: 'ready', rowCount: 2 });
    expect(await settled(abandoned.body.id)).toMatchObject({ status: 'ready', rowCount: 1 });
    // The sweeps that took the three above (every 300 ms) left the live lease alone, and so does one now...
    expect((await svc.repo.findUnfinishedAcrossAccounts(new Date(), 20)).map((s) => s.id)).not.toContain(held.body.id);
    expect((await api('GET', `/v1/sources/${held.body.id}`)).body).toMatchObject({ status: 'syncing' });
    expect(await svc.repo.coll.raw.findOne({ _id: held.body.id })).toMatchObject({ syncToken: 'msg_old', syncOwner: 'other' });
    // ...and take it once it has run out (moved into the past rather than waited for).
    await svc.repo.coll.raw.updateOne({ _id: held.body.id }, { $set: { syncLeaseUntil: new Date(Date.now() - 1_000) } });
    const taken = await settled(held.body.id);
    expect(taken).toMatchObject({ status: 'ready', rowCount: 1 });
    await waitFor(() => events.find((e) => e.type === 'source.ready' && e.subject === pending.body.id), { what: 'source.ready after restart' });
  });
});
