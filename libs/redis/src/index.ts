import { Redis } from 'ioredis';

/**
 * Fails fast instead of queueing commands while Redis is away, so callers can fall back (the rate limiter
 * fails open) rather than hang.
 */
export function createRedis(url: string): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 1_000,
    lazyConnect: false,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  });
}

export type { Redis };
