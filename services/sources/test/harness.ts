import { randomBytes } from 'node:crypto';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { MongoClient } from 'mongodb';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { newId } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { callerHeaders, http, stackEnv, TEST_INTERNAL_SECRET, uniqueSuffix, waitFor } from '@dap/testing';
import type { OutboundGuard } from '@dap/netguard';
import { loadSourcesConfig } from '../src/config.ts';
import { startSources, type RunningSources } from '../src/index.ts';

/** Every log line the service writes, kept to prove that no secret is ever logged. */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.lines.push(chunk.toString('utf8'));
    done();
  }
  get text(): string {
    return this.lines.join('');
  }
}

export interface Harness {
  svc: RunningSources;
  logs: LogCapture;
  datasetDir: string;
  dbName: string;
  api(method: string, path: string, opts?: { body?: unknown; account?: string }): ReturnType<typeof http>;
  settled(id: string, account?: string, timeoutMs?: number): Promise<Record<string, any>>; // eslint-disable-line @typescript-eslint/no-explicit-any -- asserted field by field
  stop(): Promise<void>;
}

/** Starts the service in-process on the test stack, with its own database, topics and dataset directory. */
export async function startHarness(env: Record<string, string | undefined> = {}, deps: { guard?: OutboundGuard } = {}): Promise<Harness> {
  const suffix = uniqueSuffix();
  const datasetDir = await mkdtemp(join(tmpdir(), `dap-sources-${suffix}-`));
  const logs = new LogCapture();
  const dbName = `src_${suffix}`;
  const config = loadSourcesConfig({
    ...stackEnv(),
    MONGO_DB: dbName,
    KAFKA_TOPIC_PREFIX: `t${suffix}.`,
    INTERNAL_SECRET: TEST_INTERNAL_SECRET,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'debug',
    DATASET_DIR: datasetDir,
    SYNC_SWEEP_MS: '300',
    SYNC_LEASE_MS: '5000',
    INSTANCE_ID: `sources-test-${suffix}`,
    SOURCE_CREDENTIALS_KEY: randomBytes(32).toString('base64'),
    ALLOW_PRIVATE_TARGETS: 'true',
    PLATFORM_ENDPOINTS: new URL(stackEnv().REDIS_URL).host,
    SOURCE_CONNECT_TIMEOUT_MS: '3000',
    SOURCE_CHECK_TIMEOUT_MS: '10000',
    ...env,
  });
  const logger = createLogger({ name: 'sources', level: 'trace', destination: logs });
  const svc = await startSources(config, { logger, ...deps });
  const defaultAccount = newId('acct');
  const api: Harness['api'] = (method, path, opts = {}) => http(method, `${svc.url}${path}`, { body: opts.body, headers: callerHeaders(opts.account ?? defaultAccount) });
  return {
    svc,
    logs,
    datasetDir,
    dbName,
    api,
    settled: (id, account, timeoutMs = 20_000) =>
      waitFor(
        async () => {
          const r = await api('GET', `/v1/sources/${id}`, account ? { account } : {});
          return r.body?.status === 'ready' || r.body?.status === 'failed' ? r.body : null;
        },
        { timeoutMs, what: `source ${id} to settle`, intervalMs: 50 },
      ),
    stop: async () => {
      await svc.stop();
      await rm(datasetDir, { recursive: true, force: true });
    },
  };
}

/**
 * A TCP forwarder on its own loopback port to `host:port`: a customer's database on another endpoint than the
 * platform's own. The tests' MongoDB is the platform's, which the SSRF guard refuses as a source.
 */
export async function forwardTo(host: string, port: number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createNetServer((client) => {
    const upstream = connect({ host, port });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** The test stack's PostgreSQL, MariaDB and MongoDB, connected to as a customer's databases are. */
export interface CustomerDatabases {
  pg: pg.Client;
  mysql: mysql.Connection;
  mongo: MongoClient;
  /** The MongoDB behind a port of its own (see forwardTo), without a database: as a source, the platform's own is refused. */
  mongoUrl: string;
  /** Drops `mongoDb` and closes every connection (each test drops its own SQL tables first). */
  close(): Promise<void>;
}

export async function customerDatabases(mongoDb: string): Promise<CustomerDatabases> {
  const { POSTGRES_URL, MYSQL_URL, MONGO_URL } = stackEnv();
  const pgc = new pg.Client(POSTGRES_URL);
  await pgc.connect();
  const my = await mysql.createConnection(MYSQL_URL);
  const mongo = new MongoClient(MONGO_URL, { directConnection: true });
  await mongo.connect();
  const m = new URL(MONGO_URL);
  const forwarder = await forwardTo(m.hostname, Number(m.port));
  return {
    pg: pgc,
    mysql: my,
    mongo,
    mongoUrl: `mongodb://127.0.0.1:${forwarder.port}`,
    close: async () => {
      await mongo
        .db(mongoDb)
        .dropDatabase()
        .catch(() => undefined);
      await pgc.end();
      await my.end();
      await mongo.close();
      await forwarder.close();
    },
  };
}
