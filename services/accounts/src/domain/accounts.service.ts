import { type KeyVerifyOutcome, generateApiKey, hashApiKey, isWellFormedApiKey, keyHint, newId, type Plan, type Scope, SCOPES } from '@dap/contracts';
import { apiKeyCreated, apiKeyRevoked, apiKeyUpdated, planChanged } from './events.ts';
import { accountClosed, accountNotFound, apiKeyNotFound, expiryInPast, keyAlreadyRolled, keyNotRollable } from './errors.ts';
import type { AccountDoc, AccountRepository } from '../persistence/account.repository.ts';
import type { ApiKeyDoc, ApiKeyRepository } from '../persistence/api-key.repository.ts';

export type VerifyOutcome = KeyVerifyOutcome;

const TOUCH_EVERY_MS = 60_000;

/** A new account's document (its own tenant: the account id is its `_id`). */
export function newAccountDoc(input: { name: string; plan: Plan; email?: string | null }): Omit<AccountDoc, 'accountId'> {
  const id = newId('acct');
  const now = new Date();
  return { _id: id, name: input.name, ...(input.email ? { email: input.email } : {}), plan: input.plan, createdAt: now, updatedAt: now };
}

/** A new key's document and its secret; only the secret's hash and hint are stored. */
export function newKeyDoc(input: { name: string; scopes?: Scope[]; expiresAt?: Date | null }): { secret: string; doc: Omit<ApiKeyDoc, 'accountId'> } {
  const secret = generateApiKey();
  return {
    secret,
    doc: {
      _id: newId('key'),
      name: input.name,
      hash: hashApiKey(secret),
      hint: keyHint(secret),
      scopes: input.scopes ?? [...SCOPES],
      createdAt: new Date(),
      lastUsedAt: null,
      expiresAt: input.expiresAt ?? null,
      revokedAt: null,
    },
  };
}

/** Only touch lastUsedAt once a minute per key, so verification stays a read. */
function dueForTouch(key: ApiKeyDoc, now: Date): boolean {
  return !key.lastUsedAt || now.getTime() - key.lastUsedAt.getTime() > TOUCH_EVERY_MS;
}

/** What a key (found by its hash, or not) and its account say about a request presenting it at `now`. */
function keyOutcome(key: ApiKeyDoc | null, account: AccountDoc | null, now: Date): VerifyOutcome {
  if (!key) return { ok: false, reason: 'unknown' };
  if (key.revokedAt) return { ok: false, reason: 'revoked' };
  if (key.expiresAt && key.expiresAt.getTime() <= now.getTime()) return { ok: false, reason: key.replacedBy ? 'replaced' : 'expired' };
  if (!account) return { ok: false, reason: 'unknown' };
  return {
    ok: true,
    key: {
      keyId: key._id,
      accountId: key.accountId,
      plan: account.plan,
      scopes: key.scopes,
      expiresAt: key.expiresAt?.toISOString() ?? null,
      ...(key.replacedBy ? { replaced: true } : {}),
    },
  };
}

export class AccountsService {
  private readonly accounts: AccountRepository;
  private readonly keys: ApiKeyRepository;
  /** The clock of key expiry and grace periods (tests pass their own). */
  private readonly now: () => number;

  constructor(accounts: AccountRepository, keys: ApiKeyRepository, now: () => number = Date.now) {
    this.accounts = accounts;
    this.keys = keys;
    this.now = now;
  }

  async createAccount(input: { name: string; plan: Plan; email?: string | null }): Promise<AccountDoc> {
    const doc = newAccountDoc(input);
    return this.accounts.insert(doc._id, doc);
  }

  /** The caller's own account: if it is gone, the credentials that named it are no longer valid (401). */
  async getAccount(accountId: string): Promise<AccountDoc> {
    const account = await this.accounts.get(accountId);
    if (!account) throw accountClosed();
    return account;
  }

  findAccountByEmail(email: string) {
    return this.accounts.findByEmail(email);
  }

  async changePlan(accountId: string, plan: Plan): Promise<AccountDoc> {
    const event = planChanged(accountId, plan);
    const updated = await this.accounts.coll.update(accountId, accountId, { plan, updatedAt: new Date() }, [event]);
    if (!updated) throw accountNotFound();
    return updated;
  }

