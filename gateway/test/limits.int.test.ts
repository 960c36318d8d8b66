import { spawn, type ChildProcess } from 'node:child_process';
import { createRedis } from '@dap/redis';
import { http, waitFor } from '@dap/testing';
import { freePort } from '../../deploy/local/supervisor.ts';
import { bearer, startHarness } from './harness.ts';

let h: Awaited<ReturnType<typeof startHarness>>;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

interface Sample {
  sent: number;
  received: number;
  status: number;
}

/**
 * Exactness of the per-account sliding window: two gateway instances sharing Redis, 3× the starter plan's 100
 * requests per minute for a little over two minutes, in concurrent bursts across both gateways and both keys.
 * The minutes pass on the harness's clock (the limiter's, in place of Redis's), so the test takes seconds.
 */
it('never admits more than the limit in any 60-s window, and admits the limit in each full window', async () => {
  const [g1, g2] = [await h.gateway(), await h.gateway()];
  const { accountId, secret } = await h.newAccount('starter');
  const { secret: second } = await h.accounts.accounts.createKey(accountId, { name: 'second' });
  const LIMIT = 100;
  const DURATION_MS = 125_000;
  const BURST = 5;
  const EVERY_MS = (60_000 * BURST) / (3 * LIMIT); // a burst this often is 3× overload
  const samples: Sample[] = [];
  const t0 = h.clock.now();
  for (let at = 0; at < DURATION_MS; at += EVERY_MS) {
    h.clock.advance(Math.max(0, t0 + at - h.clock.now()));
    await Promise.all(
      Array.from({ length: BURST }, async (_, c) => {
        const sent = h.clock.now();
        const res = await http('GET', `${(c % 2 ? g1 : g2)!.url}/v1/models`, { headers: bearer(c % 3 ? secret : second) });
        samples.push({ sent, received: h.clock.now(), status: res.status });
      }),
    );
  }
  expect(samples.filter((s) => s.status !== 200 && s.status !== 429)).toEqual([]);
  const admitted = samples.filter((s) => s.status === 200).sort((a, b) => a.sent - b.sent);
  expect(samples).toHaveLength((DURATION_MS / EVERY_MS) * BURST);

  // A certain over-admission: LIMIT + 1 admitted requests that all happened within less than 60 s.
  for (let i = 0; i + LIMIT < admitted.length; i++) {
    const group = admitted.slice(i, i + LIMIT + 1);
    const span = Math.max(...group.map((s) => s.received)) - group[0]!.sent;
    expect(span).toBeGreaterThanOrEqual(60_000);
  }
  // Under steady overload each full window admits the limit, give or take 1 %.
  for (const k of [0, 1]) {
    const inWindow = admitted.filter((s) => s.sent >= t0 + k * 60_000 && s.sent < t0 + (k + 1) * 60_000).length;
    expect(inWindow).toBeGreaterThanOrEqual(LIMIT * 0.99);
    expect(inWindow).toBeLessThanOrEqual(LIMIT);
  }
}, 60_000);

it('keeps serving under the fallback limit while Redis is down, never a 5xx, and returns to Redis when it is back', async () => {
  const port = await freePort();
  const start = () => spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  let redis: ChildProcess = start();
  const probe = createRedis(`redis://127.0.0.1:${port}`);
  probe.on('error', () => {});
  try {
    await waitFor(async () => (await probe.ping()) === 'PONG', { what: 'redis up' });
    const g = await h.gateway({ REDIS_URL: `redis://127.0.0.1:${port}` });
    const { accountId, secret } = await h.newAccount('professional');
    const statuses: number[] = [];
    const burst = async (n: number) => {
      for (let i = 0; i < n; i++) statuses.push((await http('GET', `${g.url}/v1/models`, { headers: bearer(secret) })).status);
    };
    await burst(20);
    expect(g.stats.limiterFallbacks).toBe(0);
    // The window holds the 20 requests and the permits leased beside them (RATE_LIMIT_LEASE_MS), until the
    // lease lapses and its unused permits go back.
    expect(await probe.zcard(`rl:{${accountId}}`)).toBeGreaterThan(20);
    h.clock.advance(100);
    await waitFor(async () => (await probe.zcard(`rl:{${accountId}}`)) === 20, { what: 'the lapsed lease handed back' });

    redis.kill('SIGKILL');
    await new Promise((r) => redis.once('exit', r));
    await burst(50);
    expect(g.stats.limiterFallbacks).toBeGreaterThanOrEqual(50);

    redis = start();
    await waitFor(async () => (await probe.ping().catch(() => null)) === 'PONG', { what: 'redis back' });
    await waitFor(
      async () => {
        const before = g.stats.limiterFallbacks;
        await burst(1);
        return g.stats.limiterFallbacks === before;
      },
      { timeoutMs: 10_000, what: 'limiter back on redis' },
    );
    await burst(10);
    expect(await probe.zcard(`rl:{${accountId}}`)).toBeGreaterThanOrEqual(10);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(statuses.every((s) => s === 200)).toBe(true);
  } finally {
    probe.disconnect();
    redis.kill('SIGKILL');
  }
}, 60_000);
