import { Redis } from 'ioredis';

/**
 * Fails fast instead of queueing commands while Redis is away, so callers can fall back (the rate limiter
 * fails open) rather than hang.
 */
export function createRedis(url: string, opts: { autoPipelining?: boolean } = {}): Redis {
  return new Redis(url, {
    // Commands issued in one event-loop turn go out in one write (and come back in one read): the gateway
    // makes one limiter call per request, and socket writes are its largest CPU cost.
    enableAutoPipelining: opts.autoPipelining ?? false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 1_000,
    lazyConnect: false,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  });
}

export type { Redis };
