import { hashApiKey, INTERNAL_TOKEN_HEADER, internalServiceToken, isWellFormedApiKey, type Plan, type Scope } from '@dap/contracts';

export interface VerifiedKey {
  keyId: string;
  accountId: string;
  plan: Plan;
  scopes: Scope[];
  expiresAt: string | null;
}
export type VerifyOutcome = { ok: true; key: VerifiedKey } | { ok: false; reason: 'unknown' | 'revoked' | 'expired' | 'malformed' };

interface CacheEntry {
  outcome: VerifyOutcome;
  until: number;
}

const NEGATIVE_TTL_MS = 5_000;

/**
 * Verifies API keys against the accounts service, caching outcomes in process. Only the SHA-256 of a key
 * leaves the gateway. Revocation and plan-change events evict entries at once, so the TTL only bounds how
 * stale a missed event could leave us.
 */
export class KeyVerifier {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly inflight = new Map<string, Promise<VerifyOutcome>>();
  private readonly accountsUrl: string;
  private readonly token: string;
  private readonly ttlMs: number;

  constructor(opts: { accountsUrl: string; internalSecret: string; ttlMs: number }) {
    this.accountsUrl = opts.accountsUrl;
    this.token = internalServiceToken(opts.internalSecret);
    this.ttlMs = opts.ttlMs;
  }

  async verify(secret: string, now = Date.now()): Promise<VerifyOutcome> {
    if (!isWellFormedApiKey(secret)) return { ok: false, reason: 'malformed' };
    const hash = hashApiKey(secret);
    const hit = this.cache.get(hash);
    const outcome = hit && hit.until > now ? hit.outcome : await this.lookup(hash, now);
    if (outcome.ok && outcome.key.expiresAt && Date.parse(outcome.key.expiresAt) <= now) return { ok: false, reason: 'expired' };
    return outcome;
  }

  evictKey(keyId: string): void {
    for (const [hash, entry] of this.cache) if (entry.outcome.ok && entry.outcome.key.keyId === keyId) this.cache.delete(hash);
  }

  evictAccount(accountId: string): void {
    for (const [hash, entry] of this.cache) if (entry.outcome.ok && entry.outcome.key.accountId === accountId) this.cache.delete(hash);
  }

  /** One request to accounts per key at a time, however many callers are waiting on it. */
  private lookup(hash: string, now: number): Promise<VerifyOutcome> {
    let pending = this.inflight.get(hash);
    if (!pending) {
      pending = this.fetchOutcome(hash)
        .then((outcome) => {
          this.cache.set(hash, { outcome, until: now + (outcome.ok ? this.ttlMs : NEGATIVE_TTL_MS) });
          return outcome;
        })
        .finally(() => this.inflight.delete(hash));
      this.inflight.set(hash, pending);
    }
    return pending;
  }

  private async fetchOutcome(hash: string): Promise<VerifyOutcome> {
    const res = await fetch(`${this.accountsUrl}/internal/keys/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [INTERNAL_TOKEN_HEADER]: this.token },
      body: JSON.stringify({ hash }),
      signal: AbortSignal.timeout(5_000),
    });
    if (!res.ok) throw new Error(`accounts answered ${res.status} to a key verification`);
    return (await res.json()) as VerifyOutcome;
  }
}
