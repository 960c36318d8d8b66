import { newId } from '@dap/contracts';
import { sqlLiteral } from '@dap/datasets';
import { stackEnv, uniqueSuffix, waitFor } from '@dap/testing';
import { customerDatabases, startHarness, type CustomerDatabases, type Harness } from './harness.ts';
import type { SourceRepository } from '../src/persistence/source.repository.ts';

/**
 * Incremental syncs against the real PostgreSQL, MariaDB and MongoDB-wire servers: only rows at or past the
 * last cursor value are pulled, merged by key or appended, rows sharing the cursor value are not lost, a full
 * re-sync starts over, and a crash between publishing the data and saving the cursor loses and doubles nothing.
 */
const suffix = uniqueSuffix();
const { POSTGRES_URL, MYSQL_URL } = stackEnv();
const mongoDb = `incdata_${suffix}`;

const T = ['2024-01-01T01:00:00Z', '2024-01-01T02:00:00Z', '2024-01-01T03:00:00Z', '2024-01-01T04:00:00Z'].map((t) => new Date(t));
interface Row {
  id: number;
  name: string;
  at: Date;
}

interface Engine {
  type: 'postgres' | 'mysql' | 'mongodb';
  create(table: string): Promise<void>;
  /** Inserts the rows, or updates the ones whose id is there. */
  put(table: string, rows: Row[]): Promise<void>;
  body(table: string): Record<string, unknown>;
  /** The cursor value as the engine prints it. */
  cursorText(at: Date): string;
}

let h: Harness;
let dbs: CustomerDatabases;
const tables: { engine: Engine; table: string }[] = [];

const sqlTs = (d: Date) => d.toISOString().replace('T', ' ').replace('.000Z', '');

const postgres: Engine = {
  type: 'postgres',
  create: async (table) => void (await dbs.pg.query(`CREATE TABLE ${table} (id bigint PRIMARY KEY, name text, updated_at timestamptz)`)),
  put: async (table, rows) => {
    for (const r of rows) {
      await dbs.pg.query(`INSERT INTO ${table} VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, updated_at = EXCLUDED.updated_at`, [r.id, r.name, r.at]);
    }
  },
  body: (table) => ({ type: 'postgres', connection: { url: POSTGRES_URL }, table }),
  cursorText: (at) => `${sqlTs(at)}+00`,
};

const mariadb: Engine = {
  type: 'mysql',
  create: async (table) => void (await dbs.mysql.query(`CREATE TABLE ${table} (id BIGINT PRIMARY KEY, name VARCHAR(40), updated_at DATETIME)`)),
  put: async (table, rows) => {
    for (const r of rows) {
      await dbs.mysql.query(`INSERT INTO ${table} VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE name = VALUES(name), updated_at = VALUES(updated_at)`, [r.id, r.name, sqlTs(r.at)]);
    }
  },
  body: (table) => ({ type: 'mysql', connection: { url: MYSQL_URL }, table }),
  cursorText: sqlTs,
};

const mongodb: Engine = {
  type: 'mongodb',
  create: async (table) => void (await dbs.mongo.db(mongoDb).createCollection(table)),
  put: async (table, rows) => {
    for (const r of rows)
      await dbs.mongo
        .db(mongoDb)
        .collection(table)
        .updateOne({ id: r.id }, { $set: { name: r.name, updated_at: r.at } }, { upsert: true });
  },
  body: (table) => ({ type: 'mongodb', connection: { url: `${dbs.mongoUrl}/${mongoDb}` }, collection: table }),
  cursorText: (at) => `{"$date":{"$numberLong":"${at.getTime()}"}}`,
};

beforeAll(async () => {
  dbs = await customerDatabases(mongoDb);
  // A short lease, so a sync whose worker "crashed" is picked up again soon.
  h = await startHarness({ SYNC_LEASE_MS: '1500' });
}, 60_000);

afterAll(async () => {
  await h?.stop();
  for (const { engine, table } of tables) {
    if (engine.type === 'postgres') await dbs.pg.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
    if (engine.type === 'mysql') await dbs.mysql.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
  }
  await dbs?.close();
});

async function newTable(engine: Engine, rows: Row[]): Promise<string> {
  const table = `inc_${suffix}_${tables.length}`;
  tables.push({ engine, table });
  await engine.create(table);
  await engine.put(table, rows);
  return table;
}

