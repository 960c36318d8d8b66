import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PLAN_LIMITS, PLANS } from '@dap/contracts';
import { createRedis } from '@dap/redis';
import { stackEnv } from '@dap/testing';
import { SlidingWindowLimiter } from '../../../gateway/src/rate-limit/sliding-window.limiter.ts';
import { FORECAST_MODEL_ID } from '../../../services/models/src/domain/builtin/index.ts';
import { system, type BenchContext, type ScenarioResult } from '../lib/context.ts';
import { describeGrowth, type GrowthChart, type GrowthPoint } from '../lib/growth-chart.ts';
import { cpuTimeMs } from '../lib/procs.ts';
import { seedAccounts } from '../lib/seed-accounts.ts';
import { median, round } from '../lib/stats.ts';
import type { GroupByBenchResult } from '../services/analytics/groupby.bench.ts';
import type { DeliveryBenchOptions, DeliveryThroughputResult } from '../services/webhooks/delivery.bench.ts';
import { ownerBench } from './owner-bench.ts';

interface Part {
  charts: GrowthChart[];
  rows: Record<string, unknown>[];
}

const compact = (n: number) => (n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n));
const point = (size: number, label: string, value: number): GrowthPoint => ({ size, label, value: round(value) });

/**
 * How cost grows: each cost at three sizes (deploy/bench/README.md, "How cost grows"), as tables and SVG
 * charts with the growth exponent between sizes. Run it on its own (`npm run bench -- --only growth`): at
 * full size it ingests 4 GiB, groups 50M rows and seeds 100,000 accounts (~40 minutes); `--quick` runs each
 * at a tenth or less.
 */
export async function growthScenario(ctx: BenchContext): Promise<ScenarioResult> {
  const parts: Array<[string, (ctx: BenchContext) => Promise<Part>]> = [
    ['redis', redisPerAccount],
    ['analytics', analyticsBySize],
    ['ingest', ingestBySize],
    ['deliveries', deliveriesByEndpoints],
    ['gateway', gatewayByActiveKeys],
  ];
  const unknown = ctx.opts.growthParts?.filter((p) => !parts.some(([name]) => name === p)) ?? [];
  if (unknown.length) throw new Error(`unknown growth part(s) ${unknown.join(', ')}; known: ${parts.map(([name]) => name).join(', ')}`);
  const charts: GrowthChart[] = [];
  const data: Record<string, unknown> = {};
  for (const [name, run] of parts.filter(([name]) => !ctx.opts.growthParts || ctx.opts.growthParts.includes(name))) {
    ctx.log(`growth: ${name}...`);
    try {
      const part = await run(ctx);
      charts.push(...part.charts);
      data[name] = part.rows;
    } catch (err) {
      const e = err as Error;
      ctx.note(`growth/${name} failed: ${e.message}`);
      process.stderr.write(`${e.stack ?? e.message}\n`);
      data[name] = { failed: e.message };
    }
  }
  return {
    targets: charts.map((c) => ({
      id: `growth.${c.id}`,
      scenario: 'growth',
      figure: c.title,
      target: c.kind === 'proportional' ? '(report: exponent 1 is linear)' : '(report: exponent 0 is flat)',
      value: describeGrowth(c).join(' | '),
      met: null,
      detail: `${c.yLabel} against ${c.xLabel}; the chart is in the report beside the tables`,
    })),
    data,
    charts,
  };
}

/** Redis bytes one account's sliding window holds when full, at each plan's limit (MEMORY USAGE of its keys). */
async function redisPerAccount(ctx: BenchContext): Promise<Part> {
  const redis = createRedis(stackEnv().REDIS_URL);
  const accountsPerPlan = 5;
  try {
    if (redis.status !== 'ready') await once(redis, 'ready');
    const limiter = new SlidingWindowLimiter(redis, 60_000);
    const rows: Record<string, unknown>[] = [];
    const points: GrowthPoint[] = [];
    for (const plan of PLANS) {
      const limit = PLAN_LIMITS[plan];
      const bytes: number[] = [];
      for (let a = 0; a < accountsPerPlan; a++) {
        const accountId = `growth-${ctx.runDir.slice(-6)}-${plan}-${a}`;
        // Filled to the limit within the window, as an account using its whole plan keeps it.
        for (let i = 0; i < limit; i += 100) await Promise.all(Array.from({ length: Math.min(100, limit - i) }, () => limiter.check(accountId, limit)));
        const decision = await limiter.peek(accountId, limit);
        if (decision.remaining !== 0) throw new Error(`the ${plan} window holds ${limit - decision.remaining} of ${limit} requests`);
        const keys = [`rl:{${accountId}}`, `rl:{${accountId}}:seq`];
        const sizes = await Promise.all(keys.map(async (k) => Number((await redis.call('MEMORY', 'USAGE', k, 'SAMPLES', '0')) ?? 0)));
        bytes.push(sizes.reduce((x, y) => x + y, 0));
        await redis.del(...keys);
      }
      const perAccount = median(bytes);
      rows.push({ plan, 'requests per window': limit, 'bytes per account': Math.round(perAccount), 'bytes per request held': round(perAccount / limit) });
      points.push(point(limit, `${plan} (${compact(limit)})`, perAccount / 1024));
    }
    return {
      rows,
      charts: [
        {
          id: 'redis_per_account',
          title: 'Redis memory per account at a full window',
          xLabel: 'requests in the window (plan limit)',
          yLabel: 'KiB per account',
          kind: 'proportional',
          series: [{ name: 'MEMORY USAGE', points }],
        },
      ],
    };
  } finally {
    redis.disconnect();
  }
}

