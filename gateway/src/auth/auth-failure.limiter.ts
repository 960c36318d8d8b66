import type { Redis } from '@dap/redis';

/**
 * Counts failed authentications per client address over a minute; past the threshold the address gets 429
 * before any key is looked up, which blunts key guessing and credential stuffing. Redis shares the count
 * across gateway instances; without Redis each instance counts alone. Only an address that has failed on
 * this instance within the minute is looked up in Redis (an attacker fails on every instance it reaches),
 * so a well-behaved client's request costs no extra Redis round trip. Each instance also counts what it saw
 * itself, the floor when Redis cannot be read.
 */
export class AuthFailureLimiter {
  private readonly redis: Redis;
  private readonly perMinute: number;
  private readonly local = new Map<string, { count: number; until: number }>();
  /** Addresses that failed here recently, and until when that matters. */
  private readonly suspects = new Map<string, number>();

  constructor(redis: Redis, perMinute: number) {
    this.redis = redis;
    this.perMinute = perMinute;
  }

  async blocked(ip: string, now = Date.now()): Promise<number | null> {
    const suspectUntil = this.suspects.get(ip);
    if (suspectUntil === undefined) return null;
    if (suspectUntil <= now) {
      this.suspects.delete(ip);
      return null;
    }
    // This instance's own count is the floor: a Redis read that fails or comes back short never lets an
    // address past the limit that this instance alone has seen it reach.
    const entry = this.local.get(ip);
    let count = entry && entry.until > now ? entry.count : 0;
    let ttlMs = entry && entry.until > now ? entry.until - now : 60_000;
    try {
      const [[, c], [, ttl]] = (await this.redis.multi().get(`af:${ip}`).pttl(`af:${ip}`).exec()) as [[null, string | null], [null, number]];
      if (Number(c ?? 0) >= count) {
        count = Number(c ?? 0);
        ttlMs = ttl > 0 ? ttl : 60_000;
      }
    } catch {
      // Redis unreachable: the local count decides.
    }
    return count >= this.perMinute ? Math.max(1, Math.ceil(ttlMs / 1000)) : null;
  }

  async recordFailure(ip: string, now = Date.now()): Promise<void> {
    if (this.suspects.size > 100_000) this.suspects.clear();
    this.suspects.set(ip, now + 60_000);
    if (this.local.size > 100_000) this.local.clear();
    const entry = this.local.get(ip);
    if (entry && entry.until > now) entry.count++;
    else this.local.set(ip, { count: 1, until: now + 60_000 });
    try {
      await this.redis.multi().incr(`af:${ip}`).pexpire(`af:${ip}`, 60_000, 'NX').exec();
    } catch {
      // Counted locally above; other instances count their own.
    }
  }
}
