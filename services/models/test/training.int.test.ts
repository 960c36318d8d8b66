import { MAX_PREDICT_BATCH, TOPICS, metricsSchema, modelSchema, newId, predictionSchema, type DomainEvent } from '@dap/contracts';
import { DatasetStore } from '@dap/datasets';
import { columns, http, serviceClient, serviceTestEnv, uniqueSuffix, waitFor } from '@dap/testing';
import { ingestRows, startEventTap, startSourceFeed, type SourceFeed } from '@dap/testing/event-feed';
import { ANOMALY_MODEL_ID, FORECAST_MODEL_ID, loadModelsConfig, startModels, type RunningModels } from '../src/index.ts';
import { LINEAR_TRUTH, linearRows, separableRows } from '../src/domain/training/synthetic-data.ts';
import { expectCreated, untilTrained } from './harness.ts';

/**
 * Training through the real stack: this test plays the sources service (a Parquet file written with the
 * dataset store, then `source.ready` on Kafka), and the models service trains on it in a worker thread.
 */
const suffix = uniqueSuffix();
const prefix = `t${suffix}.`;

let feed: SourceFeed;
let svc: RunningModels;
let seen: DomainEvent[];

const accountA = newId('acct');
const accountB = newId('acct');
const source = newId('src');
/** An id whose ULID time is in 2023: the service does not wait for its events to arrive. */
const oldId = (tail: string) => `src_01H000000000000000000000${tail}`;

function configFor(extra: Record<string, string> = {}) {
  return loadModelsConfig(serviceTestEnv(`models_train_${suffix}`, prefix, { OUTBOX_INTERVAL_MS: '200', DATASET_DIR: feed.datasetDir, TRAIN_LEASE_MS: '5000', ...extra }));
}

const a = serviceClient(() => svc.url, accountA);
const b = serviceClient(() => svc.url, accountB);

/** Rows for every model here: a linear target, separable classes, a constant label, and a timestamp. */
const ROWS = linearRows(400, 17).map((r, i) => {
  const s = separableRows(400, 23)[i]!;
  // `city.name` and its values are awkward on purpose: a dot in the name, a dot and a leading $ in values.
  const city = ['St. Louis', '$ville', 'Paris'][i % 3]!;
  return { ...r, a: s.a, b: s.b, noise: s.noise, 'city.name': city, label: s.label, same: 'only', at: new Date(Date.UTC(2024, 0, 1 + i)).toISOString() };
});

const ready = (id: string, client = a) => untilTrained(client, id);

beforeAll(async () => {
  feed = await startSourceFeed(prefix, 'models-training-test');
  svc = await startModels(configFor());
  seen = (await feed.watch(TOPICS.models)).events;
  const ingested = await feed.provide(accountA, source, { name: 'synthetic', type: 'ndjson' }, ROWS);
  expect(ingested.schema).toEqual(expect.arrayContaining(columns({ x1: 'number', colour: 'string', label: 'string', at: 'timestamp' })));
}, 60_000);

afterAll(async () => {
  await svc?.mongo.db.dropDatabase().catch(() => {});
  await svc?.stop();
  await feed?.stop();
});

const linearBody = { type: 'linear_regression', name: 'price', sourceId: source, target: 'y', features: ['x1', 'x2', 'x3', 'colour'] };

