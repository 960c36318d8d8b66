import { createModelBody, newId, type CallerContext, type Column, type RetrainModelBody, type TrainModelBody } from '@dap/contracts';
import type { DatasetFiles } from '@dap/datasets';
import { parseOrInvalid, type FieldError } from '@dap/errors';
import type { SourceProjection, SourceProjectionRepository } from '@dap/mongo';
import type { ModelVersionRepository } from '../persistence/model-version.repository.ts';
import { recordOf, type ModelDoc, type ModelLease, type ModelRepository } from '../persistence/model.repository.ts';
import {
  builtinNotVersioned,
  invalidBody,
  modelNotFound,
  notRetrainable,
  retrainRaced,
  sourceNotFound,
  sourceNotReady,
  stillTraining,
  trainingAtCapacity,
  trainingUnavailable,
} from './errors.ts';
import { DEFAULT_ALIASES, type ModelFeature, type ModelRecord } from './model.ts';
import type { FeatureProfile } from './training/drift.ts';
import type { Encoder, FeatureColumn, FeatureKind } from './training/encoding.ts';
import { TASK_OF } from './training/trained-model.ts';
import type { TrainingSpec } from './training/train.ts';

const FRESH_SOURCE_MS = 30_000;
const FRESH_SOURCE_WAIT_MS = 3_000;
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The creation time (ms) in a prefixed ULID id, or null when it is not one. */
export function ulidTime(id: string): number | null {
  const ulid = id.slice(id.indexOf('_') + 1);
  if (ulid.length !== 26) return null;
  let ms = 0;
  for (const ch of ulid.slice(0, 10)) {
    const v = CROCKFORD.indexOf(ch);
    if (v < 0) return null;
    ms = ms * 32 + v;
  }
  return ms;
}

export interface TrainingSettings {
  /** A job running longer fails (its worker is stopped). */
  timeoutMs: number;
  /** Rows read per model at most (a deterministic sample beyond). */
  maxRows: number;
  /** Lease length: how soon another instance resumes the job of one that died. */
  leaseMs: number;
  /** Claims of one model before it fails as interrupted too often. */
  maxAttempts: number;
  /** Jobs this instance holds (queued or running) before `POST /models` answers 503. */
  maxJobs: number;
  maxClasses: number;
  silhouetteSample: number;
  duckdbMemoryLimit: string;
  /** Where the training worker's DuckDB spills (a writable volume); its own default when unset. */
  duckdbTempDir?: string;
  duckdbMaxTempSize?: string;
}

const TYPE_NAMES: Record<TrainModelBody['type'], string> = {
  linear_regression: 'Linear regression',
  logistic_regression: 'Logistic regression',
  random_forest_classifier: 'Random forest classifier',
  random_forest_regressor: 'Random forest regressor',
  kmeans: 'k-means clustering',
};

const OUTPUTS: Record<TrainModelBody['type'], string> = {
  linear_regression: 'Each prediction is {prediction} (a number).',
  random_forest_regressor: 'Each prediction is {prediction} (a number: the mean of the trees).',
  logistic_regression: 'Each prediction is {prediction, probabilities}: the most likely class and every class’s probability.',
  random_forest_classifier: 'Each prediction is {prediction, probabilities}: the class with the highest mean tree vote share, and the shares.',
  kmeans: 'Each prediction is {cluster, distance}: the nearest centroid’s index and the distance to it (standardised units).',
};

function kindOf(type: Column['type']): FeatureKind {
  return type === 'string' ? 'categorical' : type === 'boolean' ? 'boolean' : 'numeric';
}

function describeFeature(type: string, profile: FeatureProfile | undefined): string {
  if (!profile) return `${type}; null when missing`;
  if (profile.kind === 'categorical') {
    const shown = profile.categories
      .slice(0, 10)
      .map((c) => JSON.stringify(c))
      .join(', ');
    const more = profile.categories.length > 10 ? ` and ${profile.categories.length - 10} more` : '';
    return `${type}; a category, one of ${shown}${more} in training (other values and null share one encoding)`;
  }
  if (profile.min === null) return `${type}; no training values (null when missing)`;
  const range = profile.kind === 'boolean' ? '' : `; training range ${profile.min} to ${profile.max}, mean ${profile.mean}`;
  return `${type}${range}; null when missing (replaced by the training mean)`;
}

/**
 * The features of a trained model as clients see them: described from the training profile, with the
 * categories the encoder kept (so a client can offer exactly those) and the numbers' training range.
 */
export function trainedFeatures(features: readonly ModelFeature[], profile: readonly FeatureProfile[], encoder: Encoder): ModelFeature[] {
  return features.map((f) => {
    const p = profile.find((x) => x.name === f.name);
    const enc = encoder.features.find((x) => x.name === f.name);
    const out: ModelFeature = { name: f.name, type: f.type, description: describeFeature(f.type, p) };
    if (enc?.kind === 'categorical') out.categories = enc.categories;
    else if (p && p.kind !== 'categorical') out.range = { min: p.min, max: p.max, mean: p.mean };
    return out;
  });
}

