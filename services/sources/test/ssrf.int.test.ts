import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { stackEnv } from '@dap/testing';
import { OutboundGuard, systemResolver } from '@dap/netguard';
import { MongoClient } from 'mongodb';
import { newId } from '@dap/contracts';
import { forwardTo, startHarness, type Harness } from './harness.ts';

/**
 * With ALLOW_PRIVATE_TARGETS=false (production), no source may reach loopback, private, link-local or
 * unique-local addresses, in any spelling, directly or through a name, for files and databases alike.
 * A file server on loopback would answer every one of these if the guard let the request through.
 */
let strict: Harness;
let open: Harness;
let noKey: Harness;
let dialling: Harness;
const resolutions: Record<string, number> = {};

/** Test names: `*.loop.test` resolve to loopback; `rebind.test` answers loopback once, then a multicast address. */
async function fakeDns(host: string): Promise<LookupAddress[]> {
  resolutions[host] = (resolutions[host] ?? 0) + 1;
  if (host.endsWith('.loop.test')) return [{ address: '127.0.0.1', family: 4 }];
  if (host === 'rebind.test') return [{ address: resolutions[host] === 1 ? '127.0.0.1' : '224.0.0.1', family: 4 }];
  return systemResolver(host);
}
let files: Server;
let port = 0;
let hits = 0;

beforeAll(async () => {
  files = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'text/csv' }).end('a,b\n1,2\n');
  });
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', () => r()));
  port = (files.address() as AddressInfo).port;
  [strict, open, noKey, dialling] = await Promise.all([
    startHarness({ ALLOW_PRIVATE_TARGETS: 'false', SYNC_CONCURRENCY: '0' }),
    startHarness({ ALLOW_PRIVATE_TARGETS: '127.0.0.0/8,::1/128' }),
    startHarness({ SOURCE_CREDENTIALS_KEY: undefined, SYNC_CONCURRENCY: '0' }),
    startHarness({}, { guard: new OutboundGuard({ allowPrivate: true, resolve: fakeDns }) }),
  ]);
}, 60_000);

afterAll(async () => {
  await strict?.stop();
  await open?.stop();
  await noKey?.stop();
  await dialling?.stop();
  files?.closeAllConnections();
  await new Promise((r) => files?.close(r));
});

async function refusedAs(body: Record<string, unknown>, path: string, reason: RegExp) {
  const res = await strict.api('POST', '/v1/sources', { body });
  expect({ status: res.status, errors: res.body?.errors }).toMatchObject({ status: 422, errors: [{ path, message: expect.stringMatching(reason) }] });
}

