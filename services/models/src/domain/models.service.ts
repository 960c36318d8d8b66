import { isId, newId, predictBody, type CallerContext, type MetricsDto, type PredictBody } from '@dap/contracts';
import { DomainError, parseOrInvalid } from '@dap/errors';
import type { Logger } from '@dap/logger';
import type { PredictionLogRepository, ShadowComparison, ShadowRow, WindowCounts } from '../persistence/prediction-log.repository.ts';
import type { PredictJob, PredictJobResult } from '../workers/predict.worker.ts';
import type { WorkerPool } from '../workers/worker-pool.ts';
import type { ModelCatalog } from './catalog.ts';
import { ServingCache, type ServedModel } from './serving-cache.ts';
import { invalidBody, invalidInputs, modelHasNoRuntime, modelNotFound, modelNotReady, nonFiniteOutput } from './errors.ts';
import { predictionCompleted } from './events.ts';
import { CANDIDATE, PRODUCTION, type ModelRecord } from './model.ts';
import type { ModelRuntime, PredictionOutput } from './runtime.ts';
import { latencySummary } from './serving-stats.ts';
import type { ModelVersions, VersionSelector } from './versions.service.ts';
import { featureDrift } from './training/drift.ts';
import type { Scalar } from './training/encoding.ts';

export interface PredictionResult {
  id: string;
  /** The model as of the version that answered. */
  model: ModelRecord;
  /** The alias that chose that version; null when the request named a version. */
  alias: string | null;
  predictions: PredictionOutput[];
  latencyMs: number;
  /** Where the request's time went, for the Server-Timing header. */
  timing: { lookupMs: number; validateMs: number; modelMs: number; logMs: number };
}

export interface Offload {
  pool: WorkerPool<PredictJob, PredictJobResult>;
  /** Batches whose runtime cost reaches this run on a worker. */
  minCost: number;
}

export interface DriftSettings {
  /** Inputs of each request to a trained model logged for drift (spread evenly over the batch). */
  samplePerRequest: number;
  /** Logged inputs compared per metrics request, newest requests first. */
  maxInputs: number;
}

