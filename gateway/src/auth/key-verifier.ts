import { hashApiKey, internalServiceToken, isWellFormedApiKey, type KeyVerifyOutcome, type VerifiedKey } from '@dap/contracts';
import type { Redis } from '@dap/redis';
import { LRUCache } from 'lru-cache';
import { verifyWithAccounts } from './accounts-verify.ts';

export type { VerifiedKey };
export type VerifyOutcome = KeyVerifyOutcome | { ok: false; reason: 'malformed' };

const NEGATIVE_TTL_MS = 5_000;
/** How long an eviction is remembered: far longer than any lookup it could race with takes. */
const EVICTION_MEMORY_MS = 60_000;

/**
 * Verifies API keys against the accounts service, caching positive outcomes in process and in Redis (shared
 * by every gateway instance, so a new instance or a cold key costs no accounts call). Only the SHA-256 of a
 * key leaves the gateway. Revocation, expiry and plan-change events evict entries at once, so the TTL only
 * bounds how stale a missed event could leave us. Negative outcomes stay in process, so a flood of random
 * keys cannot fill Redis. The in-process cache holds at most `maxEntries` outcomes, least recently used out
 * first, so key churn cannot grow the gateway's memory; a key pushed out is read from Redis again.
 */
export class KeyVerifier {
  private readonly cache: LRUCache<string, { outcome: VerifyOutcome }>;
  private readonly inflight = new Map<string, Promise<VerifyOutcome>>();
  private readonly accountsUrl: string;
  private readonly token: string;
  private readonly ttlMs: number;
  private readonly redis: Redis | null;
  /** The clock of key expiry and of the cache (tests pass their own). */
  private readonly now: () => number;
  /**
   * Evictions by key id and by account (`acct:<id>`), each with its place in the sequence of evictions. A
   * lookup that began before an eviction of its key may come back with the old answer (read from Redis, or
   * from accounts, before the change): it is then neither cached nor shared, and asked again.
   */
  private readonly evicted = new Map<string, { seq: number; at: number }>();
  private evictions = 0;
  readonly stats = { memoryHits: 0, redisHits: 0, accountsCalls: 0 };

  constructor(opts: { accountsUrl: string; internalSecret: string; ttlMs: number; maxEntries: number; redis?: Redis; now?: () => number }) {
    this.accountsUrl = opts.accountsUrl;
    this.token = internalServiceToken(opts.internalSecret);
    this.ttlMs = opts.ttlMs;
    this.redis = opts.redis ?? null;
    this.now = opts.now ?? Date.now;
    // Expired entries are dropped when read or pushed out, never served: no timer per entry.
    this.cache = new LRUCache({ max: opts.maxEntries, ttlAutopurge: false, ttlResolution: 0, ...(opts.now ? { perf: { now: opts.now } } : {}) });
  }

  /** Outcomes held in process now (at most `maxEntries`). */
  get cachedCount(): number {
    return this.cache.size;
  }

  async verify(secret: string, now = this.now()): Promise<VerifyOutcome> {
    if (!isWellFormedApiKey(secret)) return { ok: false, reason: 'malformed' };
    const hash = hashApiKey(secret);
    const hit = this.cache.get(hash);
    if (hit) this.stats.memoryHits++;
    const outcome = hit ? hit.outcome : await this.lookup(hash);
    if (outcome.ok && outcome.key.expiresAt && Date.parse(outcome.key.expiresAt) <= now) return { ok: false, reason: outcome.key.replaced ? 'replaced' : 'expired' };
    return outcome;
  }

  async evictKey(keyId: string): Promise<void> {
    const drop = () => {
      this.remember(keyId);
      for (const [hash, entry] of this.cache.entries()) if (entry.outcome.ok && entry.outcome.key.keyId === keyId) this.cache.delete(hash);
    };
    // Before and after the shared entry goes: a lookup that starts while Redis still holds it reads the old
    // answer, and is then known to have started before the second mark.
    drop();
    await this.redisDrop([keyId]);
    drop();
  }

