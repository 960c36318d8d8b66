import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { generateApiKey, hashApiKey, SCOPES, type KeyVerifyOutcome } from '@dap/contracts';
import type { Redis } from '@dap/redis';
import { KeyVerifier } from './key-verifier.ts';

const SECRET = 'verifier-test-secret-0123456789abcdef0123456789';
const key = { keyId: 'key_01HZZZZZZZZZZZZZZZZZZZZZZZ', accountId: 'acct_01HZZZZZZZZZZZZZZZZZZZZZZZ', plan: 'starter' as const, scopes: [...SCOPES], expiresAt: null };

/** What the running test opened, closed after it whatever its outcome, last opened first. */
const closers: (() => Promise<unknown>)[] = [];
const afterThisTest = (close: () => Promise<unknown>) => void closers.push(close);
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/**
 * The accounts service's verify routes, answering whatever `answer` holds when the request arrives. `calls`
 * counts single verifications (a request waiting on accounts), `batches` the hashes of each batch (background
 * refreshes); `holdBatches` keeps batch answers (already decided) from leaving until it resolves.
 */
async function fakeAccounts(answer: { current: KeyVerifyOutcome }) {
  let calls = 0;
  const batches: string[][] = [];
  let hold: Promise<void> | null = null;
  const batchWaiters: (() => void)[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.url !== '/internal/keys/verify-many') {
        calls++;
        return res.end(JSON.stringify(answer.current));
      }
      const { hashes } = JSON.parse(body) as { hashes: string[] };
      batches.push(hashes);
      const reply = JSON.stringify({ outcomes: hashes.map(() => answer.current) });
      for (const reached of batchWaiters.splice(0)) reached();
      void (hold ?? Promise.resolve()).then(() => res.end(reply));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  afterThisTest(() => new Promise((r) => server.close(r)));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: () => calls,
    batches,
    /** Resolves when the next batch request has been answered (decided), before its reply is sent. */
    nextBatch: () => new Promise<void>((r) => batchWaiters.push(r)),
    holdBatches: (p: Promise<void> | null) => void (hold = p),
  };
}

/** Just the Redis calls the verifier makes, over a map; `get` can be held, and awaited, to order a race. */
/** With `clock`, entries set with EX expire on it, and PTTL answers what is left; without, they never expire (PTTL -1). */
function fakeRedis(clock?: () => number) {
  const data = new Map<string, string>();
  const expiresAt = new Map<string, number>();
  const expire = (k: string) => {
    if (clock && (expiresAt.get(k) ?? Infinity) <= clock()) data.delete(k);
  };
  let hold: Promise<void> | null = null;
  let holdMget: Promise<void> | null = null;
  const getWaiters: (() => void)[] = [];
  const redis = {
    get: async (k: string) => {
      for (const reached of getWaiters.splice(0)) reached();
      expire(k);
      const value = data.get(k) ?? null; // read now, answered later: a reply already on its way
      if (hold) await hold;
      return value;
    },
    mget: async (...ks: string[]) => {
      if (holdMget) await holdMget;
      return ks.map((k) => data.get(k) ?? null);
    },
    pttl: async (k: string) => {
      expire(k);
      if (!data.has(k)) return -2;
      const at = expiresAt.get(k);
      return clock && at !== undefined ? at - clock() : -1;
    },
    del: async (...ks: string[]) => ks.filter((k) => data.delete(k)).length,
    smembers: async () => [],
    multi() {
      const ops: (() => void)[] = [];
      const chain = {
        set: (k: string, v: string, _ex?: 'EX', seconds?: number) => (
          ops.push(() => {
            data.set(k, v);
            if (clock && seconds !== undefined) expiresAt.set(k, clock() + seconds * 1000);
          }),
          chain
        ),
        del: (k: string) => (ops.push(() => void data.delete(k)), chain),
        sadd: () => chain,
        expire: () => chain,
        exec: async () => ops.forEach((op) => op()),
      };
      return chain;
    },
  };
  return {
    redis: redis as unknown as Redis,
    data,
    /** Resolves when the next `get` has read its value. */
    nextGet: () => new Promise<void>((r) => getWaiters.push(r)),
    holdGets: (p: Promise<void> | null) => void (hold = p),
    holdMgets: (p: Promise<void> | null) => void (holdMget = p),
  };
}

