import {
  INTERNAL_CONTEXT_HEADER,
  INTERNAL_SIGNATURE_HEADER,
  MAX_PREDICT_BATCH,
  SCOPES,
  TOPICS,
  metricsSchema,
  modelListSchema,
  modelSchema,
  newId,
  predictionSchema,
  problemSchema,
  signCallerContext,
} from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { callerHeaders, http, serviceClient, serviceTestEnv, uniqueSuffix, waitFor } from '@dap/testing';
import { startEventTap, type EventTap, type WatchedTopic } from '@dap/testing/event-feed';
import { ANOMALY_MODEL_ID, FORECAST_MODEL_ID, loadModelsConfig, startModels, type RunningModels } from '../src/index.ts';
import { forecastSeries } from '../src/domain/builtin/holt-winters.ts';
import { WorkerPool } from '../src/workers/worker-pool.ts';

const suffix = uniqueSuffix();
const config = loadModelsConfig(serviceTestEnv(`models_t${suffix}`, `t${suffix}.`, { OUTBOX_INTERVAL_MS: '200' }));

let svc: RunningModels;
let tap: EventTap;
let published: WatchedTopic;

const accountA = newId('acct');
const as = (accountId: string) => serviceClient(() => svc.url, accountId);
const a = as(accountA);

const seasonal = Array.from({ length: 48 }, (_, t) => 100 + t + 10 * Math.sin((2 * Math.PI * t) / 12) + ((t * 7) % 5) - 2);

beforeAll(async () => {
  svc = await startModels(config);
  tap = await startEventTap(`t${suffix}.`, 'models-test');
  published = await tap.watch(TOPICS.models);
});

afterAll(async () => {
  await tap?.stop();
  await svc?.mongo.db.dropDatabase().catch(() => {});
  await svc?.stop();
});

describe('GET /v1/models', () => {
  it('lists the built-in models first, with the exact DTO shape', async () => {
    const res = await a.get('/models');
    expect(res.status).toBe(200);
    expect(modelListSchema.strict().safeParse(res.body).success).toBe(true);
    expect(res.body).toEqual({ data: expect.any(Array), hasMore: false, nextCursor: null });
    expect(res.body.data.map((m: { id: string }) => m.id)).toEqual([FORECAST_MODEL_ID, ANOMALY_MODEL_ID]);
    const [forecast, anomaly] = res.body.data;
    expect(Object.keys(forecast).sort()).toEqual(['createdAt', 'description', 'features', 'id', 'kind', 'name', 'status', 'type', 'version']);
    expect(forecast).toMatchObject({ name: 'forecast', type: 'holt_winters', kind: 'builtin', status: 'ready', version: 1, createdAt: '2025-01-01T00:00:00.000Z' });
    expect(forecast.features.map((f: { name: string }) => f.name)).toEqual(['series', 'horizon', 'seasonLength']);
    for (const f of forecast.features) expect(Object.keys(f).sort()).toEqual(['description', 'name', 'type']);
    expect(anomaly).toMatchObject({ name: 'anomaly', type: 'robust_zscore', kind: 'builtin', status: 'ready' });
    expect(anomaly.features.map((f: { name: string }) => f.name)).toEqual(['series', 'threshold', 'seasonLength']);
  });

  it('pages with limit and cursor', async () => {
    const first = await a.get('/models?limit=1');
    expect(first.status).toBe(200);
    expect(first.body.data.map((m: { id: string }) => m.id)).toEqual([FORECAST_MODEL_ID]);
    expect(first.body.hasMore).toBe(true);
    const second = await a.get(`/models?limit=1&cursor=${first.body.nextCursor}`);
    expect(second.body).toMatchObject({ data: [{ id: ANOMALY_MODEL_ID }], hasMore: false, nextCursor: null });
  });

  it('rejects a bad limit or cursor with 400 naming the field', async () => {
    const limit = await a.get('/models?limit=0');
    expect(limit.status).toBe(400);
    expect(limit.body.errors).toEqual([expect.objectContaining({ path: 'limit' })]);
    const cursor = await a.get('/models?cursor=bm9wZQ');
    expect(cursor.status).toBe(400);
    expect(cursor.body.errors).toEqual([expect.objectContaining({ path: 'cursor' })]);
  });
});

