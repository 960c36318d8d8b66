import { join } from 'node:path';
import { summarizeProfile } from '../lib/cpuprofile.ts';
import { system, type BenchContext, type ScenarioResult } from '../lib/context.ts';
import { describePaced, type LoadResult } from '../lib/loadgen.ts';
import { cpuTimeMs, startNodeProcess } from '../lib/procs.ts';
import { startNginx } from '../lib/nginx.ts';
import { freePort } from '../../local/supervisor.ts';
import { median, round } from '../lib/stats.ts';
// The built-in forecast model: `GET /v1/models/{id}` is a real models-service route that touches no database.
import { FORECAST_MODEL_ID } from '../../../services/models/src/domain/builtin/index.ts';

type Target = 'direct' | 'gateway' | 'nginx' | 'library';

const non2xx = (r: LoadResult) => Object.entries(r.statusCounts).reduce((n, [s, c]) => (s.startsWith('2') ? n : n + c), 0) + r.errors;

/**
 * gateway (key auth + limit + proxy) vs the models service called directly with a signed context, and vs
 * nginx (no auth, keep-alive upstream) in front of the same service: max req/s (closed loop, autocannon), then
 * latency at half the gateway's max rate (open loop, constant rate) on all three.
 */
export async function gatewayScenario(ctx: BenchContext): Promise<ScenarioResult> {
  const sys = await system(ctx);
  const { opts } = ctx;
  const path = `/v1/models/${FORECAST_MODEL_ID}`;
  const nginx = await startNginx({ dir: join(ctx.runDir, 'nginx'), port: await freePort(), site: { upstream: sys.urls.models }, workers: 1, cpus: ctx.pinning.servers });
  // The floor: the proxy library alone (node:http + http-proxy-middleware, no express, auth or limiter).
  const library = await startNodeProcess({
    root: ctx.root,
    name: 'proxy-library',
    entry: 'deploy/bench/lib/plain-proxy.ts',
    port: await freePort(),
    env: { TARGET: sys.urls.models },
    logDir: join(ctx.runDir, 'logs'),
    cpus: ctx.pinning.servers,
  }).catch(async (err: Error) => {
    await nginx.stop();
    throw err;
  });
  const bearer = { authorization: `Bearer ${ctx.enterprise.apiKey}` };
  const spec = (t: Target) =>
    t === 'gateway'
      ? { url: `${sys.urls.gateway}${path}`, headers: bearer }
      : { url: `${t === 'direct' ? sys.urls.models : t === 'nginx' ? nginx.url : library.url}${path}`, headers: sys.signed(ctx.enterprise.accountId) };
  const order: Target[] = ['direct', 'gateway', 'nginx', 'library'];
  try {
    // Every target answers the same 200 body before anything is timed.
    const bodies = await Promise.all(
      order.map(async (t) => {
        const s = spec(t);
        const res = await fetch(s.url, { headers: s.headers });
        if (res.status !== 200) throw new Error(`${t} answered ${res.status} to GET ${path}: ${await res.text()}`);
        return (await res.json()) as { id: string };
      }),
    );
    if (!bodies.every((b) => b.id === FORECAST_MODEL_ID)) throw new Error('the targets answered different bodies');

    const closed: Record<Target, LoadResult[]> = { direct: [], gateway: [], nginx: [], library: [] };
    // CPU per request of the gateway and of the service behind it, from /proc over the warm-up and the
    // measured run: unlike req/s, other work on the machine barely moves it.
    const pidOf = (name: string) => sys.processes.find((p) => p.name === name)?.pid;
    const none = (): Record<Target, number[]> => ({ direct: [], gateway: [], nginx: [], library: [] });
    const cpuUs = { gateway: none(), service: none(), library: none() };
    for (let rep = 0; rep < opts.reps; rep++) {
      // Interleaved, so drift in the machine's background load hits every target alike.
      for (const t of order) {
        const procOf = { gateway: pidOf('gateway'), service: pidOf('models'), library: library.pid };
        const before = { gateway: cpuTimeMs(procOf.gateway), service: cpuTimeMs(procOf.service), library: cpuTimeMs(procOf.library) };
        const r = await ctx.load({ mode: 'closed', ...spec(t), connections: opts.connections, durationSec: opts.durationSec, warmupSec: opts.warmupSec });
        const requests = r.requests + (r.warmupRequests ?? 0);
        for (const k of ['gateway', 'service', 'library'] as const) {
          const after = cpuTimeMs(procOf[k]);
          if (before[k] !== null && after !== null && requests > 0) cpuUs[k][t].push(((after - before[k]!) * 1000) / requests);
        }
        ctx.log(
          `gateway/closed ${t} rep ${rep + 1}: ${Math.round(r.rps)} req/s, p50 ${round(r.latency.p50)} ms, p99 ${round(r.latency.p99)} ms; CPU µs/request gateway ${round(cpuUs.gateway[t].at(-1) ?? NaN)}, proxy library ${round(cpuUs.library[t].at(-1) ?? NaN)}, service ${round(cpuUs.service[t].at(-1) ?? NaN)}`,
        );
        closed[t].push(r);
      }
    }
    const maxRps = Object.fromEntries(order.map((t) => [t, median(closed[t].map((r) => r.rps))])) as Record<Target, number>;
    const halfRate = Math.max(10, Math.floor(maxRps.gateway / 2));

    const paced: Record<Target, LoadResult[]> = { direct: [], gateway: [], nginx: [], library: [] };
    for (let rep = 0; rep < opts.reps; rep++) {
      for (const t of order) {
        const r = await ctx.load({ mode: 'paced', ...spec(t), rate: halfRate, durationSec: opts.durationSec, warmupSec: opts.warmupSec });
        ctx.log(`gateway/paced@${halfRate} ${t} rep ${rep + 1}: ${describePaced(r)}`);
        paced[t].push(r);
      }
    }
    const p = (t: Target, k: 'p50' | 'p99', rs: Record<Target, LoadResult[]>) => median(rs[t].map((r) => r.latency[k]));
    const ratio = maxRps.gateway / maxRps.direct;
    const nginxRatio = maxRps.gateway / maxRps.nginx;
    const addedP99 = p('gateway', 'p99', paced) - p('direct', 'p99', paced);
    const loadgenDelay = (t: Target) => median(paced[t].map((r) => r.ownLoopDelay?.p99 ?? NaN));
    const addedP50 = p('gateway', 'p50', paced) - p('direct', 'p50', paced);
    const failures = order.flatMap((t) => [...closed[t], ...paced[t]].map(non2xx)).reduce((a, b) => a + b, 0);
    if (failures) ctx.note(`gateway scenario: ${failures} responses were not 2xx (or failed); see the per-run status counts in the JSON report`);

    if (opts.profile) {
      await profileGateway(ctx, path).catch((err: Error) => ctx.note(`gateway profiling failed: ${err.message}`));
    }

    const row = (t: Target) => ({
      target: t,
      'max req/s (median)': Math.round(maxRps[t]),
      'closed p50 ms': round(p(t, 'p50', closed)),
      'closed p99 ms': round(p(t, 'p99', closed)),
      [`p50 ms @${halfRate}/s`]: round(p(t, 'p50', paced)),
      [`p99 ms @${halfRate}/s`]: round(p(t, 'p99', paced)),
      'req/s per rep': closed[t].map((r) => Math.round(r.rps)).join(' / '),
    });
    return {
      targets: [
        {
          id: 'gateway.rps_ratio',
          scenario: 'gateway',
          figure: 'req/s ratio vs direct',
          target: '≥ 0.6',
          value: `${round(ratio, 2)} (${Math.round(maxRps.gateway)} vs ${Math.round(maxRps.direct)} req/s)`,
          met: ratio >= 0.6,
          detail: `GET ${path} with an enterprise API key through the gateway vs the models service with a signed caller context; autocannon closed loop, ${opts.connections} connections, median of ${opts.reps} × ${opts.durationSec} s`,
        },
        {
          id: 'gateway.added_p99',
          scenario: 'gateway',
          figure: 'added p99 at half load',
          target: '≤ 2 ms',
          value: `${round(addedP99, 2)} ms (p99 ${round(p('gateway', 'p99', paced))} vs ${round(p('direct', 'p99', paced))} ms; p50 +${round(addedP50, 2)} ms; at the same rate the proxy library alone p99 ${round(p('library', 'p99', paced))} ms, nginx ${round(p('nginx', 'p99', paced))} ms; the load generator's own loop delay p99 ${round(loadgenDelay('gateway'))} / ${round(loadgenDelay('direct'))} ms)`,
          met: addedP99 <= 2,
          detail: `open loop at a constant ${halfRate} req/s (half the gateway's max), latency from each request's due time, median of ${opts.reps} × ${opts.durationSec} s`,
        },
        {
          id: 'gateway.library_floor',
          scenario: 'gateway',
          figure: 'proxy library alone (floor)',
          target: '(report)',
          value: `${round(maxRps.library / maxRps.direct, 2)} of direct (${Math.round(maxRps.library)} req/s); gateway ${round(maxRps.gateway / maxRps.library, 2)} of it; CPU µs/request: gateway ${round(median(cpuUs.gateway.gateway))}, library ${round(median(cpuUs.library.library))}, service ${round(median(cpuUs.service.direct))}`,
          met: null,
          detail:
            "node:http + http-proxy-middleware with the gateway's proxy settings and nothing else, pinned like the gateway; CPU per request from /proc over each closed-loop run (other work on the machine barely moves it)",
        },
        {
          id: 'gateway.nginx_ratio',
          scenario: 'gateway',
          figure: 'req/s ratio vs nginx',
          target: '≥ 0.5',
          value: `${round(nginxRatio, 2)} (${Math.round(maxRps.gateway)} vs ${Math.round(maxRps.nginx)} req/s)`,
          met: nginxRatio >= 0.5,
          detail: 'nginx 1.22 (apt), 1 worker, plain reverse proxy with a keep-alive upstream pool in front of the same service; the gateway does key auth + limit + proxy',
        },
      ],
      data: {
        endpoint: `GET ${path}`,
        halfLoadRate: halfRate,
        cpuPerRequest: order.map((t) => ({
          target: t,
          'gateway CPU µs/request': round(median(cpuUs.gateway[t])),
          'proxy library CPU µs/request': round(median(cpuUs.library[t])),
          'service CPU µs/request': round(median(cpuUs.service[t])),
          note: {
            gateway: 'the gateway and the service serve these requests',
            nginx: 'nginx itself is not counted',
            library: 'the proxy library alone and the service',
            direct: 'the service alone',
          }[t],
        })),
        /** What the req/s ratio would be if the gateway and the service shared one otherwise idle core. */
        cpuRatioEstimate: round(median(cpuUs.service.direct) / (median(cpuUs.gateway.gateway) + median(cpuUs.service.gateway)), 2),
        summary: order.map(row),
        closedRuns: order.flatMap((t) =>
          closed[t].map((r, i) => ({
            target: t,
            rep: i + 1,
            rps: Math.round(r.rps),
            p50: round(r.latency.p50),
            p99: round(r.latency.p99),
            statusCounts: r.statusCounts,
            errors: r.errors,
          })),
        ),
        pacedRuns: order.flatMap((t) =>
          paced[t].map((r, i) => ({
            target: t,
            rep: i + 1,
            rate: Math.round(r.rps),
            p50: round(r.latency.p50),
            p99: round(r.latency.p99),
            serviceP99: round(r.serviceLatency?.p99 ?? NaN),
            max: round(r.latency.max),
            loadgenLoopDelayP99: round(r.ownLoopDelay?.p99 ?? NaN),
            loadgenLoopDelayMax: round(r.ownLoopDelay?.max ?? NaN),
            errors: r.errors,
          })),
        ),
      },
    };
  } finally {
    await nginx.stop();
    await library.stop();
  }
}

