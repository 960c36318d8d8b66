import { once } from 'node:events';
import { createRedis } from '@dap/redis';
import { SlidingWindowLimiter } from '../../../gateway/src/rate-limit/sliding-window.limiter.ts';
import { system, type BenchContext, type ScenarioResult } from '../lib/context.ts';
import { FORECAST_MODEL_ID } from '../../../services/models/src/domain/builtin/index.ts';
import { maxInSlidingWindow, round, Samples, summarize } from '../lib/stats.ts';

/** What `redis.info('commandstats')` says about one command: calls and total µs spent in Redis. */
function commandStats(info: string, cmd: string): { calls: number; usec: number } {
  const m = new RegExp(`^cmdstat_${cmd}:calls=(\\d+),usec=(\\d+)`, 'm').exec(info);
  return m ? { calls: Number(m[1]), usec: Number(m[2]) } : { calls: 0, usec: 0 };
}

/**
 * Exactness: two gateway instances, 100 clients (50 each), one starter account offered 3× its limit for
 * 2.5 windows. Every admission is a member of the account's Redis sorted set, scored with the Redis server's
 * clock, and stays there for a whole window; snapshots taken every window/10 therefore see every admission.
 * Their union, checked against the number of 2xx the clients got, gives the exact admission times, and the
 * largest count in any sliding window of the configured length is compared with the limit.
 *
 * Cost: a tight sequential loop of SlidingWindowLimiter.check (one EVALSHA round trip each), next to a PING
 * loop on the same connection, plus Redis's own commandstats (µs spent inside Redis per script call).
 */
