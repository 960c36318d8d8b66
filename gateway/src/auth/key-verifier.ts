import { hashApiKey, internalServiceToken, isWellFormedApiKey, KEY_VERIFY_BATCH_MAX, type KeyVerifyOutcome, type VerifiedKey } from '@dap/contracts';
import type { Redis } from '@dap/redis';
import { LRUCache } from 'lru-cache';
import { verifyManyWithAccounts, verifyWithAccounts } from './accounts-verify.ts';

export type { VerifiedKey };
export type VerifyOutcome = KeyVerifyOutcome | { ok: false; reason: 'malformed' };

const NEGATIVE_TTL_MS = 5_000;
/** How long an eviction is remembered: far longer than any lookup it could race with takes. */
const EVICTION_MEMORY_MS = 60_000;
/** How long refreshes gather into one batch: an entry being refreshed still has half its TTL to serve. */
const REFRESH_GATHER_MS = 50;

/** An outcome held in process, and when it was obtained (on the verifier's clock). */
interface Entry {
  outcome: VerifyOutcome;
  at: number;
}

/**
 * Verifies API keys against the accounts service, caching positive outcomes in process and in Redis (shared
 * by every gateway instance, so a new instance or a cold key costs no accounts call). Only the SHA-256 of a
 * key leaves the gateway. Revocation, expiry and plan-change events evict entries at once, so the TTL only
 * bounds how stale a missed event could leave us. Negative outcomes stay in process, so a flood of random
 * keys cannot fill Redis. The in-process cache holds at most `maxEntries` outcomes, least recently used out
 * first, so key churn cannot grow the gateway's memory; a key pushed out is read from Redis again.
 *
 * Refresh-ahead: a valid key used once half its TTL has passed is answered from the cache and asked about
 * again in the background, many keys in one call to accounts, and the fresh answer replaces the entry in
 * process and in Redis. A key in steady use so never waits for accounts; one unused for a whole TTL is
 * looked up on its next request, as a new key is.
 */