/** The analytics owner's group-by bench at three row counts: the API and raw DuckDB, summed over its queries. */
async function analyticsBySize(ctx: BenchContext): Promise<Part> {
  const FILE = 'deploy/bench/services/analytics/groupby.bench.ts';
  const run = await ownerBench<(opts: Record<string, unknown>) => Promise<GroupByBenchResult>>(ctx.root, FILE, 'runGroupByBench');
  if (!run) throw new Error(`${FILE} is missing`);
  const sizes = ctx.opts.quick ? [100_000, 1_000_000, 5_000_000] : [1_000_000, 10_000_000, 50_000_000];
  const rows: Record<string, unknown>[] = [];
  const api: GrowthPoint[] = [];
  const raw: GrowthPoint[] = [];
  for (const n of sizes) {
    const r = await run({ rows: n, repetitions: ctx.opts.quick ? 1 : 3, log: (line: string) => ctx.log(`growth/analytics ${compact(n)}: ${line}`) });
    const apiMs = r.queries.reduce((s, q) => s + q.api.medianMs, 0);
    const rawMs = r.queries.reduce((s, q) => s + Math.min(q.raw.medianMs, q.rawHandWritten.medianMs), 0);
    rows.push({
      rows: compact(n),
      'file MB': Math.round(r.fileBytes / 1e6),
      queries: r.queries.length,
      'API ms (sum)': round(apiMs),
      'DuckDB ms (sum)': round(rawMs),
      'worst ratio': r.ratio,
    });
    api.push(point(n, `${compact(n)} rows`, apiMs));
    raw.push(point(n, `${compact(n)} rows`, rawMs));
  }
  return {
    rows,
    charts: [
      {
        id: 'analytics_by_rows',
        title: 'Analytics group-bys by dataset size',
        xLabel: 'rows',
        yLabel: 'ms, sum of the medians of every query',
        kind: 'proportional',
        series: [
          { name: 'through the API', points: api },
          { name: 'raw DuckDB', points: raw },
        ],
      },
    ],
  };
}

/** The ingest soak (a URL source pulled into Parquet by the sources service as its own process) at three sizes. */
async function ingestBySize(ctx: BenchContext): Promise<Part> {
  const sizes = ctx.opts.quick ? [10, 100, 400] : [100, 1024, 4096];
  const rows: Record<string, unknown>[] = [];
  const time: GrowthPoint[] = [];
  const peak: GrowthPoint[] = [];
  for (const mib of sizes) {
    const r = await soak(ctx, mib);
    rows.push({ CSV: `${mib} MiB`, rows: r.rows, seconds: round(r.seconds), 'MiB/s': round(mib / r.seconds), 'RSS idle MB': r.idleMB, 'peak RSS MB': r.peakMB });
    const label = mib >= 1024 ? `${mib / 1024} GiB` : `${mib} MiB`;
    time.push(point(mib, label, r.seconds));
    peak.push(point(mib, label, r.peakMB));
  }
  return {
    rows,
    charts: [
      {
        id: 'ingest_time',
        title: 'Ingest time by file size',
        xLabel: 'CSV size',
        yLabel: 'seconds, create → ready',
        kind: 'proportional',
        series: [{ name: 'ingest', points: time }],
      },
      {
        id: 'ingest_peak_rss',
        title: 'Ingest peak memory by file size',
        xLabel: 'CSV size',
        yLabel: 'peak RSS of the sources service, MB',
        kind: 'flat',
        series: [{ name: 'peak RSS (VmHWM)', points: peak }],
      },
    ],
  };
}

