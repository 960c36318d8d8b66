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

  it('lets requests older than the window go', async () => {
    const limiter = new SlidingWindowLimiter(redis, 50);
    const account = newId('acct');
    expect(await limiter.check(account, 1)).toMatchObject({ allowed: true });
    expect(await limiter.check(account, 1)).toMatchObject({ allowed: false });
    // The scripts read Redis's own clock, so the window can only pass in real time here.
    const until = Date.now() + 2_000;
    let d = await limiter.peek(account, 1);
    while (!d.allowed && Date.now() < until) d = await limiter.peek(account, 1);
    expect(d).toMatchObject({ allowed: true, remaining: 1 });
    expect(await limiter.check(account, 1)).toMatchObject({ allowed: true });
  });
});
