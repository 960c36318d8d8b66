import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { newId, sourceSchema } from '@dap/contracts';
import { sqlLiteral } from '@dap/datasets';
import { columns, stackEnv, uniqueSuffix, waitFor } from '@dap/testing';
import { customerDatabases, startHarness, type CustomerDatabases, type Harness } from './harness.ts';

/**
 * Every remote source type end to end against real servers: PostgreSQL and MariaDB from the test stack, the
 * MongoDB-wire server, and a file server started here. Then the failure matrix: each bad source is a 400
 * (or a failed sync) with a reason, and no secret ever appears in a response or a log line.
 */
const strictSource = z.strictObject(sourceSchema.shape);
const suffix = uniqueSuffix();
const { POSTGRES_URL, MYSQL_URL } = stackEnv();
const PG_PASSWORD = new URL(POSTGRES_URL).password;
const HEADER_SECRET = `Bearer tok-${suffix}-${'s'.repeat(12)}`;
const QUERY_SECRET = `qs-${suffix}-secret`;
const table = `orders_${suffix}`;
const mongoDb = `srcdata_${suffix}`;

let h: Harness;
let files: Server;
let filesUrl = '';
const served: Record<string, { type: string; body: string | Buffer; status?: number; headers?: Record<string, string>; chunked?: boolean }> = {};
let dbs: CustomerDatabases;

function fileServer(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '').split('?')[0]!;
  if (path.startsWith('/private/') && req.headers.authorization !== HEADER_SECRET) return void res.writeHead(401).end();
  const f = served[path];
  if (!f) return void res.writeHead(404).end();
  const length = f.chunked ? {} : { 'content-length': String(Buffer.byteLength(f.body)) };
  res.writeHead(f.status ?? 200, { 'content-type': f.type, ...length, ...f.headers }).end(f.body);
}

const csvRows = (n: number) =>
  `id,country,amount,at\n${Array.from({ length: n }, (_, i) => `${i + 1},${['FR', 'DE', 'US'][i % 3]},${(i + 1) * 1.5},2024-01-${String((i % 28) + 1).padStart(2, '0')} 10:00:00`).join('\n')}\n`;

beforeAll(async () => {
  files = createServer(fileServer);
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', () => r()));
  filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  served['/private/orders.csv'] = { type: 'text/csv; charset=utf-8', body: csvRows(30) };
  served['/events.json'] = {
    type: 'application/json',
    body: JSON.stringify([
      { kind: 'a', n: 1, meta: { x: 1 } },
      { kind: 'b', n: 2.5, meta: null },
    ]),
  };
  served['/events.ndjson'] = { type: 'application/x-ndjson', body: '{"kind":"a","at":"2024-01-02T03:04:05Z"}\n{"kind":"b","at":"2024-01-03T03:04:05.5Z"}\n' };
  served['/page.html'] = { type: 'text/html', body: '<html><body>not data</body></html>' };
  served['/empty.csv'] = { type: 'text/csv', body: '' };
  served['/ragged.csv'] = { type: 'text/csv', body: 'a,b\n1,2\n3,4,5\n6,7\n' };
  let late = 'a,b\n';
  while (late.length < 1.2 * 1024 * 1024) late += '1234567,7654321\n';
  served['/ragged-late.csv'] = { type: 'text/csv', body: `${late}1,2,3\n` };
  served['/big.csv'] = { type: 'text/csv', body: `a\n${'1\n'.repeat(3 * 1024 * 1024)}` };
  served['/moved.csv'] = { type: 'text/plain', body: '', status: 301, headers: { location: 'http://10.0.0.1/orders.csv' } };

  dbs = await customerDatabases(mongoDb);
  await dbs.pg.query(`CREATE TABLE ${table} (id bigint PRIMARY KEY, country text, amount numeric(10,2), paid boolean, at timestamptz, on_day date, meta jsonb)`);
  await dbs.pg.query(
    `INSERT INTO ${table} SELECT i, (ARRAY['FR','DE','US'])[1 + i % 3], i * 1.25, i % 2 = 0, '2024-01-01T00:00:00Z'::timestamptz + i * interval '1 hour', DATE '2024-01-01' + i, jsonb_build_object('i', i) FROM generate_series(1, 500) i`,
  );
  await dbs.mysql.query(
    `CREATE TABLE ${table} (id BIGINT PRIMARY KEY, country VARCHAR(8), amount DECIMAL(10,2), at DATETIME, note TEXT, paid BOOLEAN, flag TINYINT(1), level TINYINT)`,
  );
  await dbs.mysql.query(
    `INSERT INTO ${table} VALUES ${Array.from({ length: 200 }, (_, i) => `(${i + 1}, '${['FR', 'DE', 'US'][i % 3]}', ${(i + 1) * 2}.50, '2024-02-01 00:00:00' + INTERVAL ${i} MINUTE, NULL, ${i % 2}, ${i % 4 === 3 ? 'NULL' : i % 4}, ${i % 5})`).join(',')}`,
  );
  await dbs.mongo
    .db(mongoDb)
    .collection('events')
    .insertMany([
      { kind: 'click', n: 1, at: new Date('2024-03-01T10:00:00Z'), user: { id: 7 } },
      { kind: 'click', n: 2, at: new Date('2024-03-02T10:00:00Z') },
      { kind: 'view', n: 3, at: new Date('2024-03-03T10:00:00Z') },
      { kind: 'click', n: 'four', at: new Date('2024-03-04T10:00:00Z') },
    ]);
  h = await startHarness({ SOURCE_MAX_BYTES: String(4 * 1024 * 1024) });
}, 60_000);

