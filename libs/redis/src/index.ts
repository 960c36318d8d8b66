import { Redis, type RedisOptions } from 'ioredis';

/**
 * Where Redis is: a URL, `redis://` or `rediss://` (TLS) to one server, or `redis+sentinel://` /
 * `rediss+sentinel://` to Sentinels that name the current master:
 * `redis+sentinel://[user:password@]s1:26379,s2:26379/<master name>[/<db>]`. Or a `redis://` / `rediss://`
 * URL for the credentials, database and TLS plus `sentinels` and `sentinelName` (REDIS_SENTINELS and
 * REDIS_SENTINEL_NAME); the URL's host is then not dialled.
 */
export interface RedisTarget {
  url: string;
  sentinels?: string[] | undefined;
  sentinelName?: string | undefined;
  /** For Sentinels that require a password of their own (their `requirepass`). */
  sentinelPassword?: string | undefined;
}

export class RedisTargetError extends Error {
  override name = 'RedisTargetError';
}

const SENTINEL_URL = /^(rediss?)\+sentinel:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#]+)\/([^/?#]+)(?:\/(\d+))?\/?$/;

function hostPort(s: string, defaultPort: number): { host: string; port: number } {
  const m = /^\[?([^\]]+?)\]?(?::(\d+))?$/.exec(s.trim());
  if (!m || !m[1]) throw new RedisTargetError(`not a host[:port]: "${s}"`);
  return { host: m[1], port: m[2] ? Number(m[2]) : defaultPort };
}

/**
 * The ioredis connection options of a target (a pure mapping, unit-tested): Sentinel addresses, master name,
 * credentials, database and TLS. Credentials of the URL go to the master, never into an error message.
 */
export function redisConnectionOptions(target: RedisTarget | string): RedisOptions {
  const t: RedisTarget = typeof target === 'string' ? { url: target } : target;
  const sentinel = SENTINEL_URL.exec(t.url);
  if (sentinel) {
    const [, scheme, username, password, hosts, name, db] = sentinel;
    const tls = scheme === 'rediss';
    return {
      sentinels: hosts!.split(',').map((h) => hostPort(h, 26379)),
      name: decodeURIComponent(name!),
      ...(username ? { username: decodeURIComponent(username) } : {}),
      ...(password ? { password: decodeURIComponent(password) } : {}),
      ...(db ? { db: Number(db) } : {}),
      ...(t.sentinelPassword ? { sentinelPassword: t.sentinelPassword } : {}),
      ...(tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
    };
  }
  if (/^rediss?\+sentinel:/.test(t.url)) throw new RedisTargetError('a Sentinel URL looks like redis+sentinel://[user:password@]host:26379[,host:26379…]/<master name>[/<db>]');
  let url: URL;
  try {
    url = new URL(t.url);
  } catch {
    throw new RedisTargetError('REDIS_URL is not a URL');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new RedisTargetError(`unsupported Redis URL scheme "${url.protocol}"`);
  const tls = url.protocol === 'rediss:';
  const db = url.pathname.replace(/^\//, '');
  const auth = {
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(db ? { db: Number(db) } : {}),
  };
  if (t.sentinels?.length || t.sentinelName) {
    if (!t.sentinels?.length || !t.sentinelName) throw new RedisTargetError('REDIS_SENTINELS and REDIS_SENTINEL_NAME go together');
    return {
      sentinels: t.sentinels.map((h) => hostPort(h, 26379)),
      name: t.sentinelName,
      ...auth,
      ...(t.sentinelPassword ? { sentinelPassword: t.sentinelPassword } : {}),
      ...(tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
    };
  }
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port ? Number(url.port) : 6379, ...auth, ...(tls ? { tls: {} } : {}) };
}

/**
 * Fails fast instead of queueing commands while Redis is away, so callers can fall back (the rate limiter
 * fails open) rather than hang. Behind Sentinel, a failover closes the connection and the next attempt asks
 * the Sentinels for the new master (a replica that was promoted answers writes; a demoted one is left).
 */
export function createRedis(target: RedisTarget | string, opts: { autoPipelining?: boolean } = {}): Redis {
  return new Redis({
    ...redisConnectionOptions(target),
    // Commands issued in one event-loop turn go out in one write (and come back in one read): the gateway
    // makes one limiter call per request, and socket writes are its largest CPU cost.
    enableAutoPipelining: opts.autoPipelining ?? false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 1_000,
    lazyConnect: false,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
    // Sentinel mode: keep asking the Sentinels during a failover instead of giving up after one round.
    sentinelRetryStrategy: (times) => Math.min(times * 200, 2_000),
    // A master demoted to a replica answers READONLY: reconnect, and Sentinel names the new master.
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
  });
}

export type { Redis };
