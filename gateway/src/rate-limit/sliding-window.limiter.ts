import type { Redis } from '@dap/redis';

export interface LimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Milliseconds until the oldest counted request leaves the window (when a slot frees up). */
  resetMs: number;
  source: 'redis' | 'fallback';
}

export interface Limiter {
  check(accountId: string, limit: number): Promise<LimitDecision>;
  /** How much of the window is used, without counting a request. */
  peek(accountId: string, limit: number): Promise<LimitDecision>;
}

/**
 * The window as both scripts see it, its length in milliseconds in ARGV[`windowArg`]: requests older than it
 * trimmed, `count` admitted within it, `reset` ms until its oldest one leaves it. The time is Redis's own
 * unless ARGV[`nowArg`] gives one (a test's clock; the gateway always leaves it empty).
 */
const windowState = (windowArg: number, nowArg: number) => `
local now = tonumber(ARGV[${nowArg}])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local window = tonumber(ARGV[${windowArg}])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local reset = window
if oldest[2] then reset = tonumber(oldest[2]) + window - now end
`;

/**
 * Admits up to ARGV[4] requests at once (a lease, see leasing.limiter.ts), as many as the window has room for.
 * Each is stored `hold` ms (ARGV[5]) in the future: a lease's permits may be used until then, so each one
 * stays counted for a whole window after its use, whenever in the hold that comes.
 */
const SCRIPT = `${windowState(2, 3)}
local limit = tonumber(ARGV[1])
local hold = tonumber(ARGV[5])
local grant = math.min(tonumber(ARGV[4]), limit - count)
if grant >= 1 then
  local last = redis.call('INCRBY', KEYS[2], grant)
  redis.call('PEXPIRE', KEYS[2], window + hold)
  local entries = {}
  for i = 1, grant do
    entries[#entries + 1] = now + hold
    entries[#entries + 1] = now .. ':' .. (last - grant + i)
  end
  redis.call('ZADD', KEYS[1], unpack(entries))
  redis.call('PEXPIRE', KEYS[1], window + hold)
  if count == 0 then reset = window + hold end
  return {grant, limit - count - grant, reset, now, last}
end
return {0, 0, reset, now, 0}
`;

const PEEK_SCRIPT = `${windowState(1, 2)}
return {count, reset}
`;

export interface Reservation {
  /** How many requests were admitted (0 when the window is full). */
  granted: number;
  /** Room left in the window after them. */
  remaining: number;
  resetMs: number;
  /** The admitted entries' names in the window's sorted set. */
  members: string[];
}

const keyOf = (accountId: string) => `rl:{${accountId}}`;

type ScriptedRedis = {
  dapSlidingWindow(k1: string, k2: string, limit: number, window: number, now: number | '', want: number, hold: number): Promise<[number, number, number, number, number]>;
  dapSlidingPeek(k1: string, window: number, now: number | ''): Promise<[number, number]>;
};

/**
 * An exact sliding window: a sorted set of admitted request times per account, trimmed and checked in one
 * atomic script that reads the Redis server's clock, so no 60-s window ever admits more than the limit,
 * however many gateway instances share it.
 */
export class SlidingWindowLimiter implements Limiter {
  private readonly redis: Redis;
  private readonly windowMs: number;
  private readonly now: (() => number) | null;

  /** `now` replaces Redis's clock, for tests only: gateways sharing Redis must share its one clock. */
  constructor(redis: Redis, windowMs: number, now?: () => number) {
    this.redis = redis;
    this.windowMs = windowMs;
    this.now = now ?? null;
    redis.defineCommand('dapSlidingWindow', { numberOfKeys: 2, lua: SCRIPT });
    redis.defineCommand('dapSlidingPeek', { numberOfKeys: 1, lua: PEEK_SCRIPT });
  }

  private get scripts(): ScriptedRedis {
    return this.redis as unknown as ScriptedRedis;
  }

  async check(accountId: string, limit: number): Promise<LimitDecision> {
    const r = await this.reserve(accountId, limit, 1, 0);
    return { allowed: r.granted === 1, limit, remaining: r.remaining, resetMs: r.resetMs, source: 'redis' };
  }

  /**
   * Admits up to `want` requests now, as many as the window has room for, each counted as if made `holdMs`
   * from now. `members` name the admitted entries, so that unused ones can be handed back (`release`).
   */
  async reserve(accountId: string, limit: number, want: number, holdMs: number): Promise<Reservation> {
    const key = keyOf(accountId);
    const [granted, remaining, resetMs, now, last] = await this.scripts.dapSlidingWindow(key, `${key}:seq`, limit, this.windowMs, this.now?.() ?? '', want, holdMs);
    const members: string[] = [];
    for (let seq = last - granted + 1; seq <= last; seq++) members.push(`${now}:${seq}`);
    return { granted, remaining, resetMs, members };
  }

  /** Hands back admitted entries that were never used, so they no longer count. */
  async release(accountId: string, members: string[]): Promise<void> {
    if (members.length) await this.redis.zrem(keyOf(accountId), ...members);
  }

  async peek(accountId: string, limit: number): Promise<LimitDecision> {
    const [used, resetMs] = await this.scripts.dapSlidingPeek(keyOf(accountId), this.windowMs, this.now?.() ?? '');
    return { allowed: used < limit, limit, remaining: Math.max(0, limit - used), resetMs, source: 'redis' };
  }
}

/** Per-instance sliding window used only while Redis is unreachable (fail open, but not unlimited). */
export class InMemoryLimiter implements Limiter {
  private readonly windowMs: number;
  private readonly hits = new Map<string, number[]>();

  constructor(windowMs: number) {
    this.windowMs = windowMs;
  }

  async check(accountId: string, limit: number, now = Date.now()): Promise<LimitDecision> {
    const times = (this.hits.get(accountId) ?? []).filter((t) => t > now - this.windowMs);
    const allowed = times.length < limit;
    if (allowed) times.push(now);
    this.hits.set(accountId, times);
    const resetMs = times.length ? times[0]! + this.windowMs - now : this.windowMs;
    return { allowed, limit, remaining: Math.max(0, limit - times.length), resetMs, source: 'fallback' };
  }

  async peek(accountId: string, limit: number, now = Date.now()): Promise<LimitDecision> {
    const times = (this.hits.get(accountId) ?? []).filter((t) => t > now - this.windowMs);
    const resetMs = times.length ? times[0]! + this.windowMs - now : this.windowMs;
    return { allowed: times.length < limit, limit, remaining: Math.max(0, limit - times.length), resetMs, source: 'fallback' };
  }
}

/** Redis first; on any Redis error the fallback decides, and the caller is told so it can log and count. */
export class FailOpenLimiter implements Limiter {
  private readonly primary: Limiter;
  private readonly fallback: Limiter;
  private readonly onFallback: (err: unknown) => void;

  constructor(primary: Limiter, fallback: Limiter, onFallback: (err: unknown) => void) {
    this.primary = primary;
    this.fallback = fallback;
    this.onFallback = onFallback;
  }

  async check(accountId: string, limit: number): Promise<LimitDecision> {
    try {
      return await this.primary.check(accountId, limit);
    } catch (err) {
      this.onFallback(err);
      return this.fallback.check(accountId, limit);
    }
  }

  async peek(accountId: string, limit: number): Promise<LimitDecision> {
    try {
      return await this.primary.peek(accountId, limit);
    } catch {
      return this.fallback.peek(accountId, limit);
    }
  }
}