afterAll(async () => {
  await h?.stop();
  await dbs?.pg.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
  await dbs?.mysql.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
  await dbs?.close();
  files?.closeAllConnections();
  await new Promise((r) => files?.close(r));
});

/** Creates a source, expects 201 pending, waits for it to settle and returns the settled DTO. */
async function created(body: Record<string, unknown>, account?: string) {
  const res = await h.api('POST', '/v1/sources', { body, ...(account ? { account } : {}) });
  expect(res.status).toBe(201);
  const dto = strictSource.parse(res.body);
  expect(dto.status).toBe('pending');
  expect(res.headers.get('location')).toBe(`/v1/sources/${dto.id}`);
  return { created: dto, settled: strictSource.parse(await h.settled(dto.id, account)) };
}

/** The source once a sync of it has failed (a re-sync of a source with data leaves it ready). */
function lastSyncFailed(id: string, account?: string) {
  return waitFor(
    async () => {
      const r = await h.api('GET', `/v1/sources/${id}`, account ? { account } : {});
      return r.body?.lastSync?.status === 'failed' ? r.body : null;
    },
    { timeoutMs: 20_000, intervalMs: 50, what: `a failed sync of ${id}` },
  );
}

async function refused(body: Record<string, unknown>, path: string, reason: RegExp) {
  const res = await h.api('POST', '/v1/sources', { body });
  expect({ status: res.status, errors: res.body?.errors }).toMatchObject({ status: 400, errors: [{ path, message: expect.stringMatching(reason) }] });
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.text).not.toContain(PG_PASSWORD);
  return res.body as { detail: string };
}