/** Up to `n` items spread evenly over the batch (all of a small one). */
export function evenSample<T>(items: readonly T[], n: number): T[] {
  if (items.length <= n) return items.slice();
  return Array.from({ length: n }, (_, i) => items[Math.floor((i * items.length) / n)]!);
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const ms = (from: number) => Math.round((performance.now() - from) * 1000) / 1000;

export class ModelsService {
  private readonly catalog: ModelCatalog;
  private readonly log: PredictionLogRepository;
  private readonly logger: Logger;
  private readonly metricsMaxSamples: number;
  private readonly offload: Offload | null;
  private readonly drift: DriftSettings;
  private readonly versions: ModelVersions;
  private readonly random: () => number;
  private readonly serving: ServingCache;
  /** Shadow runs started and not yet recorded (awaited by `drainShadows`, e.g. at shutdown and in tests). */
  private readonly shadows = new Set<Promise<void>>();

  constructor(opts: {
    catalog: ModelCatalog;
    versions: ModelVersions;
    predictionLog: PredictionLogRepository;
    logger: Logger;
    metricsMaxSamples: number;
    offload?: Offload | null;
    drift?: DriftSettings;
    /** Draws which live requests are copied to the candidate (injectable for tests). */
    random?: () => number;
    /** Own models as predict serves them; without one, every request reads the model. */
    serving?: ServingCache;
  }) {
    this.catalog = opts.catalog;
    this.random = opts.random ?? Math.random;
    this.versions = opts.versions;
    this.log = opts.predictionLog;
    this.logger = opts.logger;
    this.metricsMaxSamples = opts.metricsMaxSamples;
    this.offload = opts.offload ?? null;
    this.drift = opts.drift ?? { samplePerRequest: 20, maxInputs: 5000 };
    const versions = opts.versions;
    this.serving =
      opts.serving ??
      new ServingCache({
        source: { model: (accountId, id) => opts.catalog.get(accountId, id), version: (accountId, id, v) => versions.find(accountId, id, v) },
        ttlMs: 0,
        maxEntries: 1,
      });
  }

  /** A malformed id, an unknown id and another account's id all answer 404 alike. */
  async get(accountId: string, id: string): Promise<ModelRecord> {
    if (!isId('mdl', id)) throw modelNotFound();
    const model = await this.catalog.get(accountId, id);
    if (!model) throw modelNotFound();
    return model;
  }

  list(accountId: string, opts: { limit: number; before?: string }): Promise<ModelRecord[]> {
    return this.catalog.list(accountId, opts);
  }

  /**
   * Validates the body and each input against the model, runs it, and logs the request with its
   * `prediction.completed` event in one write. Invalid requests are logged too, as errors.
   */
  async predict(caller: CallerContext, id: string, body: unknown): Promise<PredictionResult> {
    const lookupStart = performance.now();
    const served = await this.served(caller.accountId, id, false);
    let lookupMs = ms(lookupStart);
    const started = performance.now();
    let parsed: PredictBody | null = null;
    let bodyError: unknown = null;
    try {
      parsed = parseOrInvalid(predictBody, body, 'body');
    } catch (err) {
      bodyError = err;
    }
    const targetStart = performance.now();
    const { latest, model, alias, runtime, version } = await this.target(caller.accountId, id, served, parsed ?? {});
    lookupMs += ms(targetStart);
    const predictionId = newId('prd');
    if (bodyError || !parsed) {
      await this.logFailure(caller, model, predictionId, inputCount(body), ms(started), bodyError);
      throw bodyError;
    }
    if (model.status !== 'ready') throw modelNotReady(model.status);
    if (!runtime) throw modelHasNoRuntime();

    let inputs: unknown[];
    try {
      if (parsed.explain && !runtime.explain) {
        throw invalidBody([{ path: 'explain', message: 'this model cannot explain its predictions; linear and logistic regression, random forests and the forecast model can' }]);
      }
      const validated = runtime.validate(parsed.inputs);
      if (!validated.ok) throw invalidInputs(validated.errors);
      inputs = validated.inputs;
    } catch (err) {
      await this.logFailure(caller, model, predictionId, inputCount(body), ms(started), err);
      throw err;
    }
    const validateMs = ms(started);

    const modelStart = performance.now();
    let predictions: PredictionOutput[];
    try {
      // Explanations run inline: they are for inspecting a few inputs, not for bulk scoring.
      predictions = parsed.explain && runtime.explain ? runtime.explain(inputs) : await this.run(model, runtime, inputs);
      const overflowed = predictions.findIndex(hasNonFinite);
      if (overflowed >= 0) throw nonFiniteOutput(overflowed);
    } catch (err) {
      await this.logFailure(caller, model, predictionId, inputs.length, ms(modelStart), err);
      throw err;
    }
    const latencyMs = ms(modelStart);

    const logStart = performance.now();
    const event = predictionCompleted(caller, { id: predictionId, modelId: model.id, count: inputs.length, latencyMs });
    const sample =
      model.kind === 'trained' && this.drift.samplePerRequest > 0
        ? { sample: evenSample(inputs as Record<string, unknown>[], this.drift.samplePerRequest).map((input) => model.features.map((f) => input[f.name] ?? null)) }
        : {};
    await this.log.record(
      caller.accountId,
      { _id: predictionId, modelId: model.id, modelVersion: model.version, ok: true, count: inputs.length, latencyMs, errorCode: null, at: new Date(), ...sample },
      [event],
    );
    this.maybeShadow(caller, latest, version, model, alias, { predictionId, inputs, predictions, latencyMs });
    return { id: predictionId, model, alias, predictions, latencyMs, timing: { lookupMs, validateMs, modelMs: latencyMs, logMs: ms(logStart) } };
  }

  /**
   * A model by id for predict: a built-in at once, an own model from the serving cache (`fresh`: read now).
   * A malformed, unknown or other account's id answers 404.
   */
  private async served(accountId: string, id: string, fresh: boolean): Promise<ServedModel> {
    if (!isId('mdl', id)) throw modelNotFound();
    const builtin = this.catalog.builtin(id);
    if (builtin) return { record: builtin, fresh: true, version: async () => null };
    const found = fresh ? await this.serving.read(accountId, id) : await this.serving.get(accountId, id);
    if (!found) throw modelNotFound();
    return found;
  }

  /**
   * The version a request selects and, when it is ready, its runtime. A cached model that cannot answer
   * (unknown version or alias, not ready, no runtime) is read again before the request is refused, so a
   * refusal is never due to the cache; only a version that can answer may be up to the cache's age old.
   */
  private async target(
    accountId: string,
    id: string,
    served: ServedModel,
    selector: VersionSelector,
  ): Promise<{ latest: ModelRecord; model: ModelRecord; alias: string | null; runtime: ModelRuntime | null; version: ServedModel['version'] }> {
    for (;;) {
      try {
        const { model, alias } = await this.versions.resolve(accountId, served.record, selector, served.version);
        let runtime: ModelRuntime | null = null;
        if (model.status === 'ready') {
          const found = this.catalog.runtimeOf(accountId, model);
          runtime = found instanceof Promise ? await found : found;
        }
        if (runtime || served.fresh) return { latest: served.record, model, alias, runtime, version: served.version };
      } catch (err) {
        if (served.fresh) throw err;
      }
      served = await this.served(accountId, id, true);
    }
  }

  /** Metrics of one version (by default the one `production` points at): serving and drift count only its requests. */
  async metrics(accountId: string, id: string, selector: VersionSelector = {}, now = new Date()): Promise<MetricsDto> {
    await this.log.flush(); // this instance's predictions answered so far are counted
    const { model } = await this.versions.resolve(accountId, await this.get(accountId, id), selector);
    const hourAgo = new Date(now.getTime() - HOUR_MS);
    const dayAgo = new Date(now.getTime() - DAY_MS);
    const cap = this.metricsMaxSamples;
    const profile = model.kind === 'trained' ? model.profile : null;
    const [day, hour, recent, logged, shadowRows] = await Promise.all([
      this.log.counts(accountId, model.id, model.version, dayAgo),
      this.log.counts(accountId, model.id, model.version, hourAgo),
      this.log.latencies(accountId, model.id, model.version, dayAgo, cap),
      profile ? this.log.samples(accountId, model.id, model.version, dayAgo, this.drift.maxInputs) : null,
      model.kind === 'trained' ? this.log.shadowRows(accountId, model.id, model.version, dayAgo, cap) : [],
    ]);
    // Newest first and capped: the day is sampled when the cap was hit; the hour only if the cap was hit
    // before reaching an hour back.
    const daySampled = recent.length >= cap;
    const hourRows = recent.filter((r) => r.at >= hourAgo);
    const hourSampled = daySampled && hourRows.length === recent.length;
    return {
      modelId: model.id,
      modelVersion: model.version,
      evaluation: this.catalog.evaluationOf(model),
      serving: {
        lastHour: servingWindow(hour, hourRows, hourSampled),
        lastDay: servingWindow(day, recent, daySampled),
      },
      shadow: shadowSummary(shadowRows, cap),
      drift:
        profile && logged
          ? {
              window: 'P1D',
              inputs: logged.inputs.length,
              sampled: logged.sampled,
              features: profile.map((p) => {
                const at = model.features.findIndex((f) => f.name === p.name);
                return featureDrift(
                  p,
                  logged.inputs.map((values) => (values[at] ?? null) as Scalar),
                );
              }),
            }
          : null,
      generatedAt: now.toISOString(),
    };
  }

  /** Waits for the shadow runs in flight. */
  async drainShadows(): Promise<void> {
    while (this.shadows.size) await Promise.all([...this.shadows]);
  }

  /**
   * Copies a live request answered by `production` to the `candidate` version, for the configured share
   * of requests. It starts on the next turn of the event loop (after the live answer is written), its
   * answer is only recorded and compared, and its failures are recorded, never thrown.
   */
  private maybeShadow(
    caller: CallerContext,
    latest: ModelRecord,
    find: ServedModel['version'],
    live: ModelRecord,
    alias: string | null,
    run: { predictionId: string; inputs: unknown[]; predictions: PredictionOutput[]; latencyMs: number },
  ): void {
    const share = latest.shadowShare ?? 0;
    const candidate = latest.aliases?.[CANDIDATE];
    if (alias !== PRODUCTION || live.kind !== 'trained' || !(share > 0) || candidate === undefined || candidate === live.version) return;
    if (this.random() >= share) return;
    const done = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.shadow(caller, latest, find, live, candidate, run))
      .catch((err: unknown) => this.logger.warn({ err, modelId: live.id, requestId: caller.requestId }, 'could not record a shadow prediction'))
      .finally(() => this.shadows.delete(done));
    this.shadows.add(done);
  }

  private async shadow(
    caller: CallerContext,
    latest: ModelRecord,
    find: ServedModel['version'],
    live: ModelRecord,
    version: number,
    run: { predictionId: string; inputs: unknown[]; predictions: PredictionOutput[]; latencyMs: number },
  ): Promise<void> {
    const { model } = await this.versions.resolve(caller.accountId, latest, { version }, find);
    if (model.status !== 'ready') return;
    const found = this.catalog.runtimeOf(caller.accountId, model);
    const runtime = found instanceof Promise ? await found : found;
    if (!runtime) return;
    const base = { liveVersion: live.version, livePredictionId: run.predictionId, liveLatencyMs: run.latencyMs };
    const started = performance.now();
    let outputs: PredictionOutput[] | null;
    let errorCode: string | null = null;
    try {
      const validated = runtime.validate(run.inputs);
      if (!validated.ok) throw invalidInputs(validated.errors);
      outputs = await runtime.predict(validated.inputs);
      const overflowed = outputs.findIndex(hasNonFinite);
      if (overflowed >= 0) throw nonFiniteOutput(overflowed);
    } catch (err) {
      errorCode = err instanceof DomainError ? err.code : 'internal';
      outputs = null;
    }
    const latencyMs = ms(started);
    const shadow: ShadowComparison = outputs ? { ...base, ...compareOutputs(run.predictions, outputs) } : { ...base, compared: 0, agreed: null, absDiffSum: null };
    await this.log.record(caller.accountId, {
      _id: newId('prd'),
      modelId: model.id,
      modelVersion: model.version,
      ok: outputs !== null,
      count: run.inputs.length,
      latencyMs,
      errorCode,
      at: new Date(),
      shadow,
    });
  }

  /** Small batches run inline (fastest); large built-in batches go to a worker thread. */
  private run(model: ModelRecord, runtime: ModelRuntime, inputs: unknown[]): PredictionOutput[] | Promise<PredictionOutput[]> {
    const offload = this.offload;
    if (offload && offload.pool.size > 0 && model.kind === 'builtin' && (runtime.cost?.(inputs) ?? 0) >= offload.minCost) {
      return offload.pool.run({ kind: 'builtin', modelId: model.id, inputs }).then((r) => {
        if (r.kind !== 'builtin') throw new Error('unexpected worker answer');
        return r.outputs;
      });
    }
    return runtime.predict(inputs);
  }

  /** Records a failed request; a failure to record is logged and never hides the request's own error. */
  private async logFailure(caller: CallerContext, model: ModelRecord, predictionId: string, count: number, latencyMs: number, err: unknown): Promise<void> {
    const errorCode = err instanceof DomainError ? err.code : 'internal';
    try {
      await this.log.record(caller.accountId, {
        _id: predictionId,
        modelId: model.id,
        modelVersion: model.version,
        ok: false,
        count,
        latencyMs,
        errorCode,
        at: new Date(),
      });
    } catch (logErr) {
      this.logger.warn({ err: logErr, requestId: caller.requestId }, 'could not record a failed prediction');
    }
  }
}