function soak(ctx: BenchContext, mib: number): Promise<{ rows: number; seconds: number; idleMB: number; peakMB: number }> {
  const child = spawn(process.execPath, ['--no-warnings', join(ctx.root, 'deploy/bench/services/sources/soak-ingest.ts'), String(mib), '1000000', 'url'], {
    cwd: ctx.root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let result: { rows: number; seconds: number; idleMB: number; peakMB: number } | null = null;
  createInterface({ input: child.stdout! }).on('line', (line) => {
    ctx.log(`growth/ingest ${mib} MiB: ${line}`);
    const m = /^\[soak\] result (.*)$/.exec(line);
    if (m) result = JSON.parse(m[1]!) as typeof result;
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 && result ? resolve(result) : reject(new Error(`the ${mib} MiB soak exited with ${code}`))));
  });
}

/** Deliveries/s with a backlog over 1, 100 and 1,000 endpoints, one of them answering 500 where there are several. */
async function deliveriesByEndpoints(ctx: BenchContext): Promise<Part> {
  const FILE = 'deploy/bench/services/webhooks/delivery.bench.ts';
  const run = await ownerBench<(opts: DeliveryBenchOptions) => Promise<DeliveryThroughputResult>>(ctx.root, FILE, 'runDeliveryThroughput');
  if (!run) throw new Error(`${FILE} is missing`);
  const sizes = ctx.opts.quick ? [1, 10, 100] : [1, 100, 1_000];
  const events = ctx.opts.quick ? 1_000 : 4_000;
  const rows: Record<string, unknown>[] = [];
  const rate: GrowthPoint[] = [];
  const cpu: GrowthPoint[] = [];
  for (const endpoints of sizes) {
    const r = await run({ endpoints, failingEndpoints: 1, throughputEvents: events, log: (line) => ctx.log(`growth/deliveries ${endpoints}: ${line}`) });
    rows.push({
      endpoints,
      failing: r.failingEndpoints,
      events: r.events,
      'to the failing one': r.eventsToFailing,
      'deliveries/s': r.deliveriesPerSec,
      'in flight allowed': r.concurrency,
      'service CPU µs/delivery': r.cpuPerDeliveryUs.service,
      'MongoDB CPU µs/delivery': r.cpuPerDeliveryUs.mongodb,
    });
    rate.push(point(endpoints, `${compact(endpoints)}`, r.deliveriesPerSec));
    if (r.cpuPerDeliveryUs.service !== null) cpu.push(point(endpoints, `${compact(endpoints)}`, r.cpuPerDeliveryUs.service));
  }
  return {
    rows,
    charts: [
      {
        id: 'deliveries_by_endpoints',
        title: 'Webhook deliveries/s by endpoints (one failing)',
        xLabel: 'endpoints',
        yLabel: 'deliveries/s with a backlog',
        kind: 'flat',
        series: [{ name: 'deliveries/s', points: rate }],
      },
      ...(cpu.length === sizes.length
        ? [
            {
              id: 'delivery_cpu_by_endpoints',
              title: 'Service CPU per delivery by endpoints',
              xLabel: 'endpoints',
              yLabel: 'µs of CPU per delivery',
              kind: 'flat' as const,
              series: [{ name: 'webhooks service', points: cpu }],
            },
          ]
        : []),
    ],
  };
}

/**
 * Gateway CPU per request with 10, 10,000 and 100,000 active keys (one account each): every key is used once
 * (cold lookups fill the caches), then requests go round-robin over them, so each account also holds a
 * rate-limit window in Redis. The accounts service's CPU per request beside it shows what key lookups and
 * refreshes cost there (a key used less often than the cache's TTL is looked up again on its request).
 */