describe('training a model on a source', () => {
  let linearId: string;

  it('accepts the job (202 + Location), trains in the background, and recovers the coefficients', async () => {
    const res = await a.post('/models', linearBody);
    linearId = expectCreated(res, 202);
    expect(res.body).toMatchObject({ kind: 'trained', type: 'linear_regression', status: 'training', version: 1, error: null });
    expect(res.body.training).toMatchObject({ sourceId: source, target: 'y', features: ['x1', 'x2', 'x3', 'colour'], rows: null, finishedAt: null });
    expect(res.body.training.hyperparameters).toEqual({ seed: 42, testFraction: 0.2, maxCategories: 20 });

    const model = await ready(linearId);
    expect(model.status).toBe('ready');
    expect(modelSchema.strict().safeParse(model).success).toBe(true);
    expect(model.training.rows).toEqual({ available: 400, used: 400, train: 320, test: 80 });
    expect(model.training.durationMs).toBeGreaterThan(0);
    const p = model.parameters;
    expect(Math.abs(p.intercept - LINEAR_TRUTH.intercept)).toBeLessThan(0.1);
    expect(Math.abs(p.coefficients.x1 - LINEAR_TRUTH.x1)).toBeLessThan(0.02);
    expect(Math.abs(p.coefficients.x2 - LINEAR_TRUTH.x2)).toBeLessThan(0.05);
    expect(Math.abs(p.coefficients['colour=red'] - LINEAR_TRUTH.red)).toBeLessThan(0.1);
    expect(model.features.map((f: { name: string }) => f.name)).toEqual(['x1', 'x2', 'x3', 'colour']);
    expect(model.features[0].description).toMatch(/training range/);
  });

  it('exposes each feature’s known categories and training range, so a client can offer exactly those', async () => {
    const model = await ready(linearId);
    const [x1, , , colour] = model.features;
    // blue is half the rows; red and green a quarter each (their order is the training split's counts).
    expect(colour.categories[0]).toBe('blue');
    expect([...colour.categories].sort()).toEqual(['blue', 'green', 'red']);
    expect(colour.range).toBeUndefined();
    expect(x1.categories).toBeUndefined();
    expect(x1.range.min).toBeLessThan(x1.range.mean);
    expect(x1.range.mean).toBeLessThan(x1.range.max);
    // x1 is uniform on [-5, 5).
    expect(x1.range.min).toBeGreaterThanOrEqual(-5);
    expect(x1.range.min).toBeLessThan(-4.5);
    expect(x1.range.max).toBeGreaterThan(4.5);
    expect(x1.range.max).toBeLessThan(5);
    const listed = (await a.get('/models?limit=100')).body.data.find((m: { id: string }) => m.id === linearId);
    expect(listed.features[3].categories).toEqual(colour.categories);
  });

  it('publishes model.ready, in the same write as the status change', async () => {
    const event = await waitFor(() => seen.find((e) => e.type === 'model.ready' && e.subject === linearId), { what: 'model.ready' });
    expect(event).toMatchObject({ accountId: accountA, data: { id: linearId, name: 'price', type: 'linear_regression' } });
  });

  it('shows held-out metrics, serving metrics and (empty) drift', async () => {
    const res = await a.get(`/models/${linearId}/metrics`);
    expect(res.status).toBe(200);
    expect(metricsSchema.strict().safeParse(res.body).success).toBe(true);
    const ev = res.body.evaluation;
    expect(ev).toMatchObject({ kind: 'holdout', task: 'regression', split: { trainRows: 320, testRows: 80, seed: 42, testFraction: 0.2 } });
    expect(ev.r2).toBeGreaterThan(0.999);
    expect(ev.rmse).toBeLessThan(0.2);
    expect(ev.mae).toBeLessThan(ev.baseline.mae / 10);
    expect(res.body.drift).toMatchObject({ window: 'P1D', inputs: 0, sampled: false });
    expect(res.body.drift.features.map((f: { feature: string; status: string }) => [f.feature, f.status])).toEqual([
      ['x1', 'insufficient_data'],
      ['x2', 'insufficient_data'],
      ['x3', 'insufficient_data'],
      ['colour', 'insufficient_data'],
    ]);
  });

  it('predicts with the trained parameters, taking null for a missing value', async () => {
    const res = await a.post(`/models/${linearId}/predict`, {
      inputs: [
        { x1: 1, x2: 2, x3: 0, colour: 'red' },
        { x1: 0, x2: 0, x3: 0, colour: null },
      ],
    });
    expect(res.status).toBe(200);
    expect(predictionSchema.strict().safeParse(res.body).success).toBe(true);
    expect(res.body).toMatchObject({ modelId: linearId, modelVersion: 1 });
    expect(res.body.predictions[0].prediction).toBeCloseTo(3 + 2 - 3 + 4, 0);
    expect(res.body.predictions[1].prediction).toBeCloseTo(3, 0);
  });

  const tooMany = Array.from({ length: MAX_PREDICT_BATCH + 1 }, () => ({ x1: 1, x2: 1, x3: 1, colour: 'red' }));
  it.each([
    ['an unknown feature', { inputs: [{ x1: 1, x2: 1, x3: 1, colour: 'red', bogus: 1 }] }, 'inputs.0.bogus'],
    ['a string for a number', { inputs: [{ x1: 'one', x2: 1, x3: 1, colour: 'red' }] }, 'inputs.0.x1'],
    ['a number for a category', { inputs: [{ x1: 1, x2: 1, x3: 1, colour: 7 }] }, 'inputs.0.colour'],
    ['a missing feature', { inputs: [{ x1: 1, x3: 1, colour: 'red' }] }, 'inputs.0.x2'],
    [
      'a bad second input',
      {
        inputs: [
          { x1: 1, x2: 1, x3: 1, colour: 'red' },
          { x1: 1, x2: true, x3: 1, colour: 'red' },
        ],
      },
      'inputs.1.x2',
    ],
    ['an empty batch', { inputs: [] }, 'inputs'],
    [`${MAX_PREDICT_BATCH + 1} inputs`, { inputs: tooMany }, 'inputs'],
  ])('answers 400 for %s, naming the field', async (_what, body, path) => {
    const res = await a.post(`/models/${linearId}/predict`, body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  it('measures input drift per feature against the training data', async () => {
    // Shifted inputs: x1 far beyond its training range, colour always blue.
    for (let r = 0; r < 2; r++) {
      const inputs = Array.from({ length: 25 }, (_, i) => ({ x1: 100 + i, x2: (i % 4) + 0.5, x3: 0, colour: 'blue' }));
      expect((await a.post(`/models/${linearId}/predict`, { inputs })).status).toBe(200);
    }
    const res = await a.get(`/models/${linearId}/metrics`);
    const drift = res.body.drift;
    expect(drift.inputs).toBe(42); // the earlier request's 2 inputs, then 20 logged per request of 25
    const byName = Object.fromEntries(drift.features.map((f: { feature: string }) => [f.feature, f]));
    expect(byName.x1).toMatchObject({ status: 'significant', values: 42 });
    expect(byName.x1.actual[byName.x1.actual.length - 1]).toBeCloseTo(40 / 42, 5); // the shifted ones, all above the top decile
    expect(byName.x1.psi).toBeGreaterThan(1);
    expect(byName.colour).toMatchObject({ kind: 'categorical', status: 'significant' });
    expect(byName.colour.bins).toContain('blue');
    expect(res.body.serving.lastDay.count).toBeGreaterThanOrEqual(3);
  });

  it('flags a category the model never learned in that input’s prediction, and only there', async () => {
    for (const explain of [false, true]) {
      const res = await a.post(`/models/${linearId}/predict`, {
        inputs: [
          { x1: 1, x2: 2, x3: 0, colour: 'purple' },
          { x1: 1, x2: 2, x3: 0, colour: 'red' },
          { x1: 1, x2: 2, x3: 0, colour: null },
        ],
        explain,
      });
      expect(res.status).toBe(200);
      expect(predictionSchema.strict().safeParse(res.body).success).toBe(true);
      const [purple, red, missing] = res.body.predictions;
      expect(purple.unknownCategories).toEqual({ colour: 'purple' });
      expect(red).not.toHaveProperty('unknownCategories');
      expect(missing).not.toHaveProperty('unknownCategories');
      // Linear regression encodes an unseen level like its reference (blue, no effect): 3 + 2 − 3.
      expect(purple.prediction).toBeCloseTo(2, 0);
      expect(red.prediction).toBeCloseTo(6, 0);
    }
  });

  it('trains a random forest classifier with probabilities and classification metrics', async () => {
    const res = await a.post('/models', {
      type: 'random_forest_classifier',
      name: 'side',
      sourceId: source,
      target: 'label',
      features: ['a', 'b', 'noise', 'city.name'],
      hyperparameters: { nEstimators: 15, maxDepth: 6, maxFeatures: 1 },
    });
    expect(res.status).toBe(202);
    const model = await ready(res.body.id);
    expect(model.status).toBe('ready');
    expect(model.parameters.trees).toBe(15);
    expect(Object.keys(model.parameters.featureImportances).sort()).toEqual(['a', 'b', 'city.name=$ville', 'city.name=Paris', 'city.name=St. Louis', 'noise']);
    const metrics = (await a.get(`/models/${model.id}/metrics`)).body.evaluation;
    expect(metrics).toMatchObject({ kind: 'holdout', task: 'classification', split: { stratified: true } });
    expect(metrics.accuracy).toBeGreaterThanOrEqual(0.9);
    expect(metrics.rocAuc).toBeGreaterThanOrEqual(0.95);
    expect(metrics.confusionMatrix.labels).toEqual(['no', 'yes']);
    for (const k of ['precision', 'recall', 'f1']) expect(metrics[k]).toBeGreaterThan(0.85);
    const p = await a.post(`/models/${model.id}/predict`, {
      inputs: [
        { a: 1.8, b: 1.5, noise: 0.3, 'city.name': '$ville' },
        { a: -1.8, b: -1.5, noise: 0.3, 'city.name': null },
      ],
    });
    expect(p.status).toBe(200);
    expect(p.body.predictions.map((x: { prediction: string }) => x.prediction)).toEqual(['yes', 'no']);
    const drift = (await a.get(`/models/${model.id}/metrics`)).body.drift;
    expect(drift.inputs).toBe(2);
    expect(drift.features.find((f: { feature: string }) => f.feature === 'city.name')).toMatchObject({ kind: 'categorical', values: 1 });
    const probs = p.body.predictions[0].probabilities;
    expect(Object.keys(probs).sort()).toEqual(['no', 'yes']);
    expect(probs.yes + probs.no).toBeCloseTo(1, 6);
  });

  it('trains k-means and answers cluster ids', async () => {
    const res = await a.post('/models', { type: 'kmeans', name: 'segments', sourceId: source, features: ['a', 'b'], hyperparameters: { k: 2 } });
    expect(res.status).toBe(202);
    const model = await ready(res.body.id);
    expect(model.status).toBe('ready');
    expect(model.parameters.centroids).toHaveLength(2);
    const ev = (await a.get(`/models/${model.id}/metrics`)).body.evaluation;
    expect(ev).toMatchObject({ kind: 'holdout', task: 'clustering' });
    expect(ev.silhouette).toBeGreaterThan(0);
    expect(ev.inertia).toBeGreaterThan(0);
    const p = await a.post(`/models/${model.id}/predict`, {
      inputs: [
        { a: 1, b: 1 },
        { a: 1.01, b: 1 },
      ],
    });
    expect(p.status).toBe(200);
    expect([0, 1]).toContain(p.body.predictions[0].cluster);
    expect(p.body.predictions[1].cluster).toBe(p.body.predictions[0].cluster);
    expect(p.body.predictions[0].distance).toBeGreaterThanOrEqual(0);
  });

  it('fails a job it cannot learn from, with model.failed, and refuses to predict on it (409)', async () => {
    const res = await a.post('/models', { type: 'logistic_regression', name: 'hopeless', sourceId: source, target: 'same', features: ['a'] });
    expect(res.status).toBe(202);
    const model = await ready(res.body.id);
    expect(model.status).toBe('failed');
    expect(model.error).toMatch(/1 distinct value\(s\); a classifier needs at least two classes/);
    const event = await waitFor(() => seen.find((e) => e.type === 'model.failed' && e.subject === model.id), { what: 'model.failed' });
    expect(event.data).toMatchObject({ id: model.id, name: 'hopeless', error: model.error });
    const p = await a.post(`/models/${model.id}/predict`, { inputs: [{ a: 1 }] });
    expect(p.status).toBe(409);
    expect(p.body.detail).toMatch(/failed/);
  });

  it('lists the account’s models after the built-ins, newest first', async () => {
    const res = await a.get('/models?limit=100');
    expect(res.status).toBe(200);
    const ids = res.body.data.map((m: { id: string }) => m.id);
    expect(ids.slice(0, 2)).toEqual([FORECAST_MODEL_ID, ANOMALY_MODEL_ID]);
    expect(ids.slice(2)).toHaveLength(4);
    expect(ids[ids.length - 1]).toBe(linearId);
    for (const m of res.body.data) expect(m.parameters).toBeUndefined(); // only on GET /models/{id}
    expect((await b.get('/models')).body.data.map((m: { id: string }) => m.id)).toEqual([FORECAST_MODEL_ID, ANOMALY_MODEL_ID]);
  });
});

describe('training requests that cannot start', () => {
  it.each([
    ['a feature the source lacks', { ...linearBody, features: ['x1', 'nope'] }, 'features.1'],
    ['a target the source lacks', { ...linearBody, target: 'nope' }, 'target'],
    ['a string regression target', { ...linearBody, target: 'colour' }, 'target'],
    ['a number as class labels', { ...linearBody, type: 'logistic_regression', target: 'x1', features: ['x2'] }, 'target'],
    ['the target as a feature', { ...linearBody, features: ['x1', 'y'] }, 'features.1'],
    ['a timestamp feature', { ...linearBody, features: ['x1', 'at'] }, 'features.1'],
    ['an unknown type', { ...linearBody, type: 'svm' }, 'type'],
    ['no features', { ...linearBody, features: [] }, 'features'],
    ['a target for k-means', { ...linearBody, type: 'kmeans' }, ''],
    ['a bad hyperparameter', { ...linearBody, type: 'random_forest_regressor', hyperparameters: { nEstimators: 0 } }, 'hyperparameters.nEstimators'],
    ['an unknown hyperparameter', { ...linearBody, hyperparameters: { depth: 3 } }, 'hyperparameters.depth'],
    ['a malformed source id', { ...linearBody, sourceId: 'src_nope' }, 'sourceId'],
  ])('answers 400 for %s, naming the field', async (_what, body, path) => {
    const res = await a.post('/models', body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    if (path) expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  it('answers 404 for an unknown source and for another account’s source', async () => {
    expect((await a.post('/models', { ...linearBody, sourceId: oldId('0A') })).status).toBe(404);
    const res = await b.post('/models', linearBody);
    expect(res.status).toBe(404);
    expect(res.body.detail).toMatch(/source/);
  });

  it('waits briefly for the event of a source whose data was just written, and not for an unknown one', async () => {
    const fresh = newId('src');
    const ingested = await feed.ingest(accountA, fresh, ROWS.slice(0, 50));
    // The event arrives after the request: the sources service wrote the data, Kafka is a moment behind.
    const late = new Promise((r) => setTimeout(r, 400)).then(() => feed.announceReady(accountA, fresh, { name: 'fresh', type: 'ndjson' }, ingested));
    const res = await a.post('/models', { ...linearBody, sourceId: fresh });
    await late;
    expect(res.status).toBe(202);
    // A fresh source whose file exists is waited for up to 3 s; one with no file is answered at once.
    const started = Date.now();
    expect((await a.post('/models', { ...linearBody, sourceId: newId('src') })).status).toBe(404);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect((await ready(res.body.id)).status).toBe('ready');
  });

  it('reads the current file once more when a re-sync removed the one it resolved before the worker read it', async () => {
    const resynced = newId('src');
    // A writer without a grace period: the replaced file is gone at once, as after a long one ran out.
    const eager = new DatasetStore(feed.datasetDir, feed.store.duck, { graceMs: 0 });
    const sync = (rows: typeof ROWS) => ingestRows(eager, accountA, resynced, rows);
    const first = await sync(ROWS.slice(0, 100));
    await feed.announceReady(accountA, resynced, { name: 'resynced', type: 'ndjson' }, first);
    const pool = svc.trainWorkers!;
    const realRun = pool.run.bind(pool);
    const read: string[] = [];
    const spy = jest.spyOn(pool, 'run').mockImplementation(async (job, opts) => {
      if (job.data.kind === 'parquet') read.push(job.data.file);
      if (read.length === 1) await sync(ROWS.slice(0, 200)); // the re-sync lands between resolve and read
      return realRun(job, opts);
    });
    try {
      const res = await waitFor(async () => {
        const r = await a.post('/models', { ...linearBody, name: 'resynced', sourceId: resynced });
        return r.status === 202 ? r : null;
      });
      const model = await ready(res.body.id);
      expect(model).toMatchObject({ status: 'ready', error: null });
      expect(model.training.rows).toMatchObject({ available: 200, used: 200 });
      expect(read).toHaveLength(2);
      expect(read[0]).toBe(first.file);
      expect(read[1]).not.toBe(first.file);
    } finally {
      spy.mockRestore();
    }
  });

  it('answers 409 for a source that is not ready, and 404 once it is deleted', async () => {
    const pending = oldId('0B');
    await feed.publish('source.created', accountA, pending, { id: pending, name: 'later', type: 'csv' });
    const res = await waitFor(
      async () => {
        const r = await a.post('/models', { ...linearBody, sourceId: pending });
        return r.status === 409 ? r : null;
      },
      { what: 'the pending source in the projection' },
    );
    expect(res.body.detail).toMatch(/pending/);
    await feed.publish('source.deleted', accountA, pending, { id: pending });
    await waitFor(async () => (await a.post('/models', { ...linearBody, sourceId: pending })).status === 404, { what: 'the deletion in the projection' });
  });
});

describe('a model still training', () => {
  it('answers 409 to predict until an instance with training workers claims the job and trains it', async () => {
    // An instance without training workers records the job with a lapsed lease, for any instance with
    // workers to claim. In its own database there is none at first, so the model stays in training.
    const apiPrefix = `t${suffix}api.`;
    const shared = { MONGO_DB: `models_api_${suffix}`, KAFKA_TOPIC_PREFIX: apiPrefix };
    const apiOnly = await startModels(configFor({ ...shared, TRAIN_WORKERS: '0' }));
    let trainer: RunningModels | null = null;
    const apiTap = await startEventTap(apiPrefix, 'models-training-test-api');
    try {
      const described = { rowCount: ROWS.length, schema: await feed.store.describeFile((await feed.store.currentFile(accountA, source))!) };
      await apiTap.publish('source.ready', accountA, source, { id: source, name: 'synthetic', type: 'ndjson', ...described });
      const c = serviceClient(() => apiOnly.url, accountA);
      const created = await waitFor(
        async () => {
          const r = await c.post('/models', linearBody);
          return r.status === 202 ? r : null;
        },
        { what: 'the source in the API-only projection' },
      );
      const id = created.body.id;
      const input = { inputs: [{ x1: 1, x2: 2, x3: 0, colour: 'red' }] };
      const p = await c.post(`/models/${id}/predict`, input);
      expect(p.status).toBe(409);
      expect(p.body.detail).toMatch(/still training/);
      const m = await c.get(`/models/${id}/metrics`);
      expect(m.status).toBe(200);
      expect(m.body).toMatchObject({ evaluation: null, drift: null });
      expect((await c.get(`/models/${id}`)).body.status).toBe('training');
      const doomed = (await c.post('/models', { ...linearBody, name: 'doomed' })).body.id;
      expect((await c.del(`/models/${doomed}`)).status).toBe(204);
      expect((await c.get(`/models/${doomed}`)).status).toBe(404);

      // A trainer on the same database claims the lapsed job and trains it; the API-only instance serves it.
      trainer = await startModels(configFor(shared));
      const model = await ready(id, c);
      expect(model.status).toBe('ready');
      const served = await c.post(`/models/${id}/predict`, input);
      expect(served.status).toBe(200);
      expect(served.body.predictions[0].prediction).toBeCloseTo(6, 0);
      expect(await apiOnly.mongo.db.collection('model_artifacts').countDocuments({ _id: doomed as never })).toBe(0);
    } finally {
      await apiTap.stop();
      await apiOnly.mongo.db.dropDatabase().catch(() => {});
      await trainer?.stop();
      await apiOnly.stop();
    }
  });
});

describe('DELETE /v1/models/{id}', () => {
  it('deletes an own model, refuses built-ins (409), and hides other accounts’ models (404)', async () => {
    const created = await a.post('/models', { ...linearBody, name: 'doomed' });
    const id = created.body.id;
    await ready(id);
    expect((await b.del(`/models/${id}`)).status).toBe(404);
    expect((await b.get(`/models/${id}`)).status).toBe(404);
    expect((await a.del(`/models/${id}`)).status).toBe(204);
    expect((await a.get(`/models/${id}`)).status).toBe(404);
    expect((await a.del(`/models/${id}`)).status).toBe(404);
    expect((await a.post(`/models/${id}/predict`, { inputs: [{ x1: 1, x2: 1, x3: 1, colour: 'red' }] })).status).toBe(404);
    const builtin = await a.del(`/models/${FORECAST_MODEL_ID}`);
    expect(builtin.status).toBe(409);
    expect(builtin.body.detail).toMatch(/built-in/);
    expect((await a.del('/models/nope')).status).toBe(404);
    expect(await svc.mongo.db.collection('model_artifacts').countDocuments({ _id: id as never })).toBe(0);
  });

  it('answers 401 to direct calls without the gateway signature', async () => {
    expect((await http('POST', `${svc.url}/v1/models`, { body: linearBody })).status).toBe(401);
    expect((await http('DELETE', `${svc.url}/v1/models/${FORECAST_MODEL_ID}`)).status).toBe(401);
  });
});