function inputCount(body: unknown): number {
  const inputs = (body as { inputs?: unknown } | null)?.inputs;
  return Array.isArray(inputs) ? inputs.length : 0;
}

function servingWindow(counts: WindowCounts, rows: readonly { latencyMs: number }[], sampled: boolean): MetricsDto['serving']['lastDay'] {
  return {
    count: counts.count,
    errors: counts.errors,
    errorRate: counts.count ? counts.errors / counts.count : 0,
    inputs: counts.inputs,
    latencyMs: latencySummary(rows.map((r) => r.latencyMs)),
    sampled,
  };
}

/** NaN or ±Infinity anywhere in an output (JSON would turn it into a silent null). */
function hasNonFinite(v: unknown): boolean {
  if (typeof v === 'number') return !Number.isFinite(v);
  if (Array.isArray(v)) return v.some(hasNonFinite);
  if (v !== null && typeof v === 'object') return Object.values(v).some(hasNonFinite);
  return false;
}

/** Per input: the same class or cluster (classifiers, k-means), or the absolute difference (regressors). */
export function compareOutputs(live: readonly PredictionOutput[], shadow: readonly PredictionOutput[]): Pick<ShadowComparison, 'compared' | 'agreed' | 'absDiffSum'> {
  let agreed: number | null = null;
  let absDiffSum: number | null = null;
  const n = Math.min(live.length, shadow.length);
  for (let i = 0; i < n; i++) {
    const l = live[i] as Record<string, unknown>;
    const s = shadow[i] as Record<string, unknown>;
    if ('cluster' in l || 'probabilities' in l) {
      const key = 'cluster' in l ? 'cluster' : 'prediction';
      agreed = (agreed ?? 0) + (l[key] === s[key] ? 1 : 0);
    } else if (typeof l.prediction === 'number' && typeof s.prediction === 'number') {
      absDiffSum = (absDiffSum ?? 0) + Math.abs(s.prediction - l.prediction);
    }
  }
  return { compared: n, agreed, absDiffSum };
}