  async evictAccount(accountId: string): Promise<void> {
    const keyIds: string[] = [];
    const drop = () => {
      this.remember(`acct:${accountId}`);
      for (const [hash, entry] of this.cache.entries()) {
        if (entry.outcome.ok && entry.outcome.key.accountId === accountId) {
          keyIds.push(entry.outcome.key.keyId);
          this.cache.delete(hash);
        }
      }
    };
    drop();
    if (this.redis) keyIds.push(...(await this.redis.smembers(`kc:acct:${accountId}`).catch(() => [])));
    await this.redisDrop(keyIds);
    drop();
  }

  private remember(what: string, now = this.now()): void {
    this.evicted.set(what, { seq: ++this.evictions, at: now });
    if (this.evicted.size > 1_000) for (const [k, e] of this.evicted) if (e.at < now - EVICTION_MEMORY_MS) this.evicted.delete(k);
  }

  /** Whether the key of this outcome was evicted after the lookup that produced it began. */
  private evictedSince(outcome: VerifyOutcome, seq: number): boolean {
    if (!outcome.ok) return false;
    const byKey = this.evicted.get(outcome.key.keyId)?.seq ?? 0;
    const byAccount = this.evicted.get(`acct:${outcome.key.accountId}`)?.seq ?? 0;
    return Math.max(byKey, byAccount) > seq;
  }

  private async redisDrop(keyIds: string[]): Promise<void> {
    if (!this.redis || !keyIds.length) return;
    try {
      const hashes = (await this.redis.mget(...keyIds.map((id) => `kc:id:${id}`))).filter((h): h is string => Boolean(h));
      if (hashes.length) await this.redis.del(...hashes.map((h) => `kc:${h}`));
    } catch {
      // Redis away: entries expire by TTL; the in-process cache is already clean.
    }
  }

  private async redisGet(hash: string): Promise<VerifyOutcome | null> {
    if (!this.redis) return null;
    try {
      const raw = await this.redis.get(`kc:${hash}`);
      return raw ? (JSON.parse(raw) as VerifyOutcome) : null;
    } catch {
      return null;
    }
  }

  private async redisPut(hash: string, outcome: VerifyOutcome): Promise<void> {
    if (!this.redis || !outcome.ok) return;
    const ttl = Math.max(1, Math.ceil(this.ttlMs / 1000));
    try {
      await this.redis
        .multi()
        .set(`kc:${hash}`, JSON.stringify(outcome), 'EX', ttl)
        .set(`kc:id:${outcome.key.keyId}`, hash, 'EX', ttl)
        .sadd(`kc:acct:${outcome.key.accountId}`, outcome.key.keyId)
        .expire(`kc:acct:${outcome.key.accountId}`, ttl)
        .exec();
    } catch {
      // best effort
    }
  }

  /** One request to accounts per key at a time, however many callers are waiting on it. */
  private lookup(hash: string): Promise<VerifyOutcome> {
    let pending = this.inflight.get(hash);
    if (!pending) {
      const seq = this.evictions;
      pending = this.resolve(hash, seq)
        .then(async (outcome) => {
          // Evicted while we asked: the answer may predate the change, so ask accounts again, now.
          if (this.evictedSince(outcome, seq)) {
            outcome = await this.fetchOutcome(hash);
            await this.redisPut(hash, outcome);
          }
          this.cache.set(hash, { outcome }, { ttl: outcome.ok ? this.ttlMs : NEGATIVE_TTL_MS });
          return outcome;
        })
        .finally(() => this.inflight.delete(hash));
      this.inflight.set(hash, pending);
    }
    return pending;
  }

  private async resolve(hash: string, seq: number): Promise<VerifyOutcome> {
    const shared = await this.redisGet(hash);
    if (shared) {
      this.stats.redisHits++;
      return shared;
    }
    const outcome = await this.fetchOutcome(hash);
    // An answer that may predate an eviction is not shared with the other instances.
    if (!this.evictedSince(outcome, seq)) await this.redisPut(hash, outcome);
    return outcome;
  }

  private async fetchOutcome(hash: string): Promise<VerifyOutcome> {
    this.stats.accountsCalls++;
    return verifyWithAccounts<VerifyOutcome>(this.accountsUrl, this.token, 'key', hash);
  }
}