describe('URL sources', () => {
  it('pulls a CSV over HTTP with a secret header and a token in the query; the API shows neither', async () => {
    const account = newId('acct');
    const body = { type: 'url', name: 'Orders file', url: `${filesUrl}/private/orders.csv?token=${QUERY_SECRET}`, headers: { Authorization: HEADER_SECRET } };
    const { created: dto, settled } = await created(body, account);
    expect(dto.config).toEqual({ url: `${filesUrl}/private/orders.csv?[redacted]`, headers: ['Authorization'] });
    expect(settled).toMatchObject({ status: 'ready', rowCount: 30, error: null });
    expect(settled.schema).toEqual(columns({ id: 'integer', country: 'string', amount: 'number', at: 'timestamp' }));
    const file = await h.svc.store.currentFile(account, dto.id);
    const sum = await h.svc.store.duck.run(`SELECT sum(amount) AS s, count(DISTINCT country) AS c FROM read_parquet(${sqlLiteral(file!)})`);
    expect(sum.rows[0]).toEqual({ s: (1.5 * (30 * 31)) / 2, c: 3 });
    const list = await h.api('GET', '/v1/sources', { account });
    expect(JSON.stringify(list.body)).not.toContain(QUERY_SECRET);
    expect(JSON.stringify(list.body)).not.toContain(HEADER_SECRET);

    // The remote file changes; a sync pulls it again.
    served['/private/orders.csv'] = { type: 'text/csv', body: csvRows(45) };
    const sync = await h.api('POST', `/v1/sources/${dto.id}/sync`, { account });
    expect(sync.status).toBe(202);
    const again = await h.settled(dto.id, account);
    expect(again).toMatchObject({ status: 'ready', rowCount: 45 });
    // The pulled file is not kept once loaded.
    const { readdir } = await import('node:fs/promises');
    expect((await readdir(h.svc.store.dir(account, dto.id))).filter((f) => f.startsWith('staging'))).toEqual([]);
  });

  it('pulls JSON and NDJSON files, nested values as JSON text', async () => {
    const json = await created({ type: 'url', name: 'J', url: `${filesUrl}/events.json` });
    expect(json.settled).toMatchObject({
      status: 'ready',
      rowCount: 2,
      schema: columns({ kind: 'string', n: 'number', meta: 'string' }),
    });
    const nd = await created({ type: 'url', name: 'N', url: `${filesUrl}/events.ndjson`, format: 'ndjson' });
    expect(nd.settled).toMatchObject({
      status: 'ready',
      rowCount: 2,
      schema: columns({ kind: 'string', at: 'timestamp' }),
    });
    expect(nd.created.config).toEqual({ url: `${filesUrl}/events.ndjson`, format: 'ndjson' });
  });

  it('refuses a wrong content type, an empty file, a malformed CSV line, an oversize file and a redirect, with the reason', async () => {
    await refused({ type: 'url', name: 'x', url: `${filesUrl}/page.html` }, 'url', /content type text\/html; expected CSV, JSON or NDJSON/);
    await refused({ type: 'url', name: 'x', url: `${filesUrl}/empty.csv` }, 'url', /^the file is empty$/);
    await refused({ type: 'url', name: 'x', url: `${filesUrl}/ragged.csv` }, 'url', /^the file is not valid CSV: .*consistent number of columns/);
    await refused({ type: 'url', name: 'x', url: `${filesUrl}/big.csv` }, 'url', /^the file is 6(\.0)? MiB, larger than the limit of 4 MiB$/);
    await refused({ type: 'url', name: 'x', url: `${filesUrl}/moved.csv` }, 'url', /answered 301, a redirect; redirects are not followed/);
    await refused({ type: 'url', name: 'x', url: `${filesUrl}/nope.csv` }, 'url', /^the server answered HTTP 404$/);
    await refused({ type: 'url', name: 'x', url: `${filesUrl}/private/orders.csv` }, 'url', /^the server answered HTTP 401$/);
  });

  it('marks a source failed, with the reason, when a bad line sits past what the check reads', async () => {
    const { settled } = await created({ type: 'url', name: 'late', url: `${filesUrl}/ragged-late.csv` });
    expect(settled.status).toBe('failed');
    expect(settled.error).toMatch(/^the data could not be loaded: the CSV could not be parsed/);
    expect(settled.error).not.toContain(h.datasetDir);
  });

  it('fails the re-sync of a file that grew past the size limit, keeping its last good data', async () => {
    served['/grows.csv'] = { type: 'text/csv', body: 'a\n1\n2\n' };
    const res = await h.api('POST', '/v1/sources', { body: { type: 'url', name: 'grows', url: `${filesUrl}/grows.csv` } });
    expect(res.status).toBe(201);
    expect(await h.settled(res.body.id)).toMatchObject({ status: 'ready', rowCount: 2 });
    served['/grows.csv'] = { type: 'text/csv', body: `a\n${'1\n'.repeat(3 * 1024 * 1024)}`, chunked: true };
    await h.api('POST', `/v1/sources/${res.body.id}/sync`);
    const failed = await lastSyncFailed(res.body.id);
    expect(failed).toMatchObject({ status: 'ready', error: null, rowCount: 2, lastSync: { status: 'failed', error: 'the data is larger than the limit of 4 MiB' } });
  });
});