function shadowSummary(rows: readonly ShadowRow[], cap: number): MetricsDto['shadow'] {
  if (!rows.length) return null;
  const ok = rows.filter((r) => r.ok);
  const compared = ok.reduce((s, r) => s + r.shadow.compared, 0);
  const agreedRows = ok.filter((r) => r.shadow.agreed !== null);
  const diffRows = ok.filter((r) => r.shadow.absDiffSum !== null);
  const sum = (xs: readonly ShadowRow[], f: (r: ShadowRow) => number) => xs.reduce((s, r) => s + f(r), 0);
  return {
    window: 'P1D',
    comparedWith: rows[0]!.shadow.liveVersion,
    requests: rows.length,
    errors: rows.length - ok.length,
    inputs: sum(ok, (r) => r.count),
    agreement: agreedRows.length && compared ? sum(agreedRows, (r) => r.shadow.agreed!) / sum(agreedRows, (r) => r.shadow.compared) : null,
    meanAbsoluteDifference: diffRows.length ? sum(diffRows, (r) => r.shadow.absDiffSum!) / sum(diffRows, (r) => r.shadow.compared) : null,
    latencyMs: latencySummary(ok.map((r) => r.latencyMs)),
    productionLatencyMs: latencySummary(ok.map((r) => r.shadow.liveLatencyMs)),
    sampled: rows.length >= cap,
  };
}
