import { MongoClient, type Db, type MongoClientOptions } from 'mongodb';
import { describeError, retryDuringStartup, type StartupLogger } from '@dap/config';
import { createLogger } from '@dap/logger';

export interface MongoHandle {
  client: MongoClient;
  db: Db;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface MongoUrlParts {
  srv: boolean;
  hosts: string[];
  /** Connection-string options, keys lower-cased (the driver reads them case-insensitively). */
  options: Map<string, string>;
}

/** Splits a connection string without the driver (a WHATWG URL cannot hold several hosts). */
export function parseMongoUrl(url: string): MongoUrlParts {
  const srv = url.startsWith('mongodb+srv://');
  const rest = url.slice(srv ? 'mongodb+srv://'.length : url.startsWith('mongodb://') ? 'mongodb://'.length : 0);
  const end = rest.search(/[/?]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  const hosts = authority
    .slice(authority.lastIndexOf('@') + 1)
    .split(',')
    .filter(Boolean);
  const q = rest.indexOf('?');
  const options = new Map<string, string>();
  if (q >= 0) for (const [k, v] of new URLSearchParams(rest.slice(q + 1))) options.set(k.toLowerCase(), v);
  return { srv, hosts, options };
}

/** What a log line may say about a MongoDB URL: scheme and hosts, never credentials or options. */
export function describeMongoUrl(url: string): string {
  const { srv, hosts } = parseMongoUrl(url);
  return `${srv ? 'mongodb+srv' : 'mongodb'}://${hosts.join(',')}`;
}

/**
 * Short timeouts so an unavailable database becomes a quick 503, never a hanging request. A URL that names
 * a single host and no replica set is the local wire-compatible server or a standalone mongod: talk to it
 * directly and without retryable writes (that server has none). A `mongodb+srv://`, several hosts or a
 * `replicaSet` keep the driver's defaults (replica-set discovery, retryable writes), and an option the URL
 * sets itself is never overridden.
 */
export function mongoClientOptions(url: string): MongoClientOptions {
  const { srv, hosts, options } = parseMongoUrl(url);
  const standalone = !srv && hosts.length === 1 && !options.has('replicaset') && !options.has('loadbalanced');
  const defaults: MongoClientOptions = {
    serverSelectionTimeoutMS: 3_000,
    connectTimeoutMS: 3_000,
    socketTimeoutMS: 30_000,
    maxPoolSize: 20,
    ...(standalone ? { retryWrites: false, directConnection: true } : {}),
  };
  return Object.fromEntries(Object.entries(defaults).filter(([k]) => !options.has(k.toLowerCase())));
}

const RETRIED_NAMES = new Set(['MongoServerSelectionError', 'MongoNetworkError', 'MongoNetworkTimeoutError', 'MongoTopologyClosedError']);
/** Server answers that mean "not ready yet" (shutting down, electing, not primary), not "wrong". */
const RETRIED_CODES = new Set([6, 7, 89, 91, 189, 10107, 11600, 11602, 13435, 13436]);
const RETRIED_SYSCALL = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ETIMEOUT', 'ENOTFOUND', 'EAI_AGAIN', 'ESERVFAIL']);

/** Whether waiting may help: an unreachable or busy server yes; bad credentials or a malformed URL no. */
export function isRetriableAtStartup(err: unknown): boolean {
  const e = err as { name?: string; code?: unknown } | null;
  if (!e) return false;
  if (RETRIED_NAMES.has(e.name ?? '')) return true;
  if (typeof e.code === 'number') return RETRIED_CODES.has(e.code);
  return typeof e.code === 'string' && RETRIED_SYSCALL.has(e.code);
}

export interface ConnectMongoOptions {
  /** Retry period at start-up (config STARTUP_TIMEOUT_MS); default 30 s. */
  startupTimeoutMs?: number;
  /** Where retries are logged; default a logger on stderr (stdout may be a CLI's JSON output). */
  logger?: StartupLogger;
}

/**
 * Connects, retrying with backoff for the start-up period while the server does not answer (each attempt
 * waits up to the 3-s server selection timeout), then fails with the last error.
 */
export async function connectMongo(url: string, dbName: string, opts: ConnectMongoOptions = {}): Promise<MongoHandle> {
  const logger = opts.logger ?? createLogger({ name: 'mongo', level: 'info', destination: process.stderr });
  const where = describeMongoUrl(url);
  const clientOptions = mongoClientOptions(url);
  const client = await retryDuringStartup({
    what: `MongoDB at ${where}`,
    timeoutMs: opts.startupTimeoutMs ?? 30_000,
    logger,
    retriable: isRetriableAtStartup,
    attempt: async () => {
      const c = new MongoClient(url, clientOptions);
      try {
        return await c.connect();
      } catch (err) {
        await c.close().catch((closeErr: unknown) => logger.warn({ err: describeError(closeErr) }, 'closing a failed MongoDB client failed'));
        throw err;
      }
    },
  });
  const db = client.db(dbName);
  return {
    client,
    db,
    ping: async () => void (await db.command({ ping: 1 })),
    close: () => client.close(),
  };
}