async function createSource(body: Record<string, unknown>, account: string) {
  const res = await h.api('POST', '/v1/sources', { body: { name: 'Orders', ...body }, account });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function syncNow(id: string, account: string, body?: unknown) {
  const res = await h.api('POST', `/v1/sources/${id}/sync`, { account, ...(body ? { body } : {}) });
  expect(res.status).toBe(202);
  return res.body;
}

/** The published rows, by id: [id, name]. */
async function published(account: string, id: string): Promise<[number, string][]> {
  const file = await h.svc.store.currentFile(account, id);
  const res = await h.svc.store.duck.run(`SELECT id, name FROM read_parquet(${sqlLiteral(file!)}) ORDER BY id, name`);
  return res.rows.map((r) => [Number(r.id), String(r.name)]);
}

const first: Row[] = [
  { id: 1, name: 'one', at: T[0]! },
  { id: 2, name: 'two', at: T[0]! },
  { id: 3, name: 'three', at: T[1]! },
  { id: 4, name: 'four', at: T[2]! },
  { id: 5, name: 'five', at: T[2]! },
];

describe.each([postgres, mariadb, mongodb])('$type', (engine) => {
  it('pulls only rows at or past the cursor, merges updated rows by key, keeps rows tied at the cursor, and a full re-sync starts over', async () => {
    const account = newId('acct');
    const table = await newTable(engine, first);
    const id = await createSource({ ...engine.body(table), incremental: { cursorField: 'updated_at', primaryKey: ['id'] } }, account);
    const initial = await h.settled(id, account);
    expect(initial).toMatchObject({
      status: 'ready',
      rowCount: 5,
      lastSync: { status: 'succeeded', mode: 'full', rowsPulled: 5, rowsMerged: 5 },
      incremental: { cursorField: 'updated_at', primaryKey: ['id'], cursor: engine.cursorText(T[2]!) },
    });

    // A row at the cursor value itself (written after the last sync read), a newer one, and a changed row.
    await engine.put(table, [
      { id: 6, name: 'six', at: T[2]! },
      { id: 7, name: 'seven', at: T[3]! },
      { id: 2, name: 'two v2', at: T[3]! },
    ]);
    await syncNow(id, account);
    const after = await h.settled(id, account);
    // Pulled: 4, 5, 6 (at the old cursor value) and 7, 2 (past it); nothing before it.
    expect(after).toMatchObject({ rowCount: 7, lastSync: { mode: 'incremental', rowsPulled: 5, rowsMerged: 5 }, incremental: { cursor: engine.cursorText(T[3]!) } });
    expect(await published(account, id)).toEqual([
      [1, 'one'],
      [2, 'two v2'],
      [3, 'three'],
      [4, 'four'],
      [5, 'five'],
      [6, 'six'],
      [7, 'seven'],
    ]);

    // Nothing changed: only the rows at the cursor value are read again, and merged onto themselves.
    await syncNow(id, account);
    expect(await h.settled(id, account)).toMatchObject({ rowCount: 7, lastSync: { mode: 'incremental', rowsPulled: 2 } });

    const full = await syncNow(id, account, { mode: 'full' });
    expect(full.incremental).toMatchObject({ cursor: null });
    expect(await h.settled(id, account)).toMatchObject({
      rowCount: 7,
      lastSync: { mode: 'full', rowsPulled: 7, rowsMerged: 7 },
      incremental: { cursor: engine.cursorText(T[3]!) },
    });
    expect((await published(account, id)).length).toBe(7);
  });

  it('without a primary key appends the new rows, and the rows tied at the cursor only once', async () => {
    const account = newId('acct');
    const table = await newTable(engine, first.slice(0, 3));
    const id = await createSource({ ...engine.body(table), incremental: { cursorField: 'updated_at' } }, account);
    expect(await h.settled(id, account)).toMatchObject({ rowCount: 3, incremental: { primaryKey: null, cursor: engine.cursorText(T[1]!) } });
    await engine.put(table, [
      { id: 4, name: 'four', at: T[1]! },
      { id: 5, name: 'five', at: T[2]! },
    ]);
    await syncNow(id, account);
    // Pulled 3 (at the cursor, already stored), 4 (tied with it, new) and 5; written: 4 and 5.
    expect(await h.settled(id, account)).toMatchObject({ rowCount: 5, lastSync: { mode: 'incremental', rowsPulled: 3, rowsMerged: 2 } });
    expect((await published(account, id)).map(([n]) => n)).toEqual([1, 2, 3, 4, 5]);
  });
});

describe('incremental settings', () => {
  it('refuses bad settings with the field named, and a cursor column the data lacks fails the first sync saying so', async () => {
    const account = newId('acct');
    const table = await newTable(postgres, first.slice(0, 2));
    const bad = await h.api('POST', '/v1/sources', { body: { name: 'x', ...postgres.body(table), incremental: { cursorField: '', primaryKey: ['id', 'id'] } }, account });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['incremental.cursorField', 'incremental.primaryKey']);

    const inline = await h.api('POST', '/v1/sources', { body: { type: 'inline', name: 'i', rows: [{ a: 1 }] }, account });
    const patch = await h.api('PATCH', `/v1/sources/${inline.body.id}`, { body: { incremental: { cursorField: 'a' } }, account });
    expect({ status: patch.status, errors: patch.body.errors }).toMatchObject({
      status: 400,
      errors: [{ path: 'incremental', message: expect.stringMatching(/inline source cannot sync incrementally/) }],
    });

    const missing = await createSource({ ...postgres.body(table), incremental: { cursorField: 'changed_at' } }, account);
    expect(await h.settled(missing, account)).toMatchObject({ status: 'failed', error: 'the PostgreSQL data has no column changed_at to sync incrementally by' });
    const myTable = await newTable(mariadb, first.slice(0, 2));
    const missingMy = await createSource({ ...mariadb.body(myTable), incremental: { cursorField: 'changed_at' } }, account);
    expect(await h.settled(missingMy, account)).toMatchObject({ status: 'failed', error: 'the MySQL data has no column changed_at to sync incrementally by' });
    const mongoTable = await newTable(mongodb, first.slice(0, 2));
    const missingField = await createSource({ ...mongodb.body(mongoTable), incremental: { cursorField: 'changed_at' } }, account);
    expect(await h.settled(missingField, account)).toMatchObject({ status: 'failed', error: 'the MongoDB data has no field changed_at to sync incrementally by' });
    // The positive control: the same sources sync with a cursor they have.
    const fine = await createSource({ ...postgres.body(table), incremental: { cursorField: 'updated_at' } }, account);
    expect(await h.settled(fine, account)).toMatchObject({ status: 'ready', rowCount: 2 });
  });

  it('refuses a full re-sync and new incremental settings while a sync runs (it would save its own cursor after), and takes them once it ends', async () => {
    const account = newId('acct');
    const table = await newTable(postgres, first.slice(0, 2));
    const id = await createSource({ ...postgres.body(table), incremental: { cursorField: 'updated_at' } }, account);
    expect(await h.settled(id, account)).toMatchObject({ status: 'ready', incremental: { cursor: postgres.cursorText(T[0]!) } });
    // A worker holds the source's sync.
    const lease = { token: newId('msg'), owner: 'another-instance', until: new Date(Date.now() + 60_000) };
    expect(await h.svc.repo.claimForUpload(account, id, lease, new Date())).toMatchObject({ status: 'syncing' });
    const full = await h.api('POST', `/v1/sources/${id}/sync`, { account, body: { mode: 'full' } });
    expect({ status: full.status, code: full.body.code }).toEqual({ status: 409, code: 'source_sync_running' });
    const patched = await h.api('PATCH', `/v1/sources/${id}`, { account, body: { incremental: { cursorField: 'id' } } });
    expect({ status: patched.status, code: patched.body.code }).toEqual({ status: 409, code: 'source_sync_running' });
    // The positive control: other settings change meanwhile, and the cursor stayed.
    const policy = await h.api('PATCH', `/v1/sources/${id}`, { account, body: { schemaPolicy: 'freeze' } });
    expect(policy.body).toMatchObject({ schemaPolicy: 'freeze', incremental: { cursorField: 'updated_at', cursor: postgres.cursorText(T[0]!) } });

    await h.svc.repo.finish(account, id, lease.token, { status: 'ready', error: null, lastSync: { status: 'succeeded', error: null, at: new Date() } }, [], new Date());
    const after = await h.api('PATCH', `/v1/sources/${id}`, { account, body: { incremental: { cursorField: 'id', primaryKey: ['id'] } } });
    expect(after.body).toMatchObject({ incremental: { cursorField: 'id', primaryKey: ['id'], cursor: null } });
    await syncNow(id, account);
    expect(await h.settled(id, account)).toMatchObject({ rowCount: 2, lastSync: { mode: 'full', rowsPulled: 2 }, incremental: { cursor: '2' } });
  });

  it('a crash after the merged data is published but before the cursor is saved loses nothing and appends nothing twice', async () => {
    const account = newId('acct');
    const table = await newTable(postgres, first.slice(0, 3));
    const id = await createSource({ ...postgres.body(table), incremental: { cursorField: 'updated_at' } }, account);
    expect(await h.settled(id, account)).toMatchObject({ rowCount: 3, incremental: { cursor: postgres.cursorText(T[1]!) } });
    await postgres.put(table, [
      { id: 4, name: 'four', at: T[1]! },
      { id: 5, name: 'five', at: T[2]! },
    ]);

    // The process dies as it records the outcome: the data is published, the cursor is not saved.
    const repo = h.svc.repo as SourceRepository & { finish: SourceRepository['finish'] };
    const finish = repo.finish.bind(repo);
    let crashed = false;
    repo.finish = async (...args) => {
      if (!crashed && args[1] === id && args[3].status === 'ready') {
        crashed = true;
        throw new Error('injected crash before the cursor is saved');
      }
      return finish(...args);
    };
    try {
      await syncNow(id, account);
      await waitFor(() => crashed, { what: 'the injected crash' });
      // The crashed run had published the merged data while the stored cursor is still the old one.
      const stored = await h.svc.repo.findById(account, id);
      expect(stored).toMatchObject({ status: 'syncing', cursor: postgres.cursorText(T[1]!) });
      expect((await published(account, id)).map(([n]) => n)).toEqual([1, 2, 3, 4, 5]);

      // Its lease runs out, the sync runs again from the old cursor and merges onto the published data.
      const recovered = await h.settled(id, account);
      expect(recovered).toMatchObject({
        status: 'ready',
        rowCount: 5,
        lastSync: { mode: 'incremental', rowsPulled: 3, rowsMerged: 0 },
        incremental: { cursor: postgres.cursorText(T[2]!) },
      });
      expect((await published(account, id)).map(([n]) => n)).toEqual([1, 2, 3, 4, 5]);
    } finally {
      repo.finish = finish;
    }
  });
});