/**
 * A profiled gateway and models service (`--cpu-prof`), under the same closed-loop load as above; the
 * profiles are written when the processes exit and summarised by self time.
 */
async function profileGateway(ctx: BenchContext, path: string): Promise<void> {
  const sys = await system(ctx);
  const dir = join(ctx.runDir, 'profiles');
  const models = await sys.startExtra('models', 'models-profiled', { cpuProfDir: dir, pinned: true });
  const gateway = await sys.startExtra('gateway', 'gateway-profiled', { cpuProfDir: dir, pinned: true, env: { MODELS_URL: models.url } });
  let loadFrom: number | undefined;
  let loadTo: number | undefined;
  try {
    const durationSec = Math.max(3, ctx.opts.durationSec);
    const started = Date.now();
    const r = await ctx.load({
      mode: 'closed',
      url: `${gateway.url}${path}`,
      headers: { authorization: `Bearer ${ctx.enterprise.apiKey}` },
      connections: ctx.opts.connections,
      durationSec,
      warmupSec: ctx.opts.warmupSec,
    });
    // The measured phase: after start-up and warm-up, before shutdown (bench-process clock, ±50 ms).
    loadTo = Date.now();
    loadFrom = Math.max(started + ctx.opts.warmupSec * 1000, loadTo - durationSec * 1000);
    ctx.log(`gateway/profile: ${Math.round(r.rps)} req/s under --cpu-prof`);
  } finally {
    await gateway.stop();
    await models.stop();
  }
  for (const p of [gateway, models]) {
    try {
      const window = loadTo !== undefined && loadFrom !== undefined ? { fromMs: loadFrom - p.spawnedAt, toMs: loadTo - p.spawnedAt } : undefined;
      ctx.profiles.push(summarizeProfile(join(dir, `${p.name}.cpuprofile`), 15, window));
    } catch (err) {
      ctx.note(`profile of ${p.name} unreadable: ${(err as Error).message}`);
    }
  }
}
