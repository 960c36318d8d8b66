import { modelSchema, modelVersionListSchema, newId, predictionSchema } from '@dap/contracts';
import { serviceClient, serviceTestEnv, testClock, uniqueSuffix, waitFor } from '@dap/testing';
import { startSourceFeed, type SourceFeed } from '@dap/testing/event-feed';
import { FORECAST_MODEL_ID, loadModelsConfig, startModels, type RunningModels } from '../src/index.ts';
import { linearRows } from '../src/domain/training/synthetic-data.ts';
import { untilTrained } from './harness.ts';

/**
 * Versions and aliases through the real stack: a model trained on a source, the source's data replaced,
 * the model retrained into version 2, and aliases moved between the two.
 */
const suffix = uniqueSuffix();
const prefix = `v${suffix}.`;
/** The serving cache's clock, moved past MODEL_CACHE_TTL_MS instead of waiting for it. */
const clock = testClock();
const CACHE_TTL_MS = 60_000;

let feed: SourceFeed;
let svc: RunningModels;

const accountA = newId('acct');
const accountB = newId('acct');
const source = newId('src');

const api = (accountId: string) => serviceClient(() => svc.url, accountId);
const a = api(accountA);
const b = api(accountB);

/** Version 1 learns y; version 2 is trained after the data's y was multiplied by `scale`. */
async function ingest(scale: number): Promise<void> {
  const rows = linearRows(300, 5).map((r) => ({ ...r, y: (r.y as number) * scale }));
  await feed.announceReady(accountA, source, { name: 'data', type: 'ndjson' }, await feed.ingest(accountA, source, rows));
}

const settled = (id: string) => untilTrained(a, id);

const input = { x1: 1, x2: 2, x3: 0, colour: 'red' };
const predictOne = async (id: string, extra: Record<string, unknown> = {}) => a.post(`/models/${id}/predict`, { inputs: [input], ...extra });

beforeAll(async () => {
  feed = await startSourceFeed(prefix, 'models-versions-test');
  svc = await startModels(
    loadModelsConfig(serviceTestEnv(`models_versions_${suffix}`, prefix, { OUTBOX_INTERVAL_MS: '200', DATASET_DIR: feed.datasetDir, MODEL_CACHE_TTL_MS: String(CACHE_TTL_MS) })),
    { now: clock.now },
  );
  await feed.publish('source.created', accountA, source, { id: source, name: 'data', type: 'ndjson' });
  await ingest(1);
}, 60_000);

afterAll(async () => {
  await svc?.mongo.db.dropDatabase().catch(() => {});
  await svc?.stop();
  await feed?.stop();
});

