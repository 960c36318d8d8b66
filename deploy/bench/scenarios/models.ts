import { BUILTIN_MODELS, FORECAST_MODEL_ID } from '../../../services/models/src/domain/builtin/index.ts';
import { separableRows } from '../../../services/models/src/domain/training/synthetic-data.ts';
import { system, type BenchContext, type ScenarioResult } from '../lib/context.ts';
import { describePaced, type LoadResult } from '../lib/loadgen.ts';
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
/** Issue 23's bar for one prediction through the gateway (KServe's sklearn benchmark: p99 5.6–7.6 ms). */
const SINGLE_P99_TARGET_MS = 5;

/**
 * A trained model to predict with, like KServe's sklearn benchmark (a small classifier): logistic regression on
 * 500 separable rows with three numeric features, created through the gateway (an inline source, then training).
 */
async function trainedClassifier(gateway: string, apiKey: string): Promise<string> {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gateway}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: res.status, body: (await res.json()) as { id: string; status: string; error?: string } };
  };
  const until = async <T>(what: string, probe: () => Promise<T | null>): Promise<T> => {
    for (const end = Date.now() + 60_000; Date.now() < end; await new Promise((r) => setTimeout(r, 200))) {
      const v = await probe();
      if (v !== null) return v;
    }
    throw new Error(`models: timed out waiting for ${what}`);
  };
  const source = await call('POST', '/v1/sources', { type: 'inline', name: 'bench-classifier', rows: separableRows(500, 11) });
  if (source.status !== 201) throw new Error(`POST /v1/sources answered ${source.status}: ${JSON.stringify(source.body).slice(0, 300)}`);
  await until('the source', async () => ((await call('GET', `/v1/sources/${source.body.id}`)).body.status === 'ready' ? true : null));
  const body = { type: 'logistic_regression', name: 'bench-classifier', sourceId: source.body.id, target: 'label', features: ['a', 'b', 'noise'] };
  // The models service learns of the source from its events: a 404 or 409 until the projection has it.
  const model = await until('the source in the models service', async () => {
    const r = await call('POST', '/v1/models', body);
    return r.status === 202 ? r.body : null;
  });
  const trained = await until('training', async () => {
    const r = (await call('GET', `/v1/models/${model.id}`)).body;
    return r.status === 'training' ? null : r;
  });
  if (trained.status !== 'ready') throw new Error(`models: the bench classifier failed to train: ${trained.error}`);
  return model.id;
}

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
  const classifierId = await trainedClassifier(sys.urls.gateway, ctx.enterprise.apiKey);
  const classifierPath = `/v1/models/${classifierId}/predict`;
  const classifierSingle = JSON.stringify({ inputs: [{ a: 0.7, b: -0.2, noise: 0.4 }] });
  const via = (t: 'gateway' | 'direct', to = path) =>
    t === 'gateway'
      ? { url: `${sys.urls.gateway}${to}`, headers: { ...json, authorization: `Bearer ${ctx.enterprise.apiKey}` } }
      : { url: `${sys.urls.models}${to}`, headers: { ...json, ...sys.signed(ctx.enterprise.accountId) } };
  for (const t of ['gateway', 'direct'] as const) {
    for (const [to, body] of [
      [path, single],
      [classifierPath, classifierSingle],
    ] as const) {
      const res = await fetch(via(t, to).url, { method: 'POST', headers: via(t, to).headers, body });
      if (res.status !== 200) throw new Error(`predict ${to} via ${t} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    }
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

  // A second models instance that answers before its prediction log is stored: what that default costs.
  const after = await sys.startExtra('models', 'models-log-after', { pinned: true, env: { PREDICTION_LOG_WRITE: 'after_answer' } });
  const directAfter = { url: `${after.url}${path}`, headers: via('direct').headers };
  const pacedAfter: LoadResult[] = [];
  const paced: Record<'gateway' | 'direct', LoadResult[]> = { gateway: [], direct: [] };
  const pacedTrained: Record<'gateway' | 'direct', LoadResult[]> = { gateway: [], direct: [] };
  for (let rep = 0; rep < opts.reps; rep++) {
    for (const t of ['direct', 'gateway'] as const) {
      const r = await ctx.load({ mode: 'paced', method: 'POST', ...via(t), body: single, rate: SINGLE_RATE, durationSec: opts.durationSec, warmupSec: opts.warmupSec });
      ctx.log(`models/single@${SINGLE_RATE} ${t} rep ${rep + 1}: ${describePaced(r)}`);
      paced[t].push(r);
      const c = await ctx.load({
        mode: 'paced',
        method: 'POST',
        ...via(t, classifierPath),
        body: classifierSingle,
        rate: SINGLE_RATE,
        durationSec: opts.durationSec,
        warmupSec: opts.warmupSec,
      });
      ctx.log(`models/trained-single@${SINGLE_RATE} ${t} rep ${rep + 1}: ${describePaced(c)}`);
      pacedTrained[t].push(c);
    }
    const a = await ctx.load({ mode: 'paced', method: 'POST', ...directAfter, body: single, rate: SINGLE_RATE, durationSec: opts.durationSec, warmupSec: opts.warmupSec });
    ctx.log(`models/single@${SINGLE_RATE} direct, log after the answer, rep ${rep + 1}: ${describePaced(a)}`);
    pacedAfter.push(a);
  }
  const batchRuns: LoadResult[] = [];
  for (let rep = 0; rep < opts.reps; rep++) {
    const r = await ctx.load({ mode: 'closed', method: 'POST', ...via('gateway'), body: batch, connections: 4, durationSec: opts.durationSec, warmupSec: opts.warmupSec });
    ctx.log(`models/batch×${BATCH} gateway rep ${rep + 1}: ${round(r.rps)} req/s = ${Math.round(r.rps * BATCH)} predictions/s, p99 ${round(r.latency.p99)} ms`);
    batchRuns.push(r);
  }
  const bad = [...paced.gateway, ...paced.direct, ...pacedTrained.gateway, ...pacedTrained.direct, ...pacedAfter, ...batchRuns].reduce(
    (n, r) => n + r.errors + Object.entries(r.statusCounts).reduce((m, [s, c]) => (s === '200' ? m : m + c), 0),
    0,
  );
  if (bad) ctx.note(`models: ${bad} prediction requests did not answer 200`);
  const p99 = (t: 'gateway' | 'direct', runs = paced) => median(runs[t].map((r) => r.latency.p99));
  const p50 = (t: 'gateway' | 'direct', runs = paced) => median(runs[t].map((r) => r.latency.p50));
  const batchPerSec = median(batchRuns.map((r) => r.rps)) * BATCH;
  return {
    targets: [
      {
        id: 'models.single_p99',
        scenario: 'models',
        figure: 'single prediction through the gateway, p99',
        target: `< ${SINGLE_P99_TARGET_MS} ms`,
        value: `${round(p99('gateway'))} ms (p50 ${round(p50('gateway'))}; direct p50 ${round(p50('direct'))}, p99 ${round(p99('direct'))} ms; model in process p99 ${round(inProc.p99)} ms)`,
        met: p99('gateway') < SINGLE_P99_TARGET_MS,
        detail: `POST ${path} with one 28-point series (horizon 7), open loop at ${SINGLE_RATE} req/s, median of ${opts.reps} × ${opts.durationSec} s; each request's prediction log entry is stored before it is answered (PREDICTION_LOG_WRITE=before_answer, the default)`,
      },
      {
        id: 'models.trained_single_p99',
        scenario: 'models',
        figure: 'single prediction of a trained model through the gateway, p99',
        target: `< ${SINGLE_P99_TARGET_MS} ms`,
        value: `${round(p99('gateway', pacedTrained))} ms (p50 ${round(p50('gateway', pacedTrained))}; direct p50 ${round(p50('direct', pacedTrained))}, p99 ${round(p99('direct', pacedTrained))} ms)`,
        met: p99('gateway', pacedTrained) < SINGLE_P99_TARGET_MS,
        detail: `POST /v1/models/{id}/predict on a logistic regression (3 features, 500 training rows; KServe's sklearn benchmark: p99 5.6–7.6 ms), one input, open loop at ${SINGLE_RATE} req/s, median of ${opts.reps} × ${opts.durationSec} s`,
      },
      {
        id: 'models.single_log_after_answer',
        scenario: 'models',
        figure: 'single prediction directly, log stored after the answer',
        target: '(report)',
        value: `p50 ${round(median(pacedAfter.map((r) => r.latency.p50)))} ms, p99 ${round(median(pacedAfter.map((r) => r.latency.p99)))} ms (stored before the answer: p50 ${round(p50('direct'))}, p99 ${round(p99('direct'))} ms)`,
        met: null,
        detail: `the same call to a second models instance with PREDICTION_LOG_WRITE=after_answer (a crash may then lose an answered prediction's log entry and prediction.completed), in the same reps`,
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
        (
          [
            ['forecast', paced],
            ['logistic_regression', pacedTrained],
          ] as const
        ).flatMap(([model, runs]) =>
          runs[t].map((r, i) => ({
            model,
            via: t,
            rep: i + 1,
            rate: Math.round(r.rps),
            p50: round(r.latency.p50),
            p99: round(r.latency.p99),
            max: round(r.latency.max),
            errors: r.errors,
          })),
        ),
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
