import type { Redis } from '@dap/redis';

/**
 * Counts failed authentications per client address over a minute; past the threshold the address gets 429
 * before any key is looked up, which blunts key guessing and credential stuffing. Redis shares the count
 * across gateway instances; without Redis each instance counts alone.
 */
export class AuthFailureLimiter {
  private readonly redis: Redis;
  private readonly perMinute: number;
  private readonly local = new Map<string, { count: number; until: number }>();

  constructor(redis: Redis, perMinute: number) {
    this.redis = redis;
    this.perMinute = perMinute;
  }

  async blocked(ip: string): Promise<number | null> {
    let count = 0;
    let ttlMs = 60_000;
    try {
      const [[, c], [, ttl]] = (await this.redis.multi().get(`af:${ip}`).pttl(`af:${ip}`).exec()) as [[null, string | null], [null, number]];
      count = Number(c ?? 0);
      ttlMs = ttl > 0 ? ttl : 60_000;
    } catch {
      const entry = this.local.get(ip);
      if (entry && entry.until > Date.now()) {
        count = entry.count;
        ttlMs = entry.until - Date.now();
      }
    }
    return count >= this.perMinute ? Math.max(1, Math.ceil(ttlMs / 1000)) : null;
  }

  async recordFailure(ip: string): Promise<void> {
    try {
      await this.redis.multi().incr(`af:${ip}`).pexpire(`af:${ip}`, 60_000, 'NX').exec();
    } catch {
      const now = Date.now();
      const entry = this.local.get(ip);
      if (entry && entry.until > now) entry.count++;
      else this.local.set(ip, { count: 1, until: now + 60_000 });
    }
  }
}
