import { BUILTIN_MODELS, FORECAST_MODEL_ID } from '../../../services/models/src/domain/builtin/index.ts';
import { system, type BenchContext, type ScenarioResult } from '../lib/context.ts';
import type { LoadResult } from '../lib/loadgen.ts';
import { median, round, Samples, summarize, type LatencySummary } from '../lib/stats.ts';
import { ownerBench } from './owner-bench.ts';

/** deploy/bench/services/models/predict.bench.ts (the models owner's in-process timing), when it exists. */
type BenchForecastPredict = (opts: Record<string, number>) => Promise<{ calls: number; p50Ms: number; p99Ms: number; meanMs: number; maxMs: number }>;
const OWNER_FILE = 'deploy/bench/services/models/predict.bench.ts';

/** The e2e story's input: four weeks of a weekly-seasonal series, a 7-day forecast. */
export function forecastInput(seed = 0) {
  return { series: Array.from({ length: 28 }, (_, i) => 100 + i + 10 * Math.sin((2 * Math.PI * (i + seed)) / 7)), horizon: 7, seasonLength: 7 };
}

const SINGLE_RATE = 100;
const BATCH = 100;

/**
 * Single prediction latency through the gateway (open loop at a steady rate) vs the same call made directly
 * to the models service vs the model's own time in process; batch throughput (closed loop, 100 inputs a
 * request) against the in-process batch rate.
 */