async function gatewayByActiveKeys(ctx: BenchContext): Promise<Part> {
  const sys = await system(ctx);
  const gatewayPid = sys.processes.find((p) => p.name === 'gateway')?.pid;
  const accountsPid = sys.processes.find((p) => p.name === 'accounts')?.pid;
  const sizes = ctx.opts.quick ? [10, 1_000, 10_000] : [10, 10_000, 100_000];
  const allKeys = join(ctx.runDir, 'growth-keys.txt');
  writeFileSync(allKeys, '', { mode: 0o600 });
  const redis = createRedis(sys.env.REDIS_URL!);
  const rows: Record<string, unknown>[] = [];
  const cpu: GrowthPoint[] = [];
  const mem: GrowthPoint[] = [];
  let seeded = 0;
  try {
    if (redis.status !== 'ready') await once(redis, 'ready');
    const url = `${sys.urls.gateway}/v1/models/${FORECAST_MODEL_ID}`;
    for (const n of sizes) {
      const t0 = Date.now();
      await seedAccounts({ mongoUrl: sys.env.MONGO_URL!, db: `${sys.dbPrefix}accounts`, count: n - seeded, plan: 'enterprise', keysFile: allKeys });
      seeded = n;
      const keysFile = join(ctx.runDir, `growth-keys-${n}.txt`);
      writeFileSync(keysFile, `${readFileSync(allKeys, 'utf8').split('\n').slice(0, n).join('\n')}\n`, { mode: 0o600 });
      ctx.log(`growth/gateway ${compact(n)} keys: seeded in ${Date.now() - t0} ms; one request per key...`);
      // Cold keys each cost an accounts lookup; a few at a time, so none runs into the gateway's 5-s limit.
      const pass = await ctx.load({ mode: 'closed', url, bearerKeysFile: keysFile, amount: n, connections: Math.min(8, n), durationSec: 3_600 });
      if (Object.keys(pass.statusCounts).some((s) => s !== '200') || pass.errors) {
        ctx.note(
          `growth/gateway: the first request of each of ${n} keys answered ${JSON.stringify(pass.statusCounts)} with ${pass.errors} errors (${Math.round(pass.rps)} cold lookups/s); larger sizes skipped`,
        );
        break;
      }
      // A second pass at full concurrency, just before measuring: keys the first pass cached longer ago than
      // the key cache's TTL are looked up again, so the measured round-robin starts on keys in use. Where one
      // round over every key takes longer than the TTL, keys are not kept active and lookups stay in the figures.
      const second = await ctx.load({ mode: 'closed', url, bearerKeysFile: keysFile, amount: n, connections: Math.min(ctx.opts.connections, n), durationSec: 3_600 });
      const us: number[] = [];
      const accountsUs: number[] = [];
      const rps: number[] = [];
      const p99: number[] = [];
      for (let rep = 0; rep < ctx.opts.reps; rep++) {
        const before = cpuTimeMs(gatewayPid);
        const accountsBefore = cpuTimeMs(accountsPid);
        const r = await ctx.load({
          mode: 'closed',
          url,
          bearerKeysFile: keysFile,
          connections: ctx.opts.connections,
          durationSec: ctx.opts.durationSec,
          warmupSec: ctx.opts.warmupSec,
        });
        const after = cpuTimeMs(gatewayPid);
        const accountsAfter = cpuTimeMs(accountsPid);
        const requests = r.requests + (r.warmupRequests ?? 0);
        if (before !== null && after !== null && requests) us.push(((after - before) * 1000) / requests);
        if (accountsBefore !== null && accountsAfter !== null && requests) accountsUs.push(((accountsAfter - accountsBefore) * 1000) / requests);
        rps.push(r.rps);
        p99.push(r.latency.p99);
      }
      const usedMemory = Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1] ?? NaN);
      rows.push({
        'active keys': n,
        'cold pass req/s': Math.round(pass.rps),
        'second pass s': round(second.durationSec),
        'gateway CPU µs/request': round(median(us)),
        'accounts CPU µs/request': accountsUs.length ? round(median(accountsUs)) : null,
        'req/s': Math.round(median(rps)),
        'p99 ms': round(median(p99)),
        'Redis used MB': round(usedMemory / 2 ** 20),
      });
      cpu.push(point(n, compact(n), median(us)));
      mem.push(point(n, compact(n), usedMemory / 2 ** 20));
      ctx.log(
        `growth/gateway ${compact(n)} keys: ${round(median(us))} µs/request (accounts ${accountsUs.length ? round(median(accountsUs)) : '?'}), ${Math.round(median(rps))} req/s; cold pass ${Math.round(pass.rps)} req/s`,
      );
    }
  } finally {
    redis.disconnect();
  }
  return {
    rows,
    charts: [
      {
        id: 'gateway_cpu_by_keys',
        title: 'Gateway CPU per request by active keys',
        xLabel: 'active keys (one account each)',
        yLabel: 'µs of gateway CPU per request',
        kind: 'flat',
        series: [{ name: 'gateway', points: cpu }],
      },
      {
        id: 'redis_by_keys',
        title: 'Redis memory by active keys',
        xLabel: 'active keys (one account each)',
        yLabel: 'Redis used_memory, MB',
        kind: 'proportional',
        series: [{ name: 'used_memory', points: mem }],
      },
    ],
  };
}
