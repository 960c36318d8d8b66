import { isId, newId, predictBody, type CallerContext, type MetricsDto, type PredictBody } from '@dap/contracts';
import { AppError, parseOr400 } from '@dap/http';
import type { Logger } from '@dap/logger';
import type { PredictionLogRepository, WindowCounts } from '../persistence/prediction-log.repository.ts';
import type { PredictJob, PredictJobResult } from '../predict.worker.ts';
import type { WorkerPool } from '../workers/worker-pool.ts';
import type { ModelCatalog } from './catalog.ts';
import { invalidBody, invalidInputs, modelHasNoRuntime, modelNotFound, modelNotReady, nonFiniteOutput } from './errors.ts';
import { predictionCompleted } from './events.ts';
import type { ModelRecord } from './model.ts';
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
  timing: { validateMs: number; modelMs: number; logMs: number };
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

  constructor(opts: {
    catalog: ModelCatalog;
    versions: ModelVersions;
    predictionLog: PredictionLogRepository;
    logger: Logger;
    metricsMaxSamples: number;
    offload?: Offload | null;
    drift?: DriftSettings;
  }) {
    this.catalog = opts.catalog;
    this.versions = opts.versions;
    this.log = opts.predictionLog;
    this.logger = opts.logger;
    this.metricsMaxSamples = opts.metricsMaxSamples;
    this.offload = opts.offload ?? null;
    this.drift = opts.drift ?? { samplePerRequest: 20, maxInputs: 5000 };
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
    const latest = await this.get(caller.accountId, id);
    const started = performance.now();
    let parsed: PredictBody | null = null;
    let bodyError: unknown = null;
    try {
      parsed = parseOr400(predictBody, body, 'body');
    } catch (err) {
      bodyError = err;
    }
    const { model, alias } = await this.versions.resolve(caller.accountId, latest, parsed ?? {});
    const predictionId = newId('prd');
    if (bodyError || !parsed) {
      await this.logFailure(caller, model, predictionId, inputCount(body), ms(started), bodyError);
      throw bodyError;
    }
    if (model.status !== 'ready') throw modelNotReady(model.status);
    const found = this.catalog.runtimeOf(caller.accountId, model);
    const runtime = found instanceof Promise ? await found : found;
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
    return { id: predictionId, model, alias, predictions, latencyMs, timing: { validateMs, modelMs: latencyMs, logMs: ms(logStart) } };
  }

  /** Metrics of one version (by default the one `production` points at): serving and drift count only its requests. */
  async metrics(accountId: string, id: string, selector: VersionSelector = {}, now = new Date()): Promise<MetricsDto> {
    const { model } = await this.versions.resolve(accountId, await this.get(accountId, id), selector);
    const hourAgo = new Date(now.getTime() - HOUR_MS);
    const dayAgo = new Date(now.getTime() - DAY_MS);
    const cap = this.metricsMaxSamples;
    const profile = model.kind === 'trained' ? model.profile : null;
    const [day, hour, recent, logged] = await Promise.all([
      this.log.counts(accountId, model.id, model.version, dayAgo),
      this.log.counts(accountId, model.id, model.version, hourAgo),
      this.log.latencies(accountId, model.id, model.version, dayAgo, cap),
      profile ? this.log.samples(accountId, model.id, model.version, dayAgo, this.drift.maxInputs) : null,
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
    const errorCode = err instanceof AppError ? err.code : 'internal';
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
