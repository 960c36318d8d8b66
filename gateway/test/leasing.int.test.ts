import { createRedis, type Redis } from '@dap/redis';
import { newId } from '@dap/contracts';
import { stackEnv } from '@dap/testing';
import { mulberry32 } from '@dap/random';
import { LeasingLimiter } from '../src/rate-limit/leasing.limiter.ts';
import { SlidingWindowLimiter, type Reservation } from '../src/rate-limit/sliding-window.limiter.ts';

/**
 * The leasing limiter against the test stack's Redis, on one test clock that serves as Redis's time and as
 * the leases' clock, so every instant is chosen by the test.
 */
describe('LeasingLimiter on Redis', () => {
  let redis: Redis;
  const clock = { t: Date.now() };
  const now = () => clock.t;
  beforeAll(async () => {
    redis = createRedis(stackEnv().REDIS_URL);
    await new Promise((r) => redis.once('ready', r));
  });
  afterAll(() => redis.disconnect());

  /** One gateway instance: its leasing limiter and the count of its round trips to Redis. */
  function instance(windowMs: number, holdMs = 100) {
    const window = new SlidingWindowLimiter(redis, windowMs, now);
    const trips = jest.spyOn(window, 'reserve');
    return { limiter: new LeasingLimiter(window, { holdMs, clock: now }), trips };
  }
  const zcard = (account: string) => redis.zcard(`rl:{${account}}`);

  it('asks Redis on every request of a bucket whose limit is too small to lease from (Starter: 100)', async () => {
    const { limiter, trips } = instance(60_000);
    const account = newId('acct');
    const seen = [];
    for (let i = 0; i < 5; i++) seen.push((await limiter.check(account, 100)).remaining);
    expect(seen).toEqual([99, 98, 97, 96, 95]);
    expect(trips).toHaveBeenCalledTimes(5);
    for (const [, , want, hold] of trips.mock.calls) expect([want, hold]).toEqual([1, 0]);
    // Stored at the moment of the request, as without leases.
    const scores = await redis.zrange(`rl:{${account}}`, 0, -1, 'WITHSCORES');
    expect(scores.filter((_, i) => i % 2 === 1).map(Number)).toEqual(Array(5).fill(clock.t));
  });

  it('leases one permit at a time to requests a hold apart, and more to requests that follow each other closely', async () => {
    const { limiter, trips } = instance(60_000);
    const quiet = newId('acct');
    for (let i = 0; i < 6; i++) {
      expect(await limiter.check(quiet, 1_000)).toMatchObject({ allowed: true, remaining: 999 - i });
      clock.t += 100;
    }
    expect(trips.mock.calls.map(([, , want]) => want)).toEqual([1, 1, 1, 1, 1, 1]);
    expect(await zcard(quiet)).toBe(6);
    trips.mockClear();
    const busy = newId('acct');
    for (let i = 0; i < 40; i++) {
      expect(await limiter.check(busy, 1_000)).toMatchObject({ allowed: true, remaining: 999 - i });
      clock.t += 1;
    }
    // Doubling while each lease runs out within its hold: 1, 2, 4, 8, then the cap of 1 % (10).
    expect(trips.mock.calls.map(([, , want]) => want)).toEqual([1, 2, 4, 8, 10, 10, 10]);
  });

  it('serves a busy bucket from leases, counts down its remaining exactly, and refuses past the limit', async () => {
    const { limiter, trips } = instance(60_000);
    const account = newId('acct');
    const decisions = await Promise.all(Array.from({ length: 1_030 }, () => limiter.check(account, 1_000)));
    const admitted = decisions.filter((d) => d.allowed);
    expect(admitted).toHaveLength(1_000);
    expect(decisions.slice(1_000).every((d) => !d.allowed && d.remaining === 0)).toBe(true);
    // One instance alone: its remaining counts down by one per admitted request.
    expect(admitted.map((d) => d.remaining)).toEqual(Array.from({ length: 1_000 }, (_, i) => 999 - i));
    // Leases of up to 1 % of the limit: 1,000 admissions took about a hundred trips, not a thousand.
    expect(trips.mock.calls.length).toBeLessThan(150);
    expect(Math.max(...trips.mock.calls.map(([, , want]) => want))).toBe(10);
    expect(await zcard(account)).toBe(1_000);
  });

  it('never uses a permit after its hold, and hands the unused ones back so other instances get them', async () => {
    const a = instance(60_000);
    const b = instance(60_000);
    const account = newId('acct');
    // A burst of 10 on A: one trip leases 10 (this request's and 9 more), all used.
    await Promise.all(Array.from({ length: 10 }, () => a.limiter.check(account, 1_000)));
    // The next request on A runs out and asks again for twice as many, of which it uses one.
    expect(await a.limiter.check(account, 1_000)).toMatchObject({ allowed: true });
    const leased = Number(a.trips.mock.calls.at(-1)![2]);
    expect(leased).toBeGreaterThan(1);
    expect(await zcard(account)).toBe(10 + leased);
    // A does not count its own unused permits as used; B, which cannot use them, sees them held.
    expect(await a.limiter.peek(account, 1_000)).toMatchObject({ remaining: 1_000 - 11 });
    expect(await b.limiter.peek(account, 1_000)).toMatchObject({ remaining: 1_000 - 10 - leased });

    // Past the hold, A's next request does not take from the old lease: it asks Redis again.
    clock.t += 100;
    const tripsBefore = a.trips.mock.calls.length;
    await a.limiter.check(account, 1_000);
    expect(a.trips.mock.calls.length).toBe(tripsBefore + 1);
    // Its unused permits went back: 12 requests admitted, and the new lease's unused ones.
    const newLease = Number(a.trips.mock.calls.at(-1)![2]);
    expect(await zcard(account)).toBe(12 + newLease - 1);
    // The sweep hands back a lapsed lease no request touched; stop() hands back a live one.
    clock.t += 100;
    await a.limiter.sweep();
    expect(await zcard(account)).toBe(12);
    // Five at once are leased just what they need; the one after them runs out and leases more than it uses.
    await Promise.all(Array.from({ length: 5 }, () => a.limiter.check(account, 1_000)));
    expect(await zcard(account)).toBe(17);
    await a.limiter.check(account, 1_000);
    expect(await zcard(account)).toBeGreaterThan(18); // positive control: a live lease holds more than it used
    await a.limiter.stop();
    expect(await zcard(account)).toBe(18);
    expect(await b.limiter.peek(account, 1_000)).toMatchObject({ remaining: 1_000 - 18 });
  });

  it('admits no more than the limit in any window, across two instances with bursts, lapses and sweeps', async () => {
    const windowMs = 5_000;
    const limit = 600; // leases of up to 6
    const instances = [instance(windowMs), instance(windowMs)];
    const account = newId('acct');
    const random = mulberry32(23);
    const admittedAt: number[] = [];
    const start = clock.t;
    let nextSweep = clock.t + 100;
    while (clock.t < start + 3 * windowMs) {
      // Each 4-ms step, each instance gets 0–2 requests, and now and then a burst of 20.
      const checks = instances.flatMap(({ limiter }) => {
        const n = random() < 0.02 ? 20 : Math.floor(random() * 3);
        return Array.from({ length: n }, () => limiter.check(account, limit).then((d) => d.allowed && admittedAt.push(clock.t)));
      });
      await Promise.all(checks);
      clock.t += 4;
      if (clock.t >= nextSweep) {
        nextSweep += 100;
        await Promise.all(instances.map(({ limiter }) => limiter.sweep()));
      }
    }
    await Promise.all(instances.map(({ limiter }) => limiter.stop()));
    admittedAt.sort((x, y) => x - y);
    let busiest = 0;
    for (let i = 0, j = 0; i < admittedAt.length; i++) {
      while (admittedAt[j]! <= admittedAt[i]! - windowMs) j++;
      busiest = Math.max(busiest, i - j + 1);
    }
    // Demand (about 550 per second) far exceeds the limit, so windows fill: never past it, and not much under.
    expect(busiest).toBeLessThanOrEqual(limit);
    expect(busiest).toBeGreaterThanOrEqual(limit - 2 * 6);
    expect(admittedAt.length).toBeGreaterThan(2 * limit);
    // And the leases paid: the trips that admitted anything were far fewer than the requests they admitted.
    const reservations = await Promise.all(instances.flatMap(({ trips }) => trips.mock.results.map((r) => r.value as Promise<Reservation>)));
    const admittingTrips = reservations.filter((r) => r.granted > 0).length;
    expect(admittingTrips).toBeLessThan(admittedAt.length / 3); // without leases: one per request
  }, 60_000);
});