/** What runs recorded training jobs on this instance (workers/training-jobs.ts). */
export interface TrainingRunner {
  /** This process, as a lease holder. */
  readonly owner: string;
  /** Jobs held here (queued or running). */
  readonly active: number;
  launch(accountId: string, modelId: string): void;
  cancel(modelId: string): void;
}

/**
 * Training from a source: checks the request against the source's schema (from the `sources.events`
 * projection) and records the model as training, leased to this instance's runner, which runs the job. Where
 * this instance has no training workers, the lease starts lapsed, and an instance that has them claims it.
 */
export class TrainingService {
  private readonly models: ModelRepository;
  private readonly versions: ModelVersionRepository;
  private readonly sources: SourceProjectionRepository;
  private readonly datasets: DatasetFiles | null;
  private readonly runner: TrainingRunner | null;
  private readonly settings: Pick<TrainingSettings, 'leaseMs' | 'maxJobs'>;

  constructor(opts: {
    models: ModelRepository;
    versions: ModelVersionRepository;
    sources: SourceProjectionRepository;
    datasets: DatasetFiles | null;
    /** Null where this instance has no training workers: its jobs wait, lease lapsed, for one that has. */
    runner: TrainingRunner | null;
    settings: Pick<TrainingSettings, 'leaseMs' | 'maxJobs'>;
  }) {
    this.models = opts.models;
    this.versions = opts.versions;
    this.sources = opts.sources;
    this.datasets = opts.datasets;
    this.runner = opts.runner;
    this.settings = opts.settings;
  }

  /** Stops this instance's job for a model (it is being deleted). */
  cancel(modelId: string): void {
    this.runner?.cancel(modelId);
  }

  async create(caller: CallerContext, body: TrainModelBody): Promise<ModelRecord> {
    const { spec, types } = await this.checkJob(caller.accountId, body);
    const now = new Date();
    const id = newId('mdl');
    const target = 'target' in body ? body.target : null;
    const doc: Omit<ModelDoc, 'accountId'> = {
      _id: id,
      name: body.name,
      type: body.type,
      kind: 'trained',
      status: 'training',
      version: 1,
      description:
        body.description ??
        `${TYPE_NAMES[body.type]}${target ? ` predicting ${JSON.stringify(target)}` : ''} from ${body.features.length} feature(s) of source ${body.sourceId}. ${OUTPUTS[body.type]}`,
      features: body.features.map((name) => ({ name, type: types.get(name)!, description: `${types.get(name)!}; described once trained` })),
      createdAt: now,
      updatedAt: now,
      error: null,
      training: { sourceId: body.sourceId, target, features: body.features, hyperparameters: body.hyperparameters, rows: null, startedAt: now, finishedAt: null, durationMs: null },
      evaluation: null,
      profile: null,
      spec,
      requestId: caller.requestId,
      lease: this.newLease(now),
      aliases: { ...DEFAULT_ALIASES },
    };
    await this.models.insert(caller.accountId, doc);
    this.runner?.launch(caller.accountId, id);
    return recordOf({ ...doc, accountId: caller.accountId });
  }

  /**
   * Trains version n+1 of a model on its source's current data, with the same target and features (and
   * the given hyperparameters, else the previous ones). Version n is copied to `model_versions` first, so
   * a crash between the two writes leaves a harmless duplicate, never a lost version; the aliases keep
   * pointing where they did, so `production` serves on while the new version trains.
   */
  async retrain(caller: CallerContext, id: string, body: RetrainModelBody): Promise<ModelRecord> {
    const doc = await this.models.findDoc(caller.accountId, id);
    if (!doc) throw modelNotFound();
    if (doc.kind !== 'trained' || !doc.training) throw doc.kind === 'builtin' ? builtinNotVersioned() : notRetrainable();
    if (doc.status === 'training') throw stillTraining(doc.version);
    const t = doc.training;
    const trainBody = parseOrInvalid(
      createModelBody,
      {
        type: doc.type,
        name: doc.name,
        sourceId: t.sourceId,
        ...(t.target !== null ? { target: t.target } : {}),
        features: t.features,
        hyperparameters: body.hyperparameters ?? t.hyperparameters,
      },
      'body',
    ) as TrainModelBody;
    const { spec, types } = await this.checkJob(caller.accountId, trainBody);
    const now = new Date();
    await this.versions.snapshot(doc);
    const started = await this.models.startVersion(caller.accountId, id, doc.version, {
      status: 'training',
      error: null,
      features: trainBody.features.map((name) => ({ name, type: types.get(name)!, description: `${types.get(name)!}; described once trained` })),
      training: { ...t, hyperparameters: trainBody.hyperparameters, rows: null, startedAt: now, finishedAt: null, durationMs: null },
      evaluation: null,
      profile: null,
      spec,
      requestId: caller.requestId,
      lease: this.newLease(now),
      aliases: { ...(doc.aliases ?? DEFAULT_ALIASES) },
    });
    if (!started) throw retrainRaced();
    this.runner?.launch(caller.accountId, id);
    return recordOf(started);
  }