export async function modelsScenario(ctx: BenchContext): Promise<ScenarioResult> {
  const sys = await system(ctx);
  const { opts } = ctx;
  const path = `/v1/models/${FORECAST_MODEL_ID}/predict`;
  const single = JSON.stringify({ inputs: [forecastInput()] });
  const batch = JSON.stringify({ inputs: Array.from({ length: BATCH }, (_, i) => forecastInput(i)) });
  const json = { 'content-type': 'application/json' };
  const via = (t: 'gateway' | 'direct') =>
    t === 'gateway'
      ? { url: `${sys.urls.gateway}${path}`, headers: { ...json, authorization: `Bearer ${ctx.enterprise.apiKey}` } }
      : { url: `${sys.urls.models}${path}`, headers: { ...json, ...sys.signed(ctx.enterprise.accountId) } };
  for (const t of ['gateway', 'direct'] as const) {
    const res = await fetch(via(t).url, { method: 'POST', headers: via(t).headers, body: single });
    if (res.status !== 200) throw new Error(`predict via ${t} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  }

  // In process: the model alone (validate + predict), no HTTP, no logging, same input sizes as over HTTP.
  const model = BUILTIN_MODELS.find((m) => m.id === FORECAST_MODEL_ID);
  if (!model) throw new Error('the forecast model is not among the built-ins');
  const runtime = model.runtime;
  const calls = opts.quick ? 300 : 2_000;
  const owner = await ownerBench<BenchForecastPredict>(ctx.root, OWNER_FILE, 'benchForecastPredict');
  let inProc: LatencySummary;
  let inProcSource: string;
  if (owner) {
    const r = await owner({ calls, warmup: 100, seriesLength: 28, seasonLength: 7, horizon: 7 });
    inProc = { count: r.calls, mean: r.meanMs, p50: r.p50Ms, p90: NaN, p99: r.p99Ms, max: r.maxMs };
    inProcSource = `${OWNER_FILE} (benchForecastPredict, 28-point series, season 7, horizon 7)`;
  } else {
    const inProcess = new Samples();
    for (let i = 0; i < 50; i++) await runtime.predict((runtime.validate([forecastInput(i)]) as { inputs: unknown[] }).inputs);
    for (let i = 0; i < calls; i++) {
      const t0 = performance.now();
      const v = runtime.validate([forecastInput(i)]);
      if (!v.ok) throw new Error('the bench input is invalid');
      await runtime.predict(v.inputs);
      inProcess.push(performance.now() - t0);
    }
    inProc = summarize(inProcess.values());
    inProcSource = 'harness (validate + predict of the same input)';
  }
  const batchInputs = Array.from({ length: BATCH }, (_, i) => forecastInput(i));
  const tb = performance.now();
  const batchRounds = opts.quick ? 3 : 10;
  for (let i = 0; i < batchRounds; i++) {
    const v = runtime.validate(batchInputs);
    if (!v.ok) throw new Error('the bench batch is invalid');
    await runtime.predict(v.inputs);
  }
  const inProcessBatchPerSec = (batchRounds * BATCH) / ((performance.now() - tb) / 1000);

  const paced: Record<'gateway' | 'direct', LoadResult[]> = { gateway: [], direct: [] };
  for (let rep = 0; rep < opts.reps; rep++) {
    for (const t of ['direct', 'gateway'] as const) {
      const r = await ctx.load({ mode: 'paced', method: 'POST', ...via(t), body: single, rate: SINGLE_RATE, durationSec: opts.durationSec, warmupSec: opts.warmupSec });
      ctx.log(`models/single@${SINGLE_RATE} ${t} rep ${rep + 1}: p50 ${round(r.latency.p50)} ms, p99 ${round(r.latency.p99)} ms`);
      paced[t].push(r);
    }
  }
  const batchRuns: LoadResult[] = [];
  for (let rep = 0; rep < opts.reps; rep++) {
    const r = await ctx.load({ mode: 'closed', method: 'POST', ...via('gateway'), body: batch, connections: 4, durationSec: opts.durationSec, warmupSec: opts.warmupSec });
    ctx.log(`models/batch×${BATCH} gateway rep ${rep + 1}: ${round(r.rps)} req/s = ${Math.round(r.rps * BATCH)} predictions/s, p99 ${round(r.latency.p99)} ms`);
    batchRuns.push(r);
  }
  const bad = [...paced.gateway, ...paced.direct, ...batchRuns].reduce(
    (n, r) => n + r.errors + Object.entries(r.statusCounts).reduce((m, [s, c]) => (s === '200' ? m : m + c), 0),
    0,
  );
  if (bad) ctx.note(`models: ${bad} prediction requests did not answer 200`);
  const p99 = (t: 'gateway' | 'direct') => median(paced[t].map((r) => r.latency.p99));
  const p50 = (t: 'gateway' | 'direct') => median(paced[t].map((r) => r.latency.p50));
  const batchPerSec = median(batchRuns.map((r) => r.rps)) * BATCH;
  return {
    targets: [
      {
        id: 'models.single_p99',
        scenario: 'models',
        figure: 'single prediction through the gateway, p99',
        target: '< 10 ms',
        value: `${round(p99('gateway'))} ms (p50 ${round(p50('gateway'))}; direct p99 ${round(p99('direct'))} ms; model in process p99 ${round(inProc.p99)} ms)`,
        met: p99('gateway') < 10,
        detail: `POST ${path} with one 28-point series (horizon 7), open loop at ${SINGLE_RATE} req/s, median of ${opts.reps} × ${opts.durationSec} s; each request also writes its prediction log entry to MongoDB`,
      },
      {
        id: 'models.batch_throughput',
        scenario: 'models',
        figure: `batch throughput (${BATCH} inputs/request)`,
        target: '(report)',
        value: `${Math.round(batchPerSec)} predictions/s through the gateway vs ${Math.round(inProcessBatchPerSec)}/s in process (${round(batchPerSec / inProcessBatchPerSec, 2)})`,
        met: null,
        detail: `autocannon closed loop, 4 connections, ${BATCH} forecast inputs per request, median of ${opts.reps} × ${opts.durationSec} s; in process: validate + predict of the same batch on one thread`,
      },
    ],
    data: {
      inProcessSource: inProcSource,
      inProcessMs: Object.fromEntries(Object.entries(inProc).map(([k, v]) => [k, round(v)])),
      inProcessBatchPredictionsPerSec: Math.round(inProcessBatchPerSec),
      single: (['direct', 'gateway'] as const).flatMap((t) =>
        paced[t].map((r, i) => ({
          via: t,
          rep: i + 1,
          rate: Math.round(r.rps),
          p50: round(r.latency.p50),
          p99: round(r.latency.p99),
          max: round(r.latency.max),
          errors: r.errors,
        })),
      ),
      batch: batchRuns.map((r, i) => ({
        rep: i + 1,
        'req/s': round(r.rps),
        'predictions/s': Math.round(r.rps * BATCH),
        p50: round(r.latency.p50),
        p99: round(r.latency.p99),
        statusCounts: r.statusCounts,
      })),
    },
  };
}