describe('GET /v1/models/{id}', () => {
  it('returns one built-in model to any account', async () => {
    const res = await as(newId('acct')).get(`/models/${ANOMALY_MODEL_ID}`);
    expect(res.status).toBe(200);
    expect(modelSchema.strict().safeParse(res.body).success).toBe(true);
    expect(res.body.id).toBe(ANOMALY_MODEL_ID);
  });

  it.each([
    ['malformed', 'forecast'],
    ['unknown', newId('mdl')],
    ['wrongly prefixed', newId('src')],
  ])('answers 404 for an id that is %s', async (_what, id) => {
    for (const path of [`/models/${id}`, `/models/${id}/metrics`]) {
      const res = await a.get(path);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(problemSchema.safeParse(res.body).success).toBe(true);
    }
    const predict = await a.post(`/models/${id}/predict`, { inputs: [{ series: [1, 2, 3] }] });
    expect(predict.status).toBe(404);
  });
});

describe('POST /v1/models/{id}/predict', () => {
  it('forecasts `horizon` values with intervals and fitted parameters', async () => {
    const res = await a.post(`/models/${FORECAST_MODEL_ID}/predict`, { inputs: [{ series: seasonal, horizon: 5, seasonLength: 12 }] });
    expect(res.status).toBe(200);
    expect(predictionSchema.strict().safeParse(res.body).success).toBe(true);
    expect(res.body.id).toMatch(/^prd_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(res.body).toMatchObject({ modelId: FORECAST_MODEL_ID, modelVersion: 1 });
    expect(res.body.latencyMs).toBeGreaterThan(0);
    expect(res.headers.get('server-timing')).toMatch(/^lookup;dur=[\d.]+, validate;dur=[\d.]+, model;dur=[\d.]+, log;dur=[\d.]+$/);
    expect(res.body.predictions).toHaveLength(1);
    const p = res.body.predictions[0];
    for (const key of ['forecast', 'lower80', 'upper80', 'lower95', 'upper95']) expect(p[key]).toHaveLength(5);
    expect(p.method).toBe('holt_winters');
    for (const key of ['alpha', 'beta', 'gamma']) {
      expect(p[key]).toBeGreaterThan(0);
      expect(p[key]).toBeLessThan(1);
    }
    // The series rises by about 1 a step; the forecast continues it.
    expect(p.forecast[0]).toBeGreaterThan(140);
    expect(p.forecast[0]).toBeLessThan(160);
    expect(p.lower95[0]).toBeLessThan(p.forecast[0]);
    expect(p.upper95[0]).toBeGreaterThan(p.forecast[0]);
  });

  it('defaults the horizon to 7 and falls back to Holt without a season length', async () => {
    const res = await a.post(`/models/${FORECAST_MODEL_ID}/predict`, { inputs: [{ series: [1, 2, 3, 4] }] });
    expect(res.status).toBe(200);
    expect(res.body.predictions[0].forecast).toHaveLength(7);
    expect(res.body.predictions[0]).toMatchObject({ method: 'holt', gamma: null });
  });

  it('answers a batch of 3 inputs with 3 predictions, in order', async () => {
    const res = await a.post(`/models/${FORECAST_MODEL_ID}/predict`, {
      inputs: [
        { series: [1, 2, 3], horizon: 1 },
        { series: [5, 5, 5, 5], horizon: 2 },
        { series: seasonal, horizon: 3, seasonLength: 12 },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.predictions.map((p: { forecast: number[] }) => p.forecast.length)).toEqual([1, 2, 3]);
    expect(res.body.predictions[1].forecast).toEqual([5, 5]);
  });

  it('detects a planted spike with the anomaly model', async () => {
    const series = seasonal.slice();
    series[30] = series[30]! + 40;
    const res = await a.post(`/models/${ANOMALY_MODEL_ID}/predict`, { inputs: [{ series, seasonLength: 12 }] });
    expect(res.status).toBe(200);
    const p = res.body.predictions[0];
    expect(p.anomalies.map((x: { index: number }) => x.index)).toEqual([30]);
    expect(p.anomalies[0]).toMatchObject({ index: 30, value: series[30] });
    expect(p.anomalies[0].score).toBeGreaterThan(3.5);
    expect(p.scores).toHaveLength(series.length);
  });

  const tooMany = Array.from({ length: MAX_PREDICT_BATCH + 1 }, () => ({ series: [1, 2, 3] }));
  it.each([
    ['missing series', { inputs: [{ horizon: 3 }] }, 'inputs.0.series'],
    ['series of strings', { inputs: [{ series: ['1', '2', '3'] }] }, 'inputs.0.series.0'],
    ['a too short series', { inputs: [{ series: [1, 2] }] }, 'inputs.0.series'],
    ['horizon 0', { inputs: [{ series: [1, 2, 3], horizon: 0 }] }, 'inputs.0.horizon'],
    ['horizon 366', { inputs: [{ series: [1, 2, 3], horizon: 366 }] }, 'inputs.0.horizon'],
    ['a bad second input', { inputs: [{ series: [1, 2, 3] }, { series: [1, 2, 3], seasonLength: 'weekly' }] }, 'inputs.1.seasonLength'],
    ['an unknown input field', { inputs: [{ series: [1, 2, 3], horizn: 3 }] }, 'inputs.0'],
    ['empty inputs', { inputs: [] }, 'inputs'],
    [`${MAX_PREDICT_BATCH + 1} inputs`, { inputs: tooMany }, 'inputs'],
    ['inputs that are not objects', { inputs: [[1, 2, 3]] }, 'inputs.0'],
    ['no inputs', { series: [1, 2, 3] }, 'inputs'],
  ])('answers 400 for %s, naming the field', async (_what, body, path) => {
    const res = await a.post(`/models/${FORECAST_MODEL_ID}/predict`, body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  it('answers 400 for a non-JSON content type and malformed JSON', async () => {
    const url = `${svc.url}/v1/models/${FORECAST_MODEL_ID}/predict`;
    const text = await http('POST', url, { headers: { ...callerHeaders(accountA), 'content-type': 'text/plain' }, body: 'hello' });
    expect(text.status).toBe(400);
    const broken = await http('POST', url, { headers: { ...callerHeaders(accountA), 'content-type': 'application/json' }, body: '{"inputs": [' });
    expect(broken.status).toBe(400);
  });

  it('runs a large batch on a worker thread with the same results as inline', async () => {
    const before = svc.workers!.completed;
    const long = Array.from({ length: 8_000 }, (_, t) => 50 + 0.01 * t + 5 * Math.sin((2 * Math.PI * t) / 24) + ((t * 13) % 7) / 7);
    const inputs = [0, 1, 2].map((i) => ({ series: long.map((v) => v + i), horizon: 4, seasonLength: 24 }));
    const res = await a.post(`/models/${FORECAST_MODEL_ID}/predict`, { inputs });
    expect(res.status).toBe(200);
    expect(svc.workers!.completed).toBe(before + 1);
    expect(res.body.predictions).toHaveLength(3);
    inputs.forEach((input, i) => expect(res.body.predictions[i].forecast).toEqual(forecastSeries(input.series, 4, 24).forecast));
    // A small batch stays on the main thread.
    await a.post(`/models/${FORECAST_MODEL_ID}/predict`, { inputs: [{ series: [1, 2, 3] }] });
    expect(svc.workers!.completed).toBe(before + 1);
  });

  it('refuses a batch over the total-values cap, naming inputs', async () => {
    const series = new Array(10_000).fill(1);
    const res = await a.post(`/models/${ANOMALY_MODEL_ID}/predict`, { inputs: Array.from({ length: 21 }, () => ({ series })) });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'inputs', message: expect.stringMatching(/at most 200000/) }]);
  });

  it('writes the prediction log and publishes prediction.completed to Kafka', async () => {
    const res = await a.post(`/models/${ANOMALY_MODEL_ID}/predict`, { inputs: [{ series: [1, 2, 3, 4] }, { series: [4, 3, 2, 1] }] });
    expect(res.status).toBe(200);
    const found = await waitFor(() => published.events.find((e) => e.type === 'prediction.completed' && e.data.id === res.body.id), {
      what: 'prediction.completed on Kafka',
    });
    expect(found).toMatchObject({
      type: 'prediction.completed',
      version: 1,
      accountId: accountA,
      subject: res.body.id,
      data: { id: res.body.id, modelId: ANOMALY_MODEL_ID, count: 2, latencyMs: res.body.latencyMs },
    });
    expect(published.headersOf(found.id)?.['event-type']).toBe('prediction.completed');
    const doc = await waitFor(() => svc.mongo.db.collection('prediction_log').findOne({ _id: res.body.id as never, _outboxPending: false }), {
      what: 'the relayed log entry',
    });
    expect(doc).toMatchObject({ accountId: accountA, modelId: ANOMALY_MODEL_ID, ok: true, count: 2, latencyMs: res.body.latencyMs });
    expect(doc.at).toBeInstanceOf(Date);
  });
});

describe('GET /v1/models/{id}/metrics', () => {
  it('counts this account’s predictions and errors, with latency percentiles', async () => {
    const accountB = newId('acct');
    const b = as(accountB);
    const n = 6;
    for (let i = 0; i < n; i++) {
      const res = await b.post(`/models/${FORECAST_MODEL_ID}/predict`, { inputs: [{ series: seasonal, horizon: 3, seasonLength: 12 }, { series: [1, 2, 3] }] });
      expect(res.status).toBe(200);
    }
    expect((await b.post(`/models/${FORECAST_MODEL_ID}/predict`, { inputs: [{ series: 'nope' }] })).status).toBe(400);
    expect((await b.post(`/models/${FORECAST_MODEL_ID}/predict`, { inputs: [] })).status).toBe(400);

    const res = await b.get(`/models/${FORECAST_MODEL_ID}/metrics`);
    expect(res.status).toBe(200);
    expect(metricsSchema.strict().safeParse(res.body).success).toBe(true);
    expect(res.body).toMatchObject({ modelId: FORECAST_MODEL_ID, modelVersion: 1 });
    for (const window of [res.body.serving.lastHour, res.body.serving.lastDay]) {
      expect(window).toMatchObject({ count: n + 2, errors: 2, inputs: 2 * n, sampled: false });
      expect(window.errorRate).toBeCloseTo(2 / (n + 2), 10);
      const { p50, p95, p99 } = window.latencyMs;
      for (const p of [p50, p95, p99]) expect(p).toBeGreaterThan(0);
      expect(p50).toBeLessThanOrEqual(p95);
      expect(p95).toBeLessThanOrEqual(p99);
    }
    expect(res.body.evaluation).toMatchObject({ kind: 'synthetic_backtest', mae: expect.any(Number), naiveMae: expect.any(Number) });
    expect(Date.parse(res.body.generatedAt)).toBeGreaterThan(Date.now() - 60_000);

    // Per model: the anomaly model has none of these.
    const other = await b.get(`/models/${ANOMALY_MODEL_ID}/metrics`);
    expect(other.body.serving.lastDay).toMatchObject({ count: 0, errors: 0, errorRate: 0 });
  });

  it('keeps another account’s metrics separate', async () => {
    const res = await as(newId('acct')).get(`/models/${FORECAST_MODEL_ID}/metrics`);
    expect(res.status).toBe(200);
    for (const window of [res.body.serving.lastHour, res.body.serving.lastDay]) {
      expect(window).toEqual({ count: 0, errors: 0, errorRate: 0, inputs: 0, latencyMs: { p50: null, p95: null, p99: null }, sampled: false });
    }
  });
});

describe('prediction workers', () => {
  it('start as null (inline fallback) when the worker module cannot load', async () => {
    const pool = await WorkerPool.start({ name: 'predict', size: 1, logger: createLogger({ name: 'models-test', level: 'silent' }), module: '@dap/models/no-such-worker' });
    expect(pool).toBeNull();
  });
});

describe('gateway signature', () => {
  it('answers 401 to a direct call without a valid signature', async () => {
    for (const [method, path] of [
      ['GET', '/models'],
      ['GET', `/models/${FORECAST_MODEL_ID}/metrics`],
      ['POST', `/models/${FORECAST_MODEL_ID}/predict`],
    ] as const) {
      const bare = await http(method, `${svc.url}/v1${path}`, method === 'POST' ? { body: { inputs: [{ series: [1, 2, 3] }] } } : {});
      expect(bare.status).toBe(401);
      expect(bare.body.code).toBe('unauthorized');
    }
    const forged = await http('GET', `${svc.url}/v1/models`, { headers: { ...callerHeaders(accountA), [INTERNAL_SIGNATURE_HEADER]: 'forged' } });
    expect(forged.status).toBe(401);
    const wrongSecret = signCallerContext('another-secret-0123456789abcdef0123456789', {
      accountId: accountA,
      plan: 'starter',
      scopes: [...SCOPES],
      requestId: newId('req'),
      issuedAt: Date.now(),
    });
    const res = await http('GET', `${svc.url}/v1/models`, { headers: { [INTERNAL_CONTEXT_HEADER]: wrongSecret.context, [INTERNAL_SIGNATURE_HEADER]: wrongSecret.signature } });
    expect(res.status).toBe(401);
  });
});