export async function limiterScenario(ctx: BenchContext): Promise<ScenarioResult> {
  const sys = await system(ctx);
  const quick = ctx.opts.quick;
  const windowMs = Number(sys.env.RATE_LIMIT_WINDOW_MS);
  const limit = Number(/starter=(\d+)/.exec(sys.env.PLAN_LIMITS_OVERRIDE ?? '')?.[1]);
  const runSec = Math.round((windowMs / 1000) * 2.5);
  const offeredPerSec = (3 * limit) / (windowMs / 1000);
  const account = sys.createAccount('starter', 'Bench Limiter');
  const redis = createRedis(sys.env.REDIS_URL!);
  try {
    if (redis.status !== 'ready') await once(redis, 'ready');
    const key = `rl:{${account.accountId}}`;
    const members = new Map<string, number>();
    // Every admission's entry, as the snapshots saw it. An entry that leaves the set before its window has
    // passed was leased by a gateway and handed back unused (RATE_LIMIT_LEASE_MS): it admitted nothing.
    const snapshot = async () => {
      const [[, time], [, flat]] = (await redis.multi().time().zrange(key, 0, -1, 'WITHSCORES').exec()) as [[null, [string, string]], [null, string[]]];
      const redisNow = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
      const present = new Set<string>();
      for (let i = 0; i + 1 < flat.length; i += 2) {
        members.set(flat[i]!, Number(flat[i + 1]));
        present.add(flat[i]!);
      }
      for (const [member, score] of members) if (!present.has(member) && score > redisNow - windowMs) members.delete(member);
    };
    let snapping = true;
    const snapper = (async () => {
      while (snapping) {
        await snapshot().catch(() => {});
        await new Promise((r) => setTimeout(r, Math.min(1_000, windowMs / 10)));
      }
    })();
    ctx.log(`limiter: ${offeredPerSec} req/s offered (3 × ${limit} per ${windowMs / 1000} s) for ${runSec} s through 2 gateways, 100 clients`);
    const headers = { authorization: `Bearer ${account.apiKey}` };
    const path = `/v1/models/${FORECAST_MODEL_ID}`; // a route that touches no database
    // Both gateways know the key before the clock starts.
    let warmAdmitted = 0;
    for (const gw of [sys.urls.gateway, sys.urls.gateway2]) {
      const res = await fetch(`${gw}${path}`, { headers });
      await res.arrayBuffer();
      if (res.ok) warmAdmitted++;
    }
    const loads = await Promise.all(
      [sys.urls.gateway, sys.urls.gateway2].map((gw) =>
        ctx.load({ mode: 'overload', url: `${gw}${path}`, headers, connections: 50, rate: Math.round(offeredPerSec / 2), durationSec: runSec }),
      ),
    );
    snapping = false;
    await snapper;
    await new Promise((r) => setTimeout(r, 500)); // the gateways' last leases lapse and go back
    await snapshot();
    const count = (prefix: string) => loads.reduce((n, r) => n + Object.entries(r.statusCounts).reduce((m, [s, c]) => (s.startsWith(prefix) ? m + c : m), 0), 0);
    const admitted = count('2') + warmAdmitted;
    const refused = loads.reduce((n, r) => n + (r.statusCounts['429'] ?? 0), 0);
    const other = loads.reduce((n, r) => n + r.requests + r.errors, 0) - (admitted - warmAdmitted) - refused;
    const times = [...members.values()];
    const { max, at } = maxInSlidingWindow(times, windowMs);
    const overAdmissions = Math.max(0, max - limit);
    // Redis may hold a few more admissions than the clients counted: responses still in flight when the load
    // generator stopped are not recorded. Fewer would mean the snapshots missed some, and the check is void.
    const complete = times.length >= admitted;
    if (!complete) ctx.note(`limiter: clients saw ${admitted} admissions but Redis snapshots hold only ${times.length}; the exactness check is incomplete`);
    if (other) ctx.note(`limiter: ${other} responses were neither 2xx nor 429 (or failed)`);

    // Cost per check.
    const n = quick ? 2_000 : 20_000;
    const limiter = new SlidingWindowLimiter(redis, 60_000);
    const costKey = `bench-cost-${account.accountId}`;
    for (let i = 0; i < 200; i++) await limiter.check(costKey, 1e9); // loads the script, warms up
    const pingSamples = new Samples();
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await redis.ping();
      pingSamples.push((performance.now() - t) * 1000);
    }
    const before = commandStats(await redis.info('commandstats'), 'evalsha');
    const checkSamples = new Samples();
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await limiter.check(costKey, 1e9);
      checkSamples.push((performance.now() - t) * 1000);
    }
    const after = commandStats(await redis.info('commandstats'), 'evalsha');
    const inRedisUs = after.calls > before.calls ? (after.usec - before.usec) / (after.calls - before.calls) : NaN;
    // Concurrent: 64 checks in flight on the one connection (what a busy gateway does), checks per second.
    const concurrent = quick ? 5_000 : 50_000;
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next++ < concurrent) await limiter.check(costKey, 1e9);
      }),
    );
    const checksPerSec = concurrent / ((performance.now() - t0) / 1000);
    await redis.del(costKey, `${costKey}:seq`);
    const check = summarize(checkSamples.values());
    const ping = summarize(pingSamples.values());
    ctx.log(
      `limiter: max ${max} admissions in a ${windowMs / 1000}-s window (limit ${limit}); check ${round(check.p50)} µs p50 (PING ${round(ping.p50)} µs), ${round(inRedisUs)} µs inside Redis`,
    );

    return {
      targets: [
        {
          id: 'limiter.over_admissions',
          scenario: 'limiter',
          figure: `over-admissions per ${windowMs / 1000}-s window`,
          target: '0',
          value: `${overAdmissions} (max ${max} of limit ${limit} in any window; ${admitted} admitted, ${refused} refused)`,
          met: complete ? overAdmissions === 0 : null,
          detail:
            `2 gateway instances, 100 autocannon clients offering ${offeredPerSec} req/s (3× the limit) for ${runSec} s; admission times from the Redis sorted set ` +
            `(server clock), every sliding ${windowMs / 1000}-s window checked${windowMs !== 60_000 ? ' (quick run: shorter window)' : ''}`,
        },
        {
          id: 'limiter.redis_cost',
          scenario: 'limiter',
          figure: 'Redis cost per check',
          target: '(report)',
          value: `${round(check.p50)} µs p50 / ${round(check.p99)} µs p99 round trip; ${round(inRedisUs)} µs in Redis; ${Math.round(checksPerSec)} checks/s with 64 in flight`,
          met: null,
          detail: `${n} sequential SlidingWindowLimiter.check calls (one EVALSHA each) on one connection; a PING round trip on it takes ${round(ping.p50)} µs p50`,
        },
      ],
      data: {
        limit,
        windowSec: windowMs / 1000,
        runSec,
        offeredPerSec,
        admitted,
        refused,
        otherResponses: other,
        redisAdmissionsSeen: times.length,
        maxInAnyWindow: max,
        maxWindowEndsAt: Number.isFinite(at) ? new Date(at).toISOString() : null,
        overAdmissions,
        perGateway: loads.map((r, i) => ({ gateway: i + 1, requests: r.requests, statusCounts: r.statusCounts, errors: r.errors, p99ms: round(r.latency.p99) })),
        costPerCheckUs: { ...Object.fromEntries(Object.entries(check).map(([k, v]) => [k, round(v)])), insideRedis: round(inRedisUs) },
        pingUs: Object.fromEntries(Object.entries(ping).map(([k, v]) => [k, round(v)])),
        checksPerSecConcurrent64: Math.round(checksPerSec),
      },
    };
  } finally {
    redis.disconnect();
  }
}