  /** The checks every job passes before it is recorded: the source, the columns, this instance's capacity. */
  private async checkJob(accountId: string, body: TrainModelBody): Promise<{ spec: TrainingSpec; types: Map<string, Column['type']> }> {
    if (!this.datasets) throw trainingUnavailable();
    const source = await this.freshSource(accountId, body.sourceId);
    if (!source || source.deleted) throw sourceNotFound();
    if (source.status !== 'ready') throw sourceNotReady(source.status);
    const spec = specOf(body, source.schema);
    if (this.runner && this.runner.active >= this.settings.maxJobs) {
      throw trainingAtCapacity();
    }
    return { spec, types: new Map(source.schema.map((c) => [c.name, c.type])) };
  }

  /** Without training workers here the lease starts lapsed, so an instance that has them claims it. */
  private newLease(now: Date): ModelLease {
    return this.runner ? { owner: this.runner.owner, until: new Date(now.getTime() + this.settings.leaseMs), attempts: 1 } : { owner: null, until: new Date(0), attempts: 0 };
  }

  /**
   * The source as the projection knows it. The projection follows `sources.events`, a moment behind the
   * sources service: a source created in the last half minute whose data is written but which is unknown
   * or still pending here is waited for briefly, so "create a source, see it ready, train on it" works
   * without a retry loop.
   */
  private async freshSource(accountId: string, sourceId: string): Promise<SourceProjection | null> {
    let source = await this.sources.find(accountId, sourceId);
    const createdAt = ulidTime(sourceId);
    if (source && source.status !== 'pending') return source;
    if (createdAt === null || Date.now() - createdAt > FRESH_SOURCE_MS) return source;
    // Worth waiting for only when the sources service has already written the data (so any random id is
    // answered at once): its file is in the shared dataset store before the event is published.
    if (!this.datasets || !(await this.datasets.currentFile(accountId, sourceId))) return source;
    const deadline = Date.now() + FRESH_SOURCE_WAIT_MS;
    while (Date.now() < deadline && (!source || source.status === 'pending')) {
      await new Promise((r) => setTimeout(r, 100));
      source = await this.sources.find(accountId, sourceId);
    }
    return source;
  }
}

/** Builds the worker's spec, or a 400 naming each bad field. Exported for tests. */
export function specOf(body: TrainModelBody, schema: readonly Column[]): TrainingSpec {
  const columns = new Map(schema.map((c) => [c.name, c.type]));
  const known =
    schema
      .slice(0, 30)
      .map((c) => c.name)
      .join(', ') + (schema.length > 30 ? ', …' : '');
  const errors: FieldError[] = [];
  const target = 'target' in body ? body.target : null;
  const task = TASK_OF[body.type];
  const features: FeatureColumn[] = [];
  body.features.forEach((name, i) => {
    const type = columns.get(name);
    if (!type) errors.push({ path: `features.${i}`, message: `the source has no column ${JSON.stringify(name)}; its columns are ${known}` });
    else if (name === target) errors.push({ path: `features.${i}`, message: 'the target cannot also be a feature' });
    else if (type === 'timestamp') errors.push({ path: `features.${i}`, message: 'timestamp columns cannot be features; add a numeric column (e.g. epoch seconds) to the source' });
    else features.push({ name, kind: kindOf(type) });
  });
  let targetColumn: FeatureColumn | null = null;
  if (target !== null) {
    const type = columns.get(target);
    if (!type) errors.push({ path: 'target', message: `the source has no column ${JSON.stringify(target)}; its columns are ${known}` });
    else if (task === 'regression' && type !== 'integer' && type !== 'number')
      errors.push({ path: 'target', message: `a regression target must be numeric (integer or number); ${JSON.stringify(target)} is ${type}` });
    else if (task === 'classification' && !['string', 'integer', 'boolean'].includes(type)) {
      errors.push({ path: 'target', message: `class labels must be strings, integers or booleans; ${JSON.stringify(target)} is ${type} (use a regression type for numbers)` });
    } else targetColumn = { name: target, kind: kindOf(type) };
  }
  if (errors.length) throw invalidBody(errors);
  // The body's hyperparameters are complete (zod filled the defaults); the union narrows by type.
  return { type: body.type, target: targetColumn, features, hyperparameters: body.hyperparameters } as TrainingSpec;
}