describe('PostgreSQL sources', () => {
  it('reads a table with its own column types; the password is write-only and sealed at rest', async () => {
    const account = newId('acct');
    const { created: dto, settled } = await created({ type: 'postgres', name: 'PG orders', connection: { url: POSTGRES_URL }, table }, account);
    const u = new URL(POSTGRES_URL);
    expect(dto.config).toEqual({ host: '127.0.0.1', port: Number(u.port), database: 'dap', user: u.username, ssl: 'disable', hasPassword: true, table });
    expect(settled).toMatchObject({ status: 'ready', rowCount: 500, error: null });
    expect(settled.schema).toEqual(columns({ id: 'integer', country: 'string', amount: 'number', paid: 'boolean', at: 'timestamp', on_day: 'timestamp', meta: 'string' }));
    const file = await h.svc.store.currentFile(account, dto.id);
    const q = await h.svc.store.duck.run(`SELECT sum(amount) AS s, max("at") AS latest, min(on_day) AS first_day FROM read_parquet(${sqlLiteral(file!)})`);
    expect(q.rows[0]).toEqual({ s: (1.25 * 500 * 501) / 2, latest: '2024-01-21 20:00:00', first_day: '2024-01-02' });

    const raw = await h.svc.repo.coll.raw.findOne({ _id: dto.id as never });
    expect(raw!.credentials).toMatch(/^v1\./);
    expect(JSON.stringify(raw)).not.toContain(PG_PASSWORD);
    expect(JSON.stringify(raw)).not.toContain(POSTGRES_URL);

    // New rows upstream; a sync pulls the table again.
    await dbs.pg.query(`INSERT INTO ${table} SELECT i, 'NO', 1, true, now(), current_date, NULL FROM generate_series(501, 520) i`);
    await h.api('POST', `/v1/sources/${dto.id}/sync`, { account });
    expect(await h.settled(dto.id, account)).toMatchObject({ status: 'ready', rowCount: 520 });
  });

  it('reads a query given as parts of a connection, and keeps duplicate column names apart', async () => {
    const u = new URL(POSTGRES_URL);
    const { settled, created: dto } = await created({
      type: 'postgres',
      name: 'PG by country',
      connection: { host: u.hostname, port: Number(u.port), database: 'dap', user: u.username, password: PG_PASSWORD },
      query: `SELECT country, count(*) AS n, sum(amount) AS total, 1 AS n FROM ${table} WHERE id <= 500 GROUP BY country ORDER BY country;`,
    });
    expect(dto.config.query).toMatch(/^SELECT country/);
    expect(settled).toMatchObject({ status: 'ready', rowCount: 3 });
    expect(settled.schema.map((c) => c.name)).toEqual(['country', 'n', 'total', 'n_2']);
  });

  it('refuses an unreachable host, an unknown host, a wrong password, a missing table, bad SQL and a write', async () => {
    const u = new URL(POSTGRES_URL);
    const conn = { host: u.hostname, port: Number(u.port), database: 'dap', user: u.username, password: PG_PASSWORD };
    await refused({ type: 'postgres', name: 'x', connection: { ...conn, port: 1 }, table }, 'connection', /could not connect to PostgreSQL: the connection was refused/);
    await refused({ type: 'postgres', name: 'x', connection: { ...conn, host: 'no-such-host.invalid' }, table }, 'connection', /the host no-such-host\.invalid was not found/);
    const wrong = await refused({ type: 'postgres', name: 'x', connection: { ...conn, password: `wrong-${suffix}` }, table }, 'connection', /password authentication failed/);
    expect(JSON.stringify(wrong)).not.toContain(`wrong-${suffix}`);
    await refused({ type: 'postgres', name: 'x', connection: conn, table: `missing_${suffix}` }, 'table', /relation "missing_\w+" does not exist/);
    await refused({ type: 'postgres', name: 'x', connection: conn, query: 'SELECT 1 FROM' }, 'query', /syntax error at end of input/);
    await refused(
      { type: 'postgres', name: 'x', connection: conn, query: 'SELEC 1' },
      'query',
      /^only one read-only SELECT is allowed \(SELECT, WITH … SELECT, VALUES or TABLE\), not SELEC$/,
    );
    await refused(
      { type: 'postgres', name: 'x', connection: conn, query: `DELETE FROM ${table}` },
      'query',
      /^only one read-only SELECT is allowed \(SELECT, WITH … SELECT, VALUES or TABLE\), not DELETE$/,
    );
    await refused(
      { type: 'postgres', name: 'x', connection: conn, query: `SELECT 1; DROP TABLE ${table}` },
      'query',
      /^only one statement is allowed, a read-only SELECT; this query has 2$/,
    );
    await refused(
      { type: 'postgres', name: 'x', connection: conn, query: `WITH d AS (SELECT 1) DELETE FROM ${table}` },
      'query',
      /^only one read-only SELECT is allowed, not DELETE$/,
    );
    await refused(
      { type: 'postgres', name: 'x', connection: conn, query: `WITH d AS (DELETE FROM ${table} RETURNING id) SELECT * FROM d` },
      'query',
      /^the query tried to write; a source may only read$/,
    );
    expect((await dbs.pg.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n).toBeGreaterThanOrEqual(500);
  });

  it("refuses a source without a password when the server asks for one (400, not 500), and never sends the service's own PGPASSWORD", async () => {
    const u = new URL(POSTGRES_URL);
    const conn = { host: u.hostname, port: Number(u.port), database: 'dap', user: u.username };
    const message = `PostgreSQL asks for a password for the user ${u.username} and the source has none: give connection.password`;
    await refused({ type: 'postgres', name: 'x', connection: conn, table }, 'connection', new RegExp(`^${message}$`));
    u.password = '';
    await refused({ type: 'postgres', name: 'x', connection: { url: u.toString() }, table }, 'connection', new RegExp(`^${message}$`));
    const saved = process.env.PGPASSWORD;
    process.env.PGPASSWORD = PG_PASSWORD;
    try {
      await refused({ type: 'postgres', name: 'x', connection: conn, table }, 'connection', new RegExp(`^${message}$`));
    } finally {
      if (saved === undefined) delete process.env.PGPASSWORD;
      else process.env.PGPASSWORD = saved;
    }
    // The same connection with its password is accepted (positive control).
    expect((await h.api('POST', '/v1/sources', { body: { type: 'postgres', name: 'x', connection: { ...conn, password: PG_PASSWORD }, table } })).status).toBe(201);
  });

  it('fails the re-sync with the reason when its table disappears, keeping the last good data', async () => {
    const t2 = `${table}_gone`;
    await dbs.pg.query(`CREATE TABLE ${t2} AS SELECT 1 AS a`);
    const { created: dto } = await created({ type: 'postgres', name: 'gone', connection: { url: POSTGRES_URL }, table: t2 });
    await dbs.pg.query(`DROP TABLE ${t2}`);
    await h.api('POST', `/v1/sources/${dto.id}/sync`);
    const failed = await lastSyncFailed(dto.id);
    expect(failed).toMatchObject({ status: 'ready', error: null, rowCount: 1 });
    expect(failed.lastSync.error).toMatch(/^PostgreSQL could not run the read of the table: relation ".*_gone" does not exist/);
  });
});

describe('MySQL/MariaDB sources', () => {
  it('reads a table and a query, the password write-only', async () => {
    const account = newId('acct');
    const { created: dto, settled } = await created({ type: 'mysql', name: 'My orders', connection: { url: MYSQL_URL }, table }, account);
    expect(dto.config).toMatchObject({ host: '127.0.0.1', database: 'dap', hasPassword: true, table });
    expect(JSON.stringify(dto)).not.toContain(new URL(MYSQL_URL).password);
    expect(settled).toMatchObject({ status: 'ready', rowCount: 200 });
    expect(settled.schema).toEqual(
      columns({ id: 'integer', country: 'string', amount: 'number', at: 'timestamp', note: 'string', paid: 'boolean', flag: 'boolean', level: 'integer' }),
    );
    // BOOLEAN and TINYINT(1) hold true/false (any value but 0 is true, as in MySQL); a wider TINYINT stays a number.
    const file = await h.svc.store.currentFile(account, dto.id);
    const flags = await h.svc.store.duck.run(`SELECT id, paid, flag, level FROM read_parquet(${sqlLiteral(file!)}) WHERE id <= 4 ORDER BY id`);
    expect(flags.rows).toEqual([
      { id: 1, paid: false, flag: false, level: 0 },
      { id: 2, paid: true, flag: true, level: 1 },
      { id: 3, paid: false, flag: true, level: 2 },
      { id: 4, paid: true, flag: null, level: 3 },
    ]);
    const q = await created({ type: 'mysql', name: 'My top', connection: { url: MYSQL_URL }, query: `SELECT country, SUM(amount) AS total FROM ${table} GROUP BY country` });
    expect(q.settled).toMatchObject({
      status: 'ready',
      rowCount: 3,
      schema: columns({ country: 'string', total: 'number' }),
    });
  });

  it('refuses a wrong password, a missing table and a statement that returns nothing', async () => {
    const u = new URL(MYSQL_URL);
    u.password = `wrong-${suffix}`;
    const wrong = await refused({ type: 'mysql', name: 'x', connection: { url: u.toString() }, table }, 'connection', /MySQL refused the connection: Access denied/);
    expect(JSON.stringify(wrong)).not.toContain(`wrong-${suffix}`);
    await refused({ type: 'mysql', name: 'x', connection: { url: MYSQL_URL }, table: `missing_${suffix}` }, 'table', /doesn't exist/);
    await refused({ type: 'mysql', name: 'x', connection: { url: MYSQL_URL }, query: `DELETE FROM ${table}` }, 'query', /^only one read-only SELECT is allowed .*, not DELETE$/);
    await refused({ type: 'mysql', name: 'x', connection: { url: MYSQL_URL }, query: `SELECT 1; DELETE FROM ${table}` }, 'query', /^only one statement is allowed/);
    await refused({ type: 'mysql', name: 'x', connection: { url: MYSQL_URL }, query: 'SELECT 1 FROM' }, 'query', /You have an error in your SQL syntax/);
    await refused({ type: 'mysql', name: 'x', connection: { url: MYSQL_URL.replace(/:\d+\//, ':1/') }, table }, 'connection', /connection was refused/);
  });
});

describe('MongoDB sources', () => {
  it('reads a collection through a filter; mixed-type fields widen to string', async () => {
    const { settled, created: dto } = await created({
      type: 'mongodb',
      name: 'Clicks',
      connection: { url: `${dbs.mongoUrl}/${mongoDb}` },
      collection: 'events',
      filter: '{"kind": "click", "at": {"$gte": {"$date": "2024-03-01T00:00:00Z"}}}',
    });
    expect(dto.config).toMatchObject({ database: mongoDb, collection: 'events', filter: expect.stringContaining('"click"'), hasPassword: false });
    expect(settled).toMatchObject({ status: 'ready', rowCount: 3 });
    const types = Object.fromEntries(settled.schema.map((c) => [c.name, c.type]));
    expect(types).toMatchObject({ _id: 'string', kind: 'string', n: 'string', at: 'timestamp', user: 'string' });
  });

  it('refuses a code-running filter before connecting, and a missing collection', async () => {
    await refused(
      { type: 'mongodb', name: 'x', connection: { url: `${dbs.mongoUrl}/${mongoDb}` }, collection: 'events', filter: '{"$where": "sleep(5000)"}' },
      'filter',
      /\$where is not allowed/,
    );
    await refused(
      {
        type: 'mongodb',
        name: 'x',
        connection: { url: `${dbs.mongoUrl}/${mongoDb}` },
        collection: 'events',
        filter: '{"n": {"$function": {"body": "x", "args": [], "lang": "js"}}}',
      },
      'filter',
      /\$function is not allowed/,
    );
    await refused({ type: 'mongodb', name: 'x', connection: { url: `${dbs.mongoUrl}/${mongoDb}` }, collection: 'nope' }, 'collection', /does not exist/);
    // A refused connection is answered at once, not after server selection's timeout (3 s here, so the old
    // behaviour never took less; the bound leaves room for a loaded machine).
    const started = Date.now();
    await refused(
      { type: 'mongodb', name: 'x', connection: { url: 'mongodb://127.0.0.1:1/x' }, collection: 'c' },
      'connection',
      /could not connect to MongoDB: the connection was refused/,
    );
    expect(Date.now() - started).toBeLessThan(2_500);
  });
});

describe('request validation and tenancy', () => {
  it('refuses malformed connection settings with one entry per field', async () => {
    const bad = async (body: unknown, path: string) => {
      const res = await h.api('POST', '/v1/sources', { body });
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    };
    await bad({ type: 'postgres', name: 'x', connection: { url: POSTGRES_URL }, table, query: 'SELECT 1' }, 'table');
    await bad({ type: 'postgres', name: 'x', connection: { url: POSTGRES_URL } }, 'table');
    await bad({ type: 'postgres', name: 'x', connection: { url: MYSQL_URL }, table }, 'connection.url');
    await bad({ type: 'postgres', name: 'x', connection: { url: POSTGRES_URL, host: 'h' }, table }, 'connection.url');
    await bad({ type: 'mysql', name: 'x', connection: { host: 'h', database: 'd' }, table }, 'connection.user');
    await bad({ type: 'postgres', name: 'x', connection: { url: POSTGRES_URL }, table: 'a;drop' }, 'table');
    await bad({ type: 'mongodb', name: 'x', connection: { url: 'mongodb+srv://u:p@cluster.example.com/db' }, collection: 'c' }, 'connection.url');
    await bad({ type: 'url', name: 'x', url: 'ftp://example.com/x.csv' }, 'url');
    await bad({ type: 'url', name: 'x', url: 'https://user:pw@example.com/x.csv' }, 'url');
    await bad({ type: 'url', name: 'x', url: 'https://example.com/x.csv', headers: { Host: 'evil' } }, 'headers.Host');
  });

  it('answers 404 for another account’s remote source', async () => {
    const res = await h.api('POST', '/v1/sources', { body: { type: 'url', name: 'mine', url: `${filesUrl}/events.json` } });
    expect(res.status).toBe(201);
    const other = newId('acct');
    expect((await h.api('GET', `/v1/sources/${res.body.id}`, { account: other })).status).toBe(404);
    expect((await h.api('POST', `/v1/sources/${res.body.id}/sync`, { account: other })).status).toBe(404);
    await h.settled(res.body.id);
  });
});

describe('secrets', () => {
  it('never wrote a password, a secret header or a query token to the log', () => {
    const log = h.logs.text;
    expect(log.length).toBeGreaterThan(1_000);
    for (const secret of [PG_PASSWORD, new URL(MYSQL_URL).password, HEADER_SECRET, QUERY_SECRET, `wrong-${suffix}`]) expect(log).not.toContain(secret);
  });
});