describe('model versions and aliases', () => {
  let id: string;
  let v1Answer: number;

  it('trains version 1 with production → 1, and reads a model from before versions the same way', async () => {
    const created = await waitFor(
      async () => {
        const r = await a.post('/models', { type: 'linear_regression', name: 'price', sourceId: source, target: 'y', features: ['x1', 'x2', 'x3', 'colour'] });
        return r.status === 202 ? r : null;
      },
      { timeoutMs: 20_000, intervalMs: 200, what: 'the source to be known' },
    );
    id = created.body.id;
    expect(created.body).toMatchObject({ version: 1, aliases: { production: 1 } });
    expect((await settled(id)).status).toBe('ready');

    // A model stored before versions existed has no alias map: it is version 1 with production → 1.
    await svc.mongo.db.collection('models').updateOne({ _id: id as never }, { $unset: { aliases: '' } });
    const model = await a.get(`/models/${id}`);
    expect(model.body.aliases).toEqual({ production: 1 });
    expect(modelSchema.strict().safeParse(model.body).success).toBe(true);
    const res = await predictOne(id);
    expect(res.status).toBe(200);
    expect(predictionSchema.strict().safeParse(res.body).success).toBe(true);
    expect(res.body).toMatchObject({ modelVersion: 1, alias: 'production' });
    v1Answer = res.body.predictions[0].prediction;
    expect(v1Answer).toBeCloseTo(3 + 2 * 1 - 1.5 * 2 + 4, 0);
  });

  it('retrains into version 2 while production keeps serving version 1; of two retrainings at once one wins, the other is a 409', async () => {
    await ingest(2);
    const [first, second] = await Promise.all([a.post(`/models/${id}/versions`, {}), a.post(`/models/${id}/versions`, {})]);
    expect([first.status, second.status].sort()).toEqual([202, 409]);
    const res = first.status === 202 ? first : second;
    expect(res.headers.get('location')).toBe(`/v1/models/${id}`);
    expect(res.body).toMatchObject({ id, version: 2, status: 'training', aliases: { production: 1 } });
    const during = await predictOne(id);
    expect(during.status).toBe(200);
    expect(during.body).toMatchObject({ modelVersion: 1, alias: 'production' });
    expect(during.body.predictions[0].prediction).toBe(v1Answer);

    const v2 = await settled(id);
    expect(v2).toMatchObject({ version: 2, status: 'ready', aliases: { production: 1 } });
    expect(v2.parameters.coefficients.x1).toBeCloseTo(4, 1); // learnt on the doubled data
  });

  it('answers the named version or alias, and 404 for one that does not exist', async () => {
    const byVersion = await predictOne(id, { version: 2 });
    expect(byVersion.body).toMatchObject({ modelVersion: 2, alias: null });
    expect(byVersion.body.predictions[0].prediction).toBeCloseTo(2 * v1Answer, 0);
    expect((await predictOne(id)).body).toMatchObject({ modelVersion: 1, alias: 'production' });

    const noAlias = await predictOne(id, { alias: 'candidate' });
    expect(noAlias.status).toBe(404);
    expect(noAlias.body.detail).toMatch(/no alias "candidate"/);
    const noVersion = await predictOne(id, { version: 3 });
    expect(noVersion.status).toBe(404);
    expect(noVersion.body.detail).toMatch(/no version 3/);
    const both = await predictOne(id, { version: 1, alias: 'production' });
    expect(both.status).toBe(400);
    expect(both.body.errors).toEqual([expect.objectContaining({ path: 'alias' })]);
  });

  it('moves aliases, lists versions with the aliases and evaluations side by side, and measures each version apart', async () => {
    const set = await a.post(`/models/${id}/aliases`, { aliases: { candidate: 2 } });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ modelId: id, aliases: { production: 1, candidate: 2 }, shadowShare: 0 });
    expect((await predictOne(id, { alias: 'candidate' })).body).toMatchObject({ modelVersion: 2, alias: 'candidate' });

    const versions = await a.get(`/models/${id}/versions`);
    expect(versions.status).toBe(200);
    expect(modelVersionListSchema.strict().safeParse(versions.body).success).toBe(true);
    expect(versions.body.data.map((v: { version: number; status: string; aliases: string[] }) => [v.version, v.status, v.aliases])).toEqual([
      [2, 'ready', ['candidate']],
      [1, 'ready', ['production']],
    ]);
    const [v2, v1] = versions.body.data;
    expect(v1.evaluation.r2).toBeGreaterThan(0.99);
    expect(v2.evaluation.rmse).toBeGreaterThan(v1.evaluation.rmse); // the same noise, doubled
    expect(v2.training.startedAt > v1.training.startedAt).toBe(true);

    // So far version 1 answered 3 requests (one during retraining) and was charged the body naming both a
    // version and an alias (400); version 2 answered 2. The 404s chose no version and count for none.
    const m1 = await a.get(`/models/${id}/metrics`);
    expect(m1.body).toMatchObject({ modelVersion: 1, serving: { lastDay: { count: 4, errors: 1 } } });
    const m2 = await a.get(`/models/${id}/metrics?alias=candidate`);
    expect(m2.body).toMatchObject({ modelVersion: 2, serving: { lastDay: { count: 2, errors: 0 } } });
    expect(m2.body.evaluation.rmse).toBe(v2.evaluation.rmse);
    expect((await a.get(`/models/${id}/metrics?version=1`)).body.evaluation.rmse).toBe(v1.evaluation.rmse);
    expect((await a.get(`/models/${id}/metrics?version=7`)).status).toBe(404);
    const both = await a.get(`/models/${id}/metrics?version=1&alias=production`);
    expect(both.status).toBe(400);
    expect(both.body.errors).toEqual([{ path: 'alias', message: 'name a version or an alias, not both' }]);
  });

  it('copies production traffic to the candidate when asked, records and compares its answers, and never returns them', async () => {
    // Share 0 (the default): nothing is copied.
    expect((await a.post(`/models/${id}/aliases`, { shadowShare: 0 })).body).toEqual({ modelId: id, aliases: { production: 1, candidate: 2 }, shadowShare: 0 });
    expect((await predictOne(id)).status).toBe(200);
    const none = await a.get(`/models/${id}/metrics?alias=candidate`);
    expect(none.body.shadow).toBeNull();

    const set = await a.post(`/models/${id}/aliases`, { shadowShare: 1 });
    expect(set.body).toEqual({ modelId: id, aliases: { production: 1, candidate: 2 }, shadowShare: 1 });
    expect((await a.get(`/models/${id}`)).body.shadowShare).toBe(1);
    for (let i = 0; i < 3; i++) {
      const live = await predictOne(id);
      expect(live.body).toMatchObject({ modelVersion: 1, alias: 'production' });
      expect(live.body.predictions[0]).toEqual({ prediction: v1Answer }); // production's answer only
    }
    expect((await predictOne(id, { version: 1 })).status).toBe(200); // a named version is not copied
    const m = await waitFor(
      async () => {
        const r = await a.get(`/models/${id}/metrics?alias=candidate`);
        return r.body.shadow?.requests === 3 ? r : null;
      },
      { timeoutMs: 10_000, intervalMs: 100, what: 'three shadow predictions' },
    );
    expect(m.body.shadow).toMatchObject({ window: 'P1D', comparedWith: 1, requests: 3, errors: 0, inputs: 3, agreement: null, sampled: false });
    expect(m.body.shadow.meanAbsoluteDifference).toBeCloseTo(Math.abs(v1Answer), 0); // version 2 answers about twice version 1
    expect(m.body.shadow.latencyMs.p50).toBeGreaterThanOrEqual(0);
    expect(m.body.shadow.productionLatencyMs.p50).toBeGreaterThanOrEqual(0);
    expect(m.body.serving.lastDay.count).toBe(2); // copies are not the candidate's own traffic
    expect((await a.get(`/models/${id}/metrics`)).body.shadow).toBeNull();
    await a.post(`/models/${id}/aliases`, { shadowShare: 0 });
  });

  it('promotes the candidate atomically: production → 2 and candidate removed in one write', async () => {
    const res = await a.post(`/models/${id}/aliases`, { aliases: { production: 2, candidate: null } });
    expect(res.status).toBe(200);
    expect(res.body.aliases).toEqual({ production: 2 });
    expect((await predictOne(id)).body).toMatchObject({ modelVersion: 2, alias: 'production' });
    expect((await a.get(`/models/${id}`)).body.aliases).toEqual({ production: 2 });
    // Concurrent moves of different aliases both land: each write is conditioned on the map it read.
    const [x, y] = await Promise.all([a.post(`/models/${id}/aliases`, { aliases: { blue: 1 } }), a.post(`/models/${id}/aliases`, { aliases: { green: 2 } })]);
    expect([x.status, y.status]).toEqual([200, 200]);
    expect((await a.get(`/models/${id}`)).body.aliases).toEqual({ production: 2, blue: 1, green: 2 });
    await a.post(`/models/${id}/aliases`, { aliases: { blue: null, green: null } });
    // Rolling back is the same move the other way.
    expect((await a.post(`/models/${id}/aliases`, { aliases: { production: 1 } })).body.aliases).toEqual({ production: 1 });
    expect((await predictOne(id)).body.modelVersion).toBe(1);
  });

  it('refuses bad alias changes with 400s naming the field, and leaves the aliases as they were', async () => {
    const missing = await a.post(`/models/${id}/aliases`, { aliases: { production: 9, candidate: 2 } });
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toEqual([{ path: 'aliases.production', message: 'the model has no version 9 (its latest is 2)' }]);
    const remove = await a.post(`/models/${id}/aliases`, { aliases: { production: null } });
    expect(remove.status).toBe(400);
    expect(remove.body.errors[0].path).toBe('aliases.production');
    const badName = await a.post(`/models/${id}/aliases`, { aliases: { 'a.b': 1 } });
    expect(badName.status).toBe(400);
    expect((await a.post(`/models/${id}/aliases`, { aliases: {} })).status).toBe(400);
    expect((await a.post(`/models/${id}/aliases`, { shadowShare: 1.5 })).status).toBe(400);
    expect((await a.get(`/models/${id}`)).body.aliases).toEqual({ production: 1 });
    expect((await a.post(`/models/${FORECAST_MODEL_ID}/aliases`, { aliases: { candidate: 1 } })).status).toBe(409);
    expect((await a.post(`/models/${FORECAST_MODEL_ID}/versions`, {})).status).toBe(409);
    expect((await a.get(`/models/${FORECAST_MODEL_ID}/versions`)).body.data).toEqual([expect.objectContaining({ version: 1, aliases: ['production'] })]);
    const hyper = await a.post(`/models/${id}/versions`, { hyperparameters: { seed: 'x' } });
    expect(hyper.status).toBe(400);
    expect(hyper.body.errors[0].path).toMatch(/hyperparameters\.seed/);
  });

  it('hides every version and alias from another account', async () => {
    expect((await b.get(`/models/${id}/versions`)).status).toBe(404);
    expect((await b.post(`/models/${id}/aliases`, { aliases: { production: 2 } })).status).toBe(404);
    expect((await b.post(`/models/${id}/versions`, {})).status).toBe(404);
    expect((await b.post(`/models/${id}/predict`, { inputs: [input], version: 1 })).status).toBe(404);
    expect((await a.get(`/models/${id}`)).body.aliases).toEqual({ production: 1 });
  });

  it('explains a prediction of the named version exactly, and refuses to explain with a model that cannot (400)', async () => {
    const res = await predictOne(id, { version: 2, explain: true });
    expect(res.status).toBe(200);
    const [p] = res.body.predictions;
    expect(p.explanation).toMatchObject({ method: 'exact_linear', space: 'prediction', value: p.prediction });
    const c = p.explanation.contributions;
    expect(Object.keys(c)).toEqual(['x1', 'x2', 'x3', 'colour']);
    const sum = p.explanation.baseValue + c.x1 + c.x2 + c.x3 + c.colour;
    expect(Math.abs(sum - p.prediction)).toBeLessThanOrEqual(1e-9 * Math.abs(p.prediction));
    expect(c.colour).toBeCloseTo(8, 0); // red is +4 in the truth, doubled in version 2's data
    expect((await predictOne(id, { version: 2 })).body.predictions[0].explanation).toBeUndefined();

    const forecast = await a.post(`/models/${FORECAST_MODEL_ID}/predict`, { inputs: [{ series: [3, 5, 4, 6, 5, 7, 6, 8], horizon: 2, seasonLength: 2 }], explain: true });
    expect(forecast.status).toBe(200);
    const f = forecast.body.predictions[0];
    expect(f.explanation.level[0] + f.explanation.trend[0] + f.explanation.season[0]).toBeCloseTo(f.forecast[0], 9);
    const anomaly = await a.post(`/models/mdl_7ZZZZZZZZZZZZZZZZZZZZZANMY/predict`, { inputs: [{ series: [1, 2, 3, 4, 5] }], explain: true });
    expect(anomaly.status).toBe(400);
    expect(anomaly.body.errors).toEqual([{ path: 'explain', message: expect.stringMatching(/cannot explain/) }]);
  });

  it('serves another instance’s alias move and deletion within MODEL_CACHE_TTL_MS, and never another account’s cached model', async () => {
    const models = svc.mongo.db.collection('models');
    expect((await predictOne(id)).body).toMatchObject({ modelVersion: 1, alias: 'production' }); // now cached
    expect((await b.post(`/models/${id}/predict`, { inputs: [input] })).status).toBe(404);

    // Another instance promotes version 2 (its write is this one, straight to MongoDB).
    await models.updateOne({ _id: id as never }, { $set: { aliases: { production: 2 } } });
    expect((await predictOne(id)).body.modelVersion).toBe(1); // the cached record, within its age bound
    // A request this record cannot answer is read again rather than refused from the cache.
    await models.updateOne({ _id: id as never }, { $set: { aliases: { production: 2, blue: 1 } } });
    expect((await predictOne(id, { alias: 'blue' })).body).toMatchObject({ modelVersion: 1, alias: 'blue' });
    expect((await predictOne(id)).body.modelVersion).toBe(2); // that read refreshed the cache
    await models.updateOne({ _id: id as never }, { $set: { aliases: { production: 1 } } });
    expect((await predictOne(id)).body.modelVersion).toBe(2);
    clock.advance(CACHE_TTL_MS);
    expect((await predictOne(id)).body.modelVersion).toBe(1); // rolled back elsewhere: seen once the bound passed

    // Another instance deletes it: answered until the bound passes, then 404.
    await models.updateOne({ _id: id as never }, { $set: { deletedAt: new Date() } });
    expect((await predictOne(id)).status).toBe(200);
    clock.advance(CACHE_TTL_MS);
    expect((await predictOne(id)).status).toBe(404);
    await models.updateOne({ _id: id as never }, { $set: { deletedAt: null } });
    expect((await predictOne(id)).status).toBe(200);
    // A change made through this instance is served at once.
    expect((await a.post(`/models/${id}/aliases`, { aliases: { production: 2 } })).status).toBe(200);
    expect((await predictOne(id)).body.modelVersion).toBe(2);
    expect((await a.post(`/models/${id}/aliases`, { aliases: { production: 1 } })).status).toBe(200);
    expect((await predictOne(id)).body.modelVersion).toBe(1);
  });

  it('deletes every version and its artifact with the model', async () => {
    const db = svc.mongo.db;
    expect((await predictOne(id)).status).toBe(200); // cached
    expect((await b.post(`/models/${id}/predict`, { inputs: [input] })).status).toBe(404);
    expect(await db.collection('model_artifacts').countDocuments({ accountId: accountA, $or: [{ _id: id as never }, { modelId: id }] })).toBe(2);
    expect(await db.collection('model_versions').countDocuments({ accountId: accountA, modelId: id })).toBe(1);
    expect((await a.del(`/models/${id}`)).status).toBe(204);
    expect((await predictOne(id)).status).toBe(404); // deleted here: at once, whatever the cache held
    expect(await db.collection('model_artifacts').countDocuments({ accountId: accountA, $or: [{ _id: id as never }, { modelId: id }] })).toBe(0);
    expect(await db.collection('model_versions').countDocuments({ accountId: accountA, modelId: id })).toBe(0);
  });
});