  /** Creates a key; the returned secret is the only copy that will ever exist. */
  async createKey(accountId: string, input: { name: string; scopes?: Scope[]; expiresAt?: Date | null }): Promise<{ secret: string; key: ApiKeyDoc }> {
    await this.getAccount(accountId);
    if (input.expiresAt && input.expiresAt.getTime() <= this.now()) throw expiryInPast();
    const { secret, doc } = newKeyDoc(input);
    const key = await this.keys.insert(accountId, doc, [apiKeyCreated(accountId, doc._id)]);
    return { secret, key };
  }

  async getKey(accountId: string, keyId: string): Promise<ApiKeyDoc> {
    const key = await this.keys.findById(accountId, keyId);
    if (!key) throw apiKeyNotFound();
    return key;
  }

  listKeys(accountId: string, opts: { limit: number; before?: string }): Promise<ApiKeyDoc[]> {
    return this.keys.list(accountId, opts);
  }

  /**
   * Issues a new secret with the same name and scopes; the old key keeps working for the grace period
   * (so deployments can switch over), then expires. Rolling a revoked or expired key is refused.
   */
  async rollKey(accountId: string, keyId: string, graceSeconds: number): Promise<{ secret: string; key: ApiKeyDoc }> {
    const old = await this.getKey(accountId, keyId);
    const now = this.now();
    if (old.revokedAt || (old.expiresAt && old.expiresAt.getTime() <= now)) throw keyNotRollable();
    // A second roll would leave two live successors of one key; roll the key that replaced it instead.
    if (old.replacedBy) throw keyAlreadyRolled(old.replacedBy);
    const graceEnd = new Date(now + graceSeconds * 1000);
    const oldExpiry = old.expiresAt && old.expiresAt < graceEnd ? old.expiresAt : graceEnd;
    const created = await this.createKey(accountId, { name: old.name, scopes: old.scopes, expiresAt: old.expiresAt });
    const event = apiKeyUpdated(accountId, keyId);
    await this.keys.coll.update(accountId, keyId, { expiresAt: oldExpiry, replacedBy: created.key._id }, [event]);
    return created;
  }

  async revokeKey(accountId: string, keyId: string): Promise<ApiKeyDoc> {
    const event = apiKeyRevoked(accountId, keyId);
    const updated = await this.keys.coll.update(accountId, keyId, { revokedAt: new Date() }, [event], { revokedAt: null });
    if (!updated) {
      const existing = await this.keys.findById(accountId, keyId);
      if (!existing) throw apiKeyNotFound();
      return existing; // already revoked: idempotent
    }
    return updated;
  }

  /** Verifies a key by its hash (the gateway never sends the key itself). */
  async verifyHash(hash: string, now = new Date(this.now())): Promise<VerifyOutcome> {
    const key = await this.keys.findByHash(hash);
    const account = key ? await this.accounts.get(key.accountId) : null;
    const outcome = keyOutcome(key, account, now);
    if (outcome.ok && key && dueForTouch(key, now)) await this.keys.touch([key], now);
    return outcome;
  }

  /**
   * Verifies many keys by their hashes in two queries (the gateway's batched lookups and background refreshes);
   * the outcomes are in the order of `hashes`.
   */
  async verifyHashes(hashes: readonly string[], now = new Date(this.now())): Promise<VerifyOutcome[]> {
    const keys = new Map((await this.keys.findByHashes(hashes)).map((k) => [k.hash, k]));
    const accounts = new Map((await this.accounts.getMany([...new Set([...keys.values()].map((k) => k.accountId))])).map((a) => [a._id, a]));
    const due: ApiKeyDoc[] = [];
    const outcomes = hashes.map((hash) => {
      const key = keys.get(hash) ?? null;
      const outcome = keyOutcome(key, key ? (accounts.get(key.accountId) ?? null) : null, now);
      if (outcome.ok && key && dueForTouch(key, now)) due.push(key);
      return outcome;
    });
    await this.keys.touch(due, now);
    return outcomes;
  }

  async verifySecret(secret: string): Promise<VerifyOutcome> {
    if (!isWellFormedApiKey(secret)) return { ok: false, reason: 'unknown' };
    return this.verifyHash(hashApiKey(secret));
  }
}