export class KeyVerifier {
  private readonly cache: LRUCache<string, Entry>;
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
  /** Hashes waiting for the next refresh batch, and every hash queued or being refreshed (one refresh per key at a time). */
  private readonly refreshQueue: string[] = [];
  private readonly refreshing = new Set<string>();
  private refreshTimer: NodeJS.Timeout | null = null;
  private readonly refreshBatches = new Set<Promise<void>>();
  /** Lookups waiting to be sent to accounts at the end of this turn of the event loop. */
  private fetchQueue: Map<string, Array<{ resolve: (o: VerifyOutcome) => void; reject: (err: unknown) => void }>> | null = null;
  readonly stats = { memoryHits: 0, redisHits: 0, accountsCalls: 0, refreshCalls: 0, refreshedKeys: 0 };

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
    if (hit) {
      this.stats.memoryHits++;
      if (hit.outcome.ok && this.now() - hit.at >= this.ttlMs / 2) this.refreshAhead(hash);
    }
    const outcome = hit ? hit.outcome : await this.lookup(hash);
    if (outcome.ok && outcome.key.expiresAt && Date.parse(outcome.key.expiresAt) <= now) return { ok: false, reason: outcome.key.replaced ? 'replaced' : 'expired' };
    return outcome;
  }

  /** Sends the refreshes waiting for their batch now, and waits until every refresh under way has finished. */
  async settleRefreshes(): Promise<void> {
    this.sendRefreshes();
    await Promise.all(this.refreshBatches);
  }

  /**
   * At shutdown: the refreshes still gathering are dropped (their entries would serve out their TTL anyway), and
   * those under way are awaited, so none writes to Redis once the gateway has closed it.
   */
  async stop(): Promise<void> {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
    for (const hash of this.refreshQueue.splice(0)) this.refreshing.delete(hash);
    await Promise.all(this.refreshBatches);
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

  /**
   * The shared entry and how long Redis keeps it (in one round trip: the client pipelines both), so this
   * instance keeps it no longer than the instance that looked it up: a key's answer is never older than the TTL.
   */
  private async redisGet(hash: string): Promise<{ outcome: VerifyOutcome; ttlMs: number } | null> {
    if (!this.redis) return null;
    try {
      const [raw, pttl] = await Promise.all([this.redis.get(`kc:${hash}`), this.redis.pttl(`kc:${hash}`)]);
      if (!raw) return null;
      // -2: it expired between the two reads; -1: no expiry, which only an entry written by hand has.
      const ttlMs = pttl === -1 ? this.ttlMs : Math.min(this.ttlMs, Math.max(1, pttl));
      return { outcome: JSON.parse(raw) as VerifyOutcome, ttlMs };
    } catch {
      return null;
    }
  }

  private redisPut(hash: string, outcome: VerifyOutcome): Promise<void> {
    return this.redisPutMany([[hash, outcome]]);
  }

  /** Shares valid outcomes for the TTL; for any other outcome, removes the shared entry an earlier answer left. */
  private async redisPutMany(entries: ReadonlyArray<readonly [string, VerifyOutcome]>): Promise<void> {
    if (!this.redis || !entries.length) return;
    const ttl = Math.max(1, Math.ceil(this.ttlMs / 1000));
    try {
      const tx = this.redis.multi();
      for (const [hash, outcome] of entries) {
        if (!outcome.ok) tx.del(`kc:${hash}`);
        else
          tx.set(`kc:${hash}`, JSON.stringify(outcome), 'EX', ttl)
            .set(`kc:id:${outcome.key.keyId}`, hash, 'EX', ttl)
            .sadd(`kc:acct:${outcome.key.accountId}`, outcome.key.keyId)
            .expire(`kc:acct:${outcome.key.accountId}`, ttl);
      }
      await tx.exec();
    } catch {
      // best effort
    }
  }

  /** `ttlMs`: what is left of a shared entry's TTL; its age then counts towards the refresh-ahead too. */
  private keep(hash: string, outcome: VerifyOutcome, ttlMs = outcome.ok ? this.ttlMs : NEGATIVE_TTL_MS): void {
    const age = outcome.ok ? this.ttlMs - ttlMs : 0;
    // At least 1 ms: lru-cache reads a TTL of 0 as "never expires".
    this.cache.set(hash, { outcome, at: this.now() - age }, { ttl: Math.max(1, ttlMs) });
  }

  private refreshAhead(hash: string): void {
    if (this.refreshing.has(hash)) return;
    this.refreshing.add(hash);
    this.refreshQueue.push(hash);
    if (this.refreshQueue.length >= KEY_VERIFY_BATCH_MAX) this.sendRefreshes();
    else this.refreshTimer ??= setTimeout(() => this.sendRefreshes(), REFRESH_GATHER_MS).unref();
  }

  private sendRefreshes(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
    while (this.refreshQueue.length) {
      const hashes = this.refreshQueue.splice(0, KEY_VERIFY_BATCH_MAX);
      const batch: Promise<void> = this.refresh(hashes)
        .catch(() => {
          // Accounts away: the entries serve out their TTL, then a request looks its key up.
        })
        .finally(() => {
          for (const hash of hashes) this.refreshing.delete(hash);
          this.refreshBatches.delete(batch);
        });
      this.refreshBatches.add(batch);
    }
  }

  private async refresh(hashes: string[]): Promise<void> {
    const seq = this.evictions;
    this.stats.refreshCalls++;
    this.stats.refreshedKeys += hashes.length;
    const outcomes = await verifyManyWithAccounts<VerifyOutcome>(this.accountsUrl, this.token, hashes);
    const fresh: Array<[string, VerifyOutcome]> = [];
    hashes.forEach((hash, i) => {
      const outcome = outcomes[i]!;
      const held = this.cache.peek(hash);
      // Gone while we asked (evicted, expired, pushed out), or evicted and looked up again: this answer may
      // predate the eviction, so it is not put back; the next request decides.
      if (!held || this.evictedSince(held.outcome, seq) || this.evictedSince(outcome, seq)) return;
      this.keep(hash, outcome);
      fresh.push([hash, outcome]);
    });
    // Sent before any later eviction's commands on this connection, so that eviction removes them again.
    await this.redisPutMany(fresh);
  }

  /** One request to accounts per key at a time, however many callers are waiting on it. */
  private lookup(hash: string): Promise<VerifyOutcome> {
    let pending = this.inflight.get(hash);
    if (!pending) {
      const seq = this.evictions;
      pending = this.resolve(hash, seq)
        .then(async ({ outcome, ttlMs }) => {
          // Evicted while we asked: the answer may predate the change, so ask accounts again, now.
          if (this.evictedSince(outcome, seq)) {
            const fresh = await this.fetchOutcome(hash);
            await this.redisPut(hash, fresh);
            this.keep(hash, fresh);
            return fresh;
          }
          this.keep(hash, outcome, ttlMs);
          return outcome;
        })
        .finally(() => this.inflight.delete(hash));
      this.inflight.set(hash, pending);
    }
    return pending;
  }

  /** The answer, and how long to keep it: a shared entry for what Redis has left of its TTL. */
  private async resolve(hash: string, seq: number): Promise<{ outcome: VerifyOutcome; ttlMs?: number }> {
    const shared = await this.redisGet(hash);
    if (shared) {
      this.stats.redisHits++;
      return shared;
    }
    const outcome = await this.fetchOutcome(hash);
    // An answer that may predate an eviction is not shared with the other instances.
    if (!this.evictedSince(outcome, seq)) await this.redisPut(hash, outcome);
    return { outcome };
  }

  /**
   * Lookups that reach accounts in the same turn of the event loop go in one call (many cold keys at once, as
   * after a restart, cost one round trip and two queries in accounts instead of one call each).
   */
  private fetchOutcome(hash: string): Promise<VerifyOutcome> {
    if (!this.fetchQueue) {
      this.fetchQueue = new Map();
      setImmediate(() => this.sendFetches());
    }
    const queue = this.fetchQueue;
    // Single-flight (lookup()) already makes each hash ask once; a second ask here would share the first.
    const promise = new Promise<VerifyOutcome>((resolve, reject) => {
      const waiting = queue.get(hash) ?? [];
      waiting.push({ resolve, reject });
      queue.set(hash, waiting);
    });
    if (queue.size >= KEY_VERIFY_BATCH_MAX) this.sendFetches();
    return promise;
  }

  private sendFetches(): void {
    const batch = this.fetchQueue;
    this.fetchQueue = null;
    if (!batch?.size) return;
    const hashes = [...batch.keys()];
    this.stats.accountsCalls++;
    const asked =
      hashes.length === 1
        ? verifyWithAccounts<VerifyOutcome>(this.accountsUrl, this.token, 'key', hashes[0]!).then((outcome) => [outcome])
        : verifyManyWithAccounts<VerifyOutcome>(this.accountsUrl, this.token, hashes);
    asked.then(
      (outcomes) => hashes.forEach((hash, i) => batch.get(hash)!.forEach((w) => w.resolve(outcomes[i]!))),
      (err: unknown) => batch.forEach((waiting) => waiting.forEach((w) => w.reject(err))),
    );
  }
}