describe('SSRF guard with ALLOW_PRIVATE_TARGETS=false', () => {
  it.each([
    ['loopback', 'http://127.0.0.1:PORT/x.csv', /127\.0\.0\.1 is not allowed \(loopback\)/],
    ['loopback (another)', 'http://127.1.2.3:80/x.csv', /not allowed \(loopback\)/],
    ['private 10/8', 'http://10.0.0.1/x.csv', /10\.0\.0\.1 is not allowed \(private\)/],
    ['private 192.168/16', 'http://192.168.1.1/x.csv', /not allowed \(private\)/],
    ['private 172.16/12', 'http://172.16.0.1/x.csv', /not allowed \(private\)/],
    ['link-local (cloud metadata)', 'http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254 is not allowed \(link-local\)/],
    ['IPv6 loopback', 'http://[::1]:PORT/x.csv', /::1 is not allowed \(loopback\)/],
    ['IPv6 unique-local', 'http://[fc00::1]/x.csv', /not allowed \(unique-local\)/],
    ['IPv6 link-local', 'http://[fe80::1]/x.csv', /not allowed \(link-local\)/],
    ['IPv4-mapped IPv6 loopback', 'http://[::ffff:127.0.0.1]:PORT/x.csv', /not allowed \(loopback\)/],
    ['unspecified', 'http://0.0.0.0:PORT/x.csv', /not allowed \(unspecified\)/],
    ['a name that resolves to loopback', 'http://localhost:PORT/x.csv', /the host localhost resolves to \S+, which is not allowed \(loopback\)/],
  ])('refuses a URL source on %s', async (_what, url, reason) => {
    const before = hits;
    await refusedAs({ type: 'url', name: 'x', url: url.replace('PORT', String(port)) }, 'url', reason);
    expect(hits).toBe(before);
  });

  it('refuses database hosts on loopback, private and link-local addresses and names', async () => {
    const pgUrl = new URL(stackEnv().POSTGRES_URL);
    const mongoPort = Number(new URL(stackEnv().MONGO_URL).port) + 1; // not the platform's MongoDB, which is refused first
    await refusedAs({ type: 'postgres', name: 'x', connection: { url: pgUrl.toString() }, table: 't' }, 'connection', /127\.0\.0\.1 is not allowed \(loopback\)/);
    await refusedAs(
      { type: 'postgres', name: 'x', connection: { host: 'localhost', port: Number(pgUrl.port), database: 'dap', user: 'dap', password: 'x' }, table: 't' },
      'connection',
      /localhost resolves to/,
    );
    await refusedAs(
      { type: 'mysql', name: 'x', connection: { host: '::1', database: 'dap', user: 'dap', password: 'x' }, table: 't' },
      'connection',
      /::1 is not allowed \(loopback\)/,
    );
    await refusedAs({ type: 'mysql', name: 'x', connection: { host: '169.254.169.254', database: 'dap', user: 'dap' }, table: 't' }, 'connection', /link-local/);
    await refusedAs({ type: 'mongodb', name: 'x', connection: { url: `mongodb://localhost:${mongoPort}/db` }, collection: 'c' }, 'connection', /localhost resolves to/);
    await refusedAs({ type: 'mongodb', name: 'x', connection: { url: `mongodb://[::ffff:127.0.0.1]:${mongoPort}/db` }, collection: 'c' }, 'connection', /not allowed \(loopback\)/);
  });

  it('still accepts upload sources', async () => {
    expect((await strict.api('POST', '/v1/sources', { body: { type: 'inline', name: 'ok', rows: [{ a: 1 }] } })).status).toBe(201);
  });
});

describe("the platform's own endpoints, with loopback allowed (ALLOW_PRIVATE_TARGETS=127.0.0.0/8,::1/128)", () => {
  const env = stackEnv();
  const mongo = new URL(env.MONGO_URL);
  const kafkaPort = Number(env.KAFKA_BROKERS.split(',')[0]!.split(':')[1]);
  const redis = new URL(env.REDIS_URL);
  const OWN = /is one of this platform's own endpoints, which sources and webhooks may not reach/;

  async function refusedByOpen(body: Record<string, unknown>, path: string) {
    const res = await open.api('POST', '/v1/sources', { body });
    expect({ status: res.status, type: res.headers.get('content-type'), errors: res.body?.errors }).toMatchObject({
      status: 422,
      type: expect.stringMatching(/^application\/problem\+json/),
      errors: [{ path, message: expect.stringMatching(OWN) }],
    });
  }

  it("refuses a MongoDB source on the platform's own MongoDB, so one account cannot read another's reports; the same server on another endpoint is read (positive control)", async () => {
    const victim = newId('acct');
    const dbName = `dap_analytics_${newId('req').slice(-8).toLowerCase()}`;
    const client = new MongoClient(env.MONGO_URL, { directConnection: true });
    await client.connect();
    const forwarder = await forwardTo(mongo.hostname, Number(mongo.port));
    try {
      await client.db(dbName).collection('reports').insertOne({ accountId: victim, secret: 'victim-row' });
      const filter = JSON.stringify({ accountId: victim });
      for (const url of [
        `mongodb://${mongo.host}/${dbName}`,
        `mongodb://localhost:${mongo.port}/${dbName}`,
        `mongodb://127.0.0.2:${mongo.port}/${dbName}`,
        `mongodb://[::ffff:127.0.0.1]:${mongo.port}/${dbName}`,
      ]) {
        await refusedByOpen({ type: 'mongodb', name: 'x', connection: { url }, collection: 'reports', filter }, 'connection');
      }
      await refusedByOpen(
        { type: 'mongodb', name: 'x', connection: { host: '127.0.0.1', port: Number(mongo.port), database: dbName }, collection: 'reports', filter },
        'connection',
      );
      const allowed = await open.api('POST', '/v1/sources', {
        body: { type: 'mongodb', name: 'x', connection: { url: `mongodb://127.0.0.1:${forwarder.port}/${dbName}` }, collection: 'reports', filter },
      });
      expect(allowed.status).toBe(201);
      expect(await open.settled(allowed.body.id)).toMatchObject({ status: 'ready', rowCount: 1 });
    } finally {
      await client.db(dbName).dropDatabase();
      await client.close();
      await forwarder.close();
    }
  });

  it('refuses URL sources on its Kafka broker, its Redis (PLATFORM_ENDPOINTS) and the service itself, and never connects to them', async () => {
    const ownPort = open.svc.port;
    await refusedByOpen({ type: 'url', name: 'x', url: `http://127.0.0.1:${kafkaPort}/x.csv` }, 'url');
    await refusedByOpen({ type: 'url', name: 'x', url: `http://${redis.host}/x.csv` }, 'url');
    await refusedByOpen({ type: 'url', name: 'x', url: `http://localhost:${ownPort}/v1/sources` }, 'url');
    await refusedByOpen({ type: 'url', name: 'x', url: `http://[::1]:${ownPort}/metrics` }, 'url');
    // A file server on loopback that is not the platform's is read (positive control).
    const before = hits;
    const ok = await open.api('POST', '/v1/sources', { body: { type: 'url', name: 'ok', url: `http://127.0.0.1:${port}/x.csv` } });
    expect(ok.status).toBe(201);
    expect(await open.settled(ok.body.id)).toMatchObject({ status: 'ready', rowCount: 1 });
    expect(hits).toBeGreaterThan(before);
  });

  it('refuses private ranges outside the list', async () => {
    const res = await open.api('POST', '/v1/sources', { body: { type: 'url', name: 'x', url: 'http://10.0.0.1/x.csv' } });
    expect([res.status, res.body.errors?.[0]?.message]).toEqual([422, 'could not download the file: the address 10.0.0.1 is not allowed (private)']);
  });
});

describe('the address actually dialled', () => {
  it('PostgreSQL and MySQL connect to the address the guard resolved and checked (names no system resolver knows)', async () => {
    const pg = new URL(stackEnv().POSTGRES_URL);
    pg.hostname = 'pg.loop.test';
    const my = new URL(stackEnv().MYSQL_URL);
    my.hostname = 'mysql.loop.test';
    const a = await dialling.api('POST', '/v1/sources', { body: { type: 'postgres', name: 'pinned', connection: { url: pg.toString() }, query: 'SELECT 1 AS one' } });
    const b = await dialling.api('POST', '/v1/sources', { body: { type: 'mysql', name: 'pinned', connection: { url: my.toString() }, query: 'SELECT 1 AS one' } });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.config.host).toBe('pg.loop.test');
    expect(await dialling.settled(a.body.id)).toMatchObject({ status: 'ready', rowCount: 1 });
    expect(await dialling.settled(b.body.id)).toMatchObject({ status: 'ready', rowCount: 1 });
  });

  it('MongoDB checks every address the driver dials: a name that changes to a refused address after the check is caught', async () => {
    const mongoPort = new URL(stackEnv().MONGO_URL).port;
    const res = await dialling.api('POST', '/v1/sources', { body: { type: 'mongodb', name: 'x', connection: { url: `mongodb://rebind.test:${mongoPort}/db` }, collection: 'c' } });
    expect(res.status).toBe(422);
    expect(res.body.errors[0]).toMatchObject({ path: 'connection', message: expect.stringMatching(/224\.0\.0\.1, which is not allowed \(multicast\)/) });
    expect(resolutions['rebind.test']).toBeGreaterThanOrEqual(2);
  });
});

describe('without SOURCE_CREDENTIALS_KEY', () => {
  it('refuses remote sources with 503 (credentials could not be stored safely) and still takes uploads', async () => {
    const res = await noKey.api('POST', '/v1/sources', { body: { type: 'url', name: 'x', url: `http://127.0.0.1:${port}/x.csv` } });
    expect(res.status).toBe(503);
    expect(res.body.detail).toMatch(/SOURCE_CREDENTIALS_KEY is not configured/);
    expect((await noKey.api('POST', '/v1/sources', { body: { type: 'csv', name: 'ok', csv: 'a\n1\n' } })).status).toBe(201);
  });
});
