import { newId, SCOPES, type CallerContext } from '@dap/contracts';
import { DomainError } from '@dap/errors';
import { createLogger } from '@dap/logger';
import type { PredictionLogDoc, PredictionLogRepository, WindowCounts } from '../persistence/prediction-log.repository.ts';
import type { ModelRepository } from '../persistence/model.repository.ts';
import { BUILTIN_MODELS, FORECAST_MODEL_ID } from './builtin/index.ts';
import { ModelCatalog } from './catalog.ts';
import { ModelsService } from './models.service.ts';
import { ModelVersions } from './versions.service.ts';
import type { ModelVersionRepository } from '../persistence/model-version.repository.ts';

/** An in-memory prediction log with the repository's semantics (per account and model, newest first, capped). */
function memoryLog() {
  const docs: PredictionLogDoc[] = [];
  const repo = {
    record: async (accountId: string, entry: Omit<PredictionLogDoc, 'accountId'>) => void docs.push({ ...entry, accountId }),
    flush: async () => true,
    counts: async (accountId: string, modelId: string, version: number, since: Date): Promise<WindowCounts> => {
      const rows = docs.filter((d) => d.accountId === accountId && d.modelId === modelId && d.modelVersion === version && d.at >= since);
      return { count: rows.length, errors: rows.filter((d) => !d.ok).length, inputs: rows.filter((d) => d.ok).reduce((s, d) => s + d.count, 0) };
    },
    latencies: async (accountId: string, modelId: string, version: number, since: Date, cap: number) =>
      docs
        .filter((d) => d.accountId === accountId && d.modelId === modelId && d.modelVersion === version && d.at >= since && d.ok)
        .sort((x, y) => y.at.getTime() - x.at.getTime())
        .slice(0, cap)
        .map((d) => ({ at: d.at, latencyMs: d.latencyMs })),
  };
  return { docs, repo: repo as unknown as PredictionLogRepository };
}

const logger = createLogger({ name: 'models-test', level: 'silent' });
const caller = (accountId: string): CallerContext => ({ accountId, plan: 'starter', scopes: [...SCOPES], requestId: newId('req'), issuedAt: Date.now() });
const noModels = { findById: async () => null, list: async () => [] } as unknown as ModelRepository;
// Every model here is at its only version, which resolving answers without reading earlier versions.
const versions = new ModelVersions({ models: noModels, versions: {} as ModelVersionRepository });

function serviceWith(cap: number) {
  const log = memoryLog();
  const service = new ModelsService({
    catalog: new ModelCatalog({ repository: noModels, builtins: BUILTIN_MODELS }),
    versions,
    predictionLog: log.repo,
    logger,
    metricsMaxSamples: cap,
  });
  return { log, service };
}

const entry = (accountId: string, at: Date, latencyMs: number, ok = true): PredictionLogDoc => ({
  _id: newId('prd'),
  accountId,
  modelId: FORECAST_MODEL_ID,
  modelVersion: 1,
  ok,
  count: 1,
  latencyMs,
  errorCode: ok ? null : 'validation_failed',
  at,
});