/** A verifier on a clock the test moves (`advance`), with Redis unless told not, against an accounts stand-in answering `answer.current`. */
async function clockedVerifier(opts: { redis?: boolean } = {}) {
  const answer = { current: { ok: true, key } as KeyVerifyOutcome };
  const accounts = await fakeAccounts(answer);
  const { redis, data } = fakeRedis();
  let clock = 1_000_000;
  const verifier = new KeyVerifier({
    accountsUrl: accounts.url,
    internalSecret: SECRET,
    ttlMs: 30_000,
    maxEntries: 10,
    ...(opts.redis === false ? {} : { redis }),
    now: () => clock,
  });
  return { answer, accounts, data, verifier, secret: generateApiKey(), advance: (ms: number) => void (clock += ms) };
}

describe('KeyVerifier', () => {
  it('says a cached rolled key past its grace period was replaced, and a plain one past its expiry expired', async () => {
    const end = Date.parse('2026-01-01T00:00:00Z');
    const rolled = { current: { ok: true, key: { ...key, expiresAt: new Date(end).toISOString(), replaced: true } } as KeyVerifyOutcome };
    const accounts = await fakeAccounts(rolled);
    const verifier = new KeyVerifier({ accountsUrl: accounts.url, internalSecret: SECRET, ttlMs: 30_000, maxEntries: 1_000 });
    const secret = generateApiKey();
    expect((await verifier.verify(secret, end - 1)).ok).toBe(true);
    expect(await verifier.verify(secret, end)).toEqual({ ok: false, reason: 'replaced' });
    expect(accounts.calls()).toBe(1); // the second answer came from the cache, checked against the clock
    rolled.current = { ok: true, key: { ...key, expiresAt: new Date(end).toISOString() } };
    const other = generateApiKey();
    expect(await verifier.verify(other, end)).toEqual({ ok: false, reason: 'expired' });
  });

  it('does not keep an answer read before the key was revoked (eviction racing a lookup)', async () => {
    const answer = { current: { ok: true, key } as KeyVerifyOutcome };
    const accounts = await fakeAccounts(answer);
    const { redis, data, holdGets, nextGet } = fakeRedis();
    const verifier = new KeyVerifier({ accountsUrl: accounts.url, internalSecret: SECRET, ttlMs: 30_000, maxEntries: 1_000, redis });
    const secret = generateApiKey();
    // Another instance cached the key as valid in Redis.
    data.set(`kc:${hashApiKey(secret)}`, JSON.stringify(answer.current));
    data.set(`kc:id:${key.keyId}`, hashApiKey(secret));
    let release!: () => void;
    holdGets(new Promise<void>((r) => (release = r)));
    const reached = nextGet();
    const inFlight = verifier.verify(secret);
    await reached;
    // The key is revoked and the eviction event arrives while the Redis read is on its way back.
    answer.current = { ok: false, reason: 'revoked' };
    await verifier.evictKey(key.keyId);
    release();
    holdGets(null);
    expect(await inFlight).toEqual({ ok: false, reason: 'revoked' });
    expect(await verifier.verify(secret)).toEqual({ ok: false, reason: 'revoked' });
    expect(data.has(`kc:${hashApiKey(secret)}`)).toBe(false);
  });

  it('does not keep the shared answer read while the eviction was still removing it', async () => {
    const answer = { current: { ok: true, key } as KeyVerifyOutcome };
    const accounts = await fakeAccounts(answer);
    const { redis, holdMgets, nextGet } = fakeRedis();
    const verifier = new KeyVerifier({ accountsUrl: accounts.url, internalSecret: SECRET, ttlMs: 30_000, maxEntries: 1_000, redis });
    const secret = generateApiKey();
    expect((await verifier.verify(secret)).ok).toBe(true); // cached in memory and Redis
    answer.current = { ok: false, reason: 'revoked' };
    let release!: () => void;
    holdMgets(new Promise<void>((r) => (release = r)));
    const eviction = verifier.evictKey(key.keyId); // memory dropped; Redis not yet
    const reached = nextGet();
    const during = verifier.verify(secret); // reads Redis's old entry
    await reached;
    release();
    holdMgets(null);
    await eviction;
    await during; // answered before the eviction finished: either answer is fair
    expect(await verifier.verify(secret)).toEqual({ ok: false, reason: 'revoked' });
  });

  it('caches a valid key in memory and in Redis, and asks accounts once', async () => {
    const answer = { current: { ok: true, key } as KeyVerifyOutcome };
    const accounts = await fakeAccounts(answer);
    const { redis, data } = fakeRedis();
    const verifier = new KeyVerifier({ accountsUrl: accounts.url, internalSecret: SECRET, ttlMs: 30_000, maxEntries: 1_000, redis });
    const secret = generateApiKey();
    const results = await Promise.all(Array.from({ length: 5 }, () => verifier.verify(secret)));
    expect(results.every((r) => r.ok)).toBe(true);
    expect(await verifier.verify(secret)).toMatchObject({ ok: true, key: { keyId: key.keyId } });
    expect(accounts.calls()).toBe(1);
    expect(JSON.parse(data.get(`kc:${hashApiKey(secret)}`)!)).toMatchObject({ ok: true });
    expect(await verifier.verify('not-a-key')).toEqual({ ok: false, reason: 'malformed' });
  });
});

