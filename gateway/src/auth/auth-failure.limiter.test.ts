import type { Redis } from '@dap/redis';
import { AuthFailureLimiter } from './auth-failure.limiter.ts';

/** A Redis whose MULTI answers from `shared` (the count other instances wrote too), or fails when told to. */
function fakeRedis(opts: { shared?: Map<string, number>; readsFail?: () => boolean; writesFail?: () => boolean } = {}) {
  const shared = opts.shared ?? new Map<string, number>();
  const multi = () => {
    const ops: Array<() => [null, unknown]> = [];
    let write = false;
    const chain = {
      get: (key: string) => (ops.push(() => [null, shared.has(key) ? String(shared.get(key)) : null]), chain),
      pttl: () => (ops.push(() => [null, 30_000]), chain),
      incr: (key: string) => ((write = true), ops.push(() => (shared.set(key, (shared.get(key) ?? 0) + 1), [null, shared.get(key)])), chain),
      pexpire: () => (ops.push(() => [null, 1]), chain),
      exec: async () => {
        if ((write ? opts.writesFail : opts.readsFail)?.()) throw new Error('Command timed out');
        return ops.map((op) => op());
      },
    };
    return chain;
  };
  return { redis: { multi } as unknown as Redis, shared };
}

describe('AuthFailureLimiter', () => {
  const ip = '127.1.2.3';
  const t0 = 1_800_000_000_000;

  async function failTimes(limiter: AuthFailureLimiter, n: number) {
    for (let i = 0; i < n; i++) await limiter.recordFailure(ip, t0 + i);
  }

  it('refuses an address once its failures reach the limit, and not before', async () => {
    const limiter = new AuthFailureLimiter(fakeRedis().redis, 5);
    await failTimes(limiter, 4);
    expect(await limiter.blocked(ip, t0 + 10)).toBeNull();
    await failTimes(limiter, 1);
    expect(await limiter.blocked(ip, t0 + 10)).toBe(30); // Redis's TTL, in seconds
    expect(await limiter.blocked('127.9.9.9', t0 + 10)).toBeNull();
  });

  it('still refuses when Redis stored the failures but cannot be read (this instance counted them too)', async () => {
    const limiter = new AuthFailureLimiter(fakeRedis({ readsFail: () => true }).redis, 5);
    await failTimes(limiter, 4);
    expect(await limiter.blocked(ip, t0 + 10)).toBeNull();
    await failTimes(limiter, 1);
    expect(await limiter.blocked(ip, t0 + 10)).toBe(60);
  });

  it('counts alone while Redis is unreachable, and forgets after the minute', async () => {
    const limiter = new AuthFailureLimiter(fakeRedis({ readsFail: () => true, writesFail: () => true }).redis, 3);
    await failTimes(limiter, 3);
    expect(await limiter.blocked(ip, t0 + 1_000)).toBe(59); // the minute began with the first failure
    expect(await limiter.blocked(ip, t0 + 61_000)).toBeNull();
  });

  it("takes the shared count where other instances saw more of the address's failures", async () => {
    const { redis, shared } = fakeRedis();
    const limiter = new AuthFailureLimiter(redis, 5);
    await failTimes(limiter, 1);
    expect(await limiter.blocked(ip, t0 + 10)).toBeNull();
    shared.set(`af:${ip}`, 5);
    expect(await limiter.blocked(ip, t0 + 10)).toBe(30);
  });
});