describe('ModelsService', () => {
  const now = new Date('2026-03-01T12:00:00.000Z');
  const minutesAgo = (m: number) => new Date(now.getTime() - m * 60_000);

  it('splits serving metrics into the last hour and the last day', async () => {
    const { log, service } = serviceWith(1000);
    const acct = newId('acct');
    log.docs.push(entry(acct, minutesAgo(5), 1), entry(acct, minutesAgo(30), 3), entry(acct, minutesAgo(50), 0, false));
    log.docs.push(entry(acct, minutesAgo(120), 10), entry(acct, minutesAgo(600), 20), entry(acct, minutesAgo(60 * 25), 99));
    const m = await service.metrics(acct, FORECAST_MODEL_ID, {}, now);
    expect(m.serving.lastHour).toEqual({ count: 3, errors: 1, errorRate: 1 / 3, inputs: 2, latencyMs: { p50: 2, p95: 2.9, p99: 2.98 }, sampled: false });
    expect(m.serving.lastDay).toMatchObject({ count: 5, errors: 1, inputs: 4, latencyMs: { p50: 6.5 }, sampled: false });
    expect(m.generatedAt).toBe(now.toISOString());
  });

  it('marks percentiles as sampled when the cap cuts the window, counting exactly all the same', async () => {
    const { log, service } = serviceWith(3);
    const acct = newId('acct');
    for (let i = 0; i < 5; i++) log.docs.push(entry(acct, minutesAgo(10 + i), i + 1)); // in the last hour
    log.docs.push(entry(acct, minutesAgo(300), 50));
    const m = await service.metrics(acct, FORECAST_MODEL_ID, {}, now);
    expect(m.serving.lastHour).toMatchObject({ count: 5, sampled: true, latencyMs: { p50: 2 } }); // the newest 3: 1, 2, 3
    expect(m.serving.lastDay).toMatchObject({ count: 6, sampled: true });

    const { log: log2, service: service2 } = serviceWith(3);
    for (let i = 0; i < 2; i++) log2.docs.push(entry(acct, minutesAgo(10 + i), 1));
    for (let i = 0; i < 3; i++) log2.docs.push(entry(acct, minutesAgo(200 + i), 1));
    const m2 = await service2.metrics(acct, FORECAST_MODEL_ID, {}, now);
    expect(m2.serving.lastHour.sampled).toBe(false); // the cap was hit only beyond the hour
    expect(m2.serving.lastDay.sampled).toBe(true);
  });

  it('logs a successful prediction with its event and a failed one as an error without an event', async () => {
    const { log, service } = serviceWith(1000);
    const acct = newId('acct');
    const ok = await service.predict(caller(acct), FORECAST_MODEL_ID, { inputs: [{ series: [1, 2, 3], horizon: 2 }] });
    expect(ok.predictions).toHaveLength(1);
    await expect(service.predict(caller(acct), FORECAST_MODEL_ID, { inputs: [{ series: [1, 2, 3], horizon: 0 }, {}] })).rejects.toMatchObject({
      code: 'validation_failed',
      errors: [{ path: 'inputs.0.horizon' }, { path: 'inputs.1.series' }],
    });
    expect(log.docs.map((d) => [d.ok, d.count, d.errorCode])).toEqual([
      [true, 1, null],
      [false, 2, 'validation_failed'],
    ]);
    expect(log.docs[0]!._id).toBe(ok.id);
  });

  it('answers 422 naming the input when a model’s output overflows, instead of a prediction of null', async () => {
    const log = memoryLog();
    const model = { id: newId('mdl'), name: 'lr', type: 'linear_regression', kind: 'trained', status: 'ready', version: 1, description: '', features: [], createdAt: new Date() };
    const repository = { findById: async () => model, list: async () => [model] } as unknown as ModelRepository;
    const runtime = {
      validate: (inputs: readonly unknown[]) => ({ ok: true as const, inputs: inputs as { x: number }[] }),
      predict: (inputs: readonly { x: number }[]) => inputs.map((i) => ({ prediction: i.x * 1e300, parts: [i.x, { z: i.x * 1e300 - i.x * 1e300 }] })),
    };
    const service = new ModelsService({
      catalog: new ModelCatalog({ repository, builtins: [], runtimes: { runtimeFor: async () => runtime } }),
      versions,
      predictionLog: log.repo,
      logger,
      metricsMaxSamples: 100,
    });
    const acct = newId('acct');
    expect((await service.predict(caller(acct), model.id, { inputs: [{ x: 2 }] })).predictions).toEqual([{ prediction: 2e300, parts: [2, { z: 0 }] }]);
    await expect(service.predict(caller(acct), model.id, { inputs: [{ x: 1 }, { x: 1e10 }] })).rejects.toMatchObject({
      code: 'model_output_not_finite',
      errors: [{ path: 'inputs.1', message: expect.stringMatching(/not a finite number/) }],
    });
    expect(log.docs.map((d) => [d.ok, d.errorCode])).toEqual([
      [true, null],
      [false, 'model_output_not_finite'],
    ]);
  });

  it('answers before the shadow copy to the candidate starts, and records the copy afterwards', async () => {
    const log = memoryLog();
    const model = {
      ...{ id: newId('mdl'), name: 'lr', type: 'linear_regression', kind: 'trained', status: 'ready', version: 2, description: '', features: [], createdAt: new Date() },
      aliases: { production: 1, candidate: 2 },
      shadowShare: 1,
    };
    const repository = { findById: async () => model, list: async () => [model] } as unknown as ModelRepository;
    const v1 = { version: 1, status: 'ready', error: null, features: [], training: null, onnx: null, evaluation: null, profile: null };
    const versionsWithV1 = new ModelVersions({ models: repository, versions: { find: async () => v1 } as unknown as ModelVersionRepository });
    const calls: number[] = [];
    const runtimeFor = async (_: string, m: { version: number }) => ({
      validate: (inputs: readonly unknown[]) => ({ ok: true as const, inputs: inputs as { x: number }[] }),
      predict: (inputs: readonly { x: number }[]) => {
        calls.push(m.version);
        return inputs.map((i) => ({ prediction: i.x * m.version }));
      },
    });
    const draws = [0.5, 0.99];
    const service = new ModelsService({
      catalog: new ModelCatalog({ repository, builtins: [], runtimes: { runtimeFor } as never }),
      versions: versionsWithV1,
      predictionLog: log.repo,
      logger,
      metricsMaxSamples: 100,
      random: () => draws.shift()!,
    });
    const acct = newId('acct');
    const live = await service.predict(caller(acct), model.id, { inputs: [{ x: 3 }] });
    expect(live.predictions).toEqual([{ prediction: 3 }]);
    expect(live.model.version).toBe(1);
    expect(calls).toEqual([1]); // the live answer is back before the candidate ran
    await service.drainShadows();
    expect(calls).toEqual([1, 2]);
    expect(log.docs.map((d) => [d.modelVersion, d.shadow ?? null])).toEqual([
      [1, null],
      [2, { liveVersion: 1, livePredictionId: live.id, liveLatencyMs: live.latencyMs, compared: 1, agreed: null, absDiffSum: 3 }],
    ]);
    // A share of 0.9 and a draw of 0.99: this request is not copied.
    model.shadowShare = 0.9;
    await service.predict(caller(acct), model.id, { inputs: [{ x: 1 }] });
    await service.drainShadows();
    expect(calls).toEqual([1, 2, 1]);
  });

  it('answers 404 for malformed and unknown ids without logging', async () => {
    const { log, service } = serviceWith(1000);
    for (const id of ['nope', newId('mdl'), `${FORECAST_MODEL_ID}x`]) {
      const err = await service.predict(caller(newId('acct')), id, { inputs: [{ series: [1, 2, 3] }] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DomainError);
      expect((err as DomainError).code).toBe('model_not_found');
    }
    expect(log.docs).toHaveLength(0);
  });
});