/** A full collection, so heap figures count what is retained rather than garbage not yet collected. */
function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** A Redis that knows every key (each answer made from the key's hash), so lookups never reach accounts. */
function everyKeyRedis() {
  const outcome = (hash: string): KeyVerifyOutcome => ({ ok: true, key: { ...key, keyId: `key_${hash.slice(0, 26).toUpperCase()}` } });
  return { get: async (k: string) => JSON.stringify(outcome(k.slice('kc:'.length))), pttl: async () => 30_000 } as unknown as Redis;
}

describe('KeyVerifier memory', () => {
  it('holds at most maxEntries outcomes while 100,000 distinct keys are verified', async () => {
    const verifier = new KeyVerifier({ accountsUrl: 'http://127.0.0.1:9', internalSecret: SECRET, ttlMs: 30_000, maxEntries: 5_000, redis: everyKeyRedis() });
    collect();
    const before = process.memoryUsage().heapUsed;
    let verified = 0;
    for (let i = 0; i < 100_000; i++) if ((await verifier.verify(generateApiKey())).ok) verified++;
    collect();
    const grown = process.memoryUsage().heapUsed - before;
    expect(verified).toBe(100_000);
    expect(verifier.cachedCount).toBe(5_000);
    expect(verifier.stats.redisHits).toBe(100_000);
    // Positive control: the same outcomes all kept (as the unbounded Map kept them) take several times more.
    const kept = new Map<string, { outcome: KeyVerifyOutcome }>();
    const redis = everyKeyRedis();
    collect();
    const beforeKept = process.memoryUsage().heapUsed;
    for (let i = 0; i < 100_000; i++) {
      const hash = i.toString(16).padStart(64, '0');
      kept.set(hash, { outcome: JSON.parse((await redis.get(`kc:${hash}`))!) as KeyVerifyOutcome });
    }
    collect();
    const grownKept = process.memoryUsage().heapUsed - beforeKept;
    expect(kept.size).toBe(100_000);
    expect(grownKept).toBeGreaterThan(20 * 1024 * 1024);
    expect(grown).toBeLessThan(grownKept / 5);
  }, 60_000);

  it('looks up, on its request, a key left unused for its whole TTL, and refreshes nothing unused', async () => {
    const { answer, accounts, verifier, secret, advance } = await clockedVerifier({ redis: false });
    await verifier.verify(secret);
    advance(10_000);
    await verifier.verify(secret); // within the first half of the TTL: from the cache, no refresh
    expect(accounts.calls()).toBe(1);
    advance(21_000);
    answer.current = { ok: false, reason: 'revoked' };
    expect(await verifier.verify(secret)).toEqual({ ok: false, reason: 'revoked' });
    expect(accounts.calls()).toBe(2);
    await verifier.settleRefreshes();
    expect(accounts.batches).toEqual([]);
  });
});

describe('KeyVerifier lookups', () => {
  it('asks accounts about the cold keys of one turn of the event loop in one call', async () => {
    const answer = { current: { ok: true, key } as KeyVerifyOutcome };
    const accounts = await fakeAccounts(answer);
    const verifier = new KeyVerifier({ accountsUrl: accounts.url, internalSecret: SECRET, ttlMs: 30_000, maxEntries: 100 });
    const secrets = Array.from({ length: 3 }, () => generateApiKey());
    const outcomes = await Promise.all([...secrets, secrets[0]!].map((s) => verifier.verify(s)));
    expect(outcomes.every((o) => o.ok && o.key.keyId === key.keyId)).toBe(true);
    expect(accounts.batches).toEqual([secrets.map(hashApiKey)]);
    expect(accounts.calls()).toBe(0);
    // Positive control: a lone cold key goes by itself on the single route.
    expect((await verifier.verify(generateApiKey())).ok).toBe(true);
    expect(accounts.calls()).toBe(1);
    expect(accounts.batches.length).toBe(1);
  });
});

describe('KeyVerifier refresh-ahead', () => {
  it('keeps an entry another instance shared no longer than Redis does, so no answer outlives the TTL', async () => {
    const answer = { current: { ok: true, key } as KeyVerifyOutcome };
    const accounts = await fakeAccounts(answer);
    let clock = 1_000_000;
    const { redis } = fakeRedis(() => clock);
    const instance = () => new KeyVerifier({ accountsUrl: accounts.url, internalSecret: SECRET, ttlMs: 30_000, maxEntries: 10, redis, now: () => clock });
    const [first, second] = [instance(), instance()];
    const secret = generateApiKey();
    afterThisTest(() => first.stop());
    afterThisTest(() => second.stop());
    expect((await first.verify(secret)).ok).toBe(true);
    expect(accounts.calls()).toBe(1);
    clock += 25_000;
    expect((await second.verify(secret)).ok).toBe(true); // from Redis, with 5 s of its TTL left
    expect(accounts.calls()).toBe(1);
    answer.current = { ok: false, reason: 'revoked' }; // and its event was lost
    clock += 4_000;
    await second.settleRefreshes();
    expect(accounts.calls() + accounts.batches.length).toBe(1); // positive control: still served from memory
    clock += 2_000; // 31 s after the lookup
    expect(await second.verify(secret)).toEqual({ ok: false, reason: 'revoked' });
    expect(accounts.calls()).toBe(2);
  });

  it('at stop, drops the refreshes still gathering and waits for those under way', async () => {
    const gathering = await clockedVerifier();
    const underWay = await clockedVerifier();
    for (const v of [gathering, underWay]) {
      await v.verifier.verify(v.secret);
      v.answer.current = { ok: true, key: { ...key, plan: 'enterprise' } };
      v.advance(16_000);
      await v.verifier.verify(v.secret); // past half the TTL: a refresh gathers
    }
    await gathering.verifier.stop();
    await gathering.verifier.settleRefreshes(); // would send anything still queued
    expect(gathering.accounts.batches).toEqual([]);

    // Positive control: sent, the refresh is under way when stop() is called, which returns once it has written.
    const sent = underWay.verifier.settleRefreshes();
    await underWay.verifier.stop();
    expect(underWay.accounts.batches).toEqual([[hashApiKey(underWay.secret)]]);
    expect(JSON.parse(underWay.data.get(`kc:${hashApiKey(underWay.secret)}`)!)).toMatchObject({ ok: true, key: { plan: 'enterprise' } });
    await sent;
  });

  it('answers a key in steady use from the cache, refreshing it once in the background per half TTL', async () => {
    const { answer, accounts, data, verifier, secret, advance } = await clockedVerifier();
    expect(await verifier.verify(secret)).toMatchObject({ ok: true, key: { plan: 'starter' } });
    advance(14_000);
    await verifier.verify(secret);
    await verifier.settleRefreshes();
    expect(accounts.batches).toEqual([]); // positive control: not yet half the TTL
    // The plan changed and its event was lost: the refresh is what brings the change in.
    answer.current = { ok: true, key: { ...key, plan: 'enterprise' } };
    advance(2_000);
    const served = await Promise.all(Array.from({ length: 5 }, () => verifier.verify(secret)));
    expect(served.map((o) => o.ok && o.key.plan)).toEqual(Array(5).fill('starter')); // none waited for accounts
    await verifier.settleRefreshes();
    expect(accounts.batches).toEqual([[hashApiKey(secret)]]); // one refresh for the five uses
    expect(accounts.calls()).toBe(1);
    expect(await verifier.verify(secret)).toMatchObject({ ok: true, key: { plan: 'enterprise' } });
    expect(JSON.parse(data.get(`kc:${hashApiKey(secret)}`)!)).toMatchObject({ ok: true, key: { plan: 'enterprise' } });
    // Five minutes of use every 10 s, far past the TTL: never a lookup on a request.
    for (let i = 0; i < 30; i++) {
      advance(10_000);
      expect((await verifier.verify(secret)).ok).toBe(true);
      await verifier.settleRefreshes();
    }
    expect(accounts.calls()).toBe(1);
    expect(accounts.batches.length).toBe(16);
  });

  it('does not put back a refreshed answer when its key was evicted while the refresh was asking', async () => {
    const { answer, accounts, data, verifier, secret, advance } = await clockedVerifier();
    const hash = hashApiKey(secret);
    await verifier.verify(secret);
    advance(16_000);
    let release!: () => void;
    accounts.holdBatches(new Promise<void>((r) => (release = r)));
    const decided = accounts.nextBatch();
    expect((await verifier.verify(secret)).ok).toBe(true); // from the cache; queues the refresh
    const refreshing = verifier.settleRefreshes();
    await decided; // accounts has answered "valid", before the revocation
    answer.current = { ok: false, reason: 'revoked' };
    await verifier.evictKey(key.keyId);
    // A request in between looks the key up again and holds the new answer.
    expect(await verifier.verify(secret)).toEqual({ ok: false, reason: 'revoked' });
    release();
    accounts.holdBatches(null);
    await refreshing;
    expect(accounts.batches).toEqual([[hash]]);
    expect(await verifier.verify(secret)).toEqual({ ok: false, reason: 'revoked' });
    expect(data.has(`kc:${hash}`)).toBe(false);
    expect(accounts.calls()).toBe(2);
  });

  it('drops the shared entry when a refresh finds the key no longer valid', async () => {
    const { answer, accounts, data, verifier, secret, advance } = await clockedVerifier();
    await verifier.verify(secret);
    expect(data.has(`kc:${hashApiKey(secret)}`)).toBe(true);
    answer.current = { ok: false, reason: 'revoked' }; // and the event was lost
    advance(16_000);
    expect((await verifier.verify(secret)).ok).toBe(true);
    await verifier.settleRefreshes();
    expect(await verifier.verify(secret)).toEqual({ ok: false, reason: 'revoked' });
    expect(data.has(`kc:${hashApiKey(secret)}`)).toBe(false);
    expect(accounts.calls()).toBe(1);
  });
});
