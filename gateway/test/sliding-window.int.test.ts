import { createRedis, type Redis } from '@dap/redis';
import { newId } from '@dap/contracts';
import { stackEnv } from '@dap/testing';
import { SlidingWindowLimiter } from '../src/rate-limit/sliding-window.limiter.ts';

/** The Redis limiter's two scripts against the test stack's Redis: admitting (`check`) and looking (`peek`). */
describe('SlidingWindowLimiter on Redis', () => {
  let redis: Redis;
  beforeAll(async () => {
    redis = createRedis(stackEnv().REDIS_URL);
    await new Promise((r) => redis.once('ready', r));
  });
  afterAll(() => redis.disconnect());

  it('admits the limit in a window, refuses past it, and peeks at the same window without taking a slot', async () => {
    const limiter = new SlidingWindowLimiter(redis, 60_000);
    const account = newId('acct');
    const fresh = await limiter.peek(account, 2);
    expect(fresh).toMatchObject({ allowed: true, limit: 2, remaining: 2, resetMs: 60_000, source: 'redis' });
    const first = await limiter.check(account, 2);
    expect(first).toMatchObject({ allowed: true, remaining: 1 });
    expect(first.resetMs).toBeGreaterThan(59_000);
    expect(first.resetMs).toBeLessThanOrEqual(60_000);
    expect(await limiter.peek(account, 2)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await limiter.check(account, 2)).toMatchObject({ allowed: true, remaining: 0 });
    const refused = await limiter.check(account, 2);
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    expect(refused.resetMs).toBeLessThanOrEqual(60_000);
    const peeked = await limiter.peek(account, 2);
    expect(peeked).toMatchObject({ allowed: false, remaining: 0 });
    expect(peeked.resetMs).toBeGreaterThan(59_000);
    // Another account's window is its own.
    expect(await limiter.peek(newId('acct'), 2)).toMatchObject({ allowed: true, remaining: 2 });
    await redis.del(`rl:{${account}}`, `rl:{${account}}:seq`);
  });

  it('lets a request go exactly when it is a window old, on the clock it is given', async () => {
    const clock = { t: Date.now() };
    const limiter = new SlidingWindowLimiter(redis, 60_000, () => clock.t);
    const account = newId('acct');
    expect(await limiter.check(account, 1)).toMatchObject({ allowed: true });
    clock.t += 30_000;
    expect(await limiter.check(account, 1)).toMatchObject({ allowed: false, resetMs: 30_000 });
    clock.t += 29_999;
    expect(await limiter.peek(account, 1)).toMatchObject({ allowed: false, remaining: 0, resetMs: 1 });
    expect(await limiter.check(account, 1)).toMatchObject({ allowed: false });
    clock.t += 1;
    expect(await limiter.peek(account, 1)).toMatchObject({ allowed: true, remaining: 1, resetMs: 60_000 });
    expect(await limiter.check(account, 1)).toMatchObject({ allowed: true, remaining: 0, resetMs: 60_000 });
    await redis.del(`rl:{${account}}`, `rl:{${account}}:seq`);
  });
});
