import { randomUUID } from 'node:crypto';
import { gzip } from 'node:zlib';
import { promisify } from 'node:util';
import { readCurrentFile, type DatasetFiles } from '@dap/datasets';
import type { Logger } from '@dap/logger';
import { modelFailed, modelReady } from '../domain/events.ts';
import { trainedFeatures, type TrainingRunner, type TrainingSettings } from '../domain/training.service.ts';
import { TrainingError } from '../domain/training/train.ts';
import { MAX_ARTIFACT_BYTES, type ArtifactRepository } from '../persistence/artifact.repository.ts';
import type { ModelLease, ModelRepository } from '../persistence/model.repository.ts';
import type { TrainJob, TrainJobResult } from './train.worker.ts';
import { WorkerJobError, WorkerTimeoutError, type WorkerPool } from './worker-pool.ts';

const gzipAsync = promisify(gzip);

export interface TrainingJobsDeps {
  models: ModelRepository;
  artifacts: ArtifactRepository;
  datasets: DatasetFiles;
  pool: WorkerPool<TrainJob, TrainJobResult>;
  logger: Logger;
  settings: TrainingSettings;
}

/**
 * The training jobs of this instance. Each runs on a training worker thread and renews the model's lease
 * while it runs. On success the artifact is stored, then the model turns ready with `model.ready` in the
 * same write; on failure it turns failed with `model.failed`. `sweep` claims the jobs whose lease lapsed
 * (their instance died) and runs them here.
 */
export class TrainingJobs implements TrainingRunner {
  private readonly deps: TrainingJobsDeps;
  /** This process, as a lease holder. */
  readonly owner = randomUUID();
  private readonly jobs = new Map<string, { accountId: string; abort: AbortController; done: Promise<void> }>();
  private sweeping = false;
  private stopped = false;

  constructor(deps: TrainingJobsDeps) {
    this.deps = deps;
  }

  /** Jobs held by this instance (queued or running). */
  get active(): number {
    return this.jobs.size;
  }

  /** Stops this instance's job for a model (it is being deleted). */
  cancel(modelId: string): void {
    this.jobs.get(modelId)?.abort.abort();
  }

  /** Cancels this instance's jobs and hands their leases back, so the next instance resumes them at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    const jobs = [...this.jobs.entries()];
    for (const [, job] of jobs) job.abort.abort();
    await Promise.all(jobs.map(([, job]) => job.done));
    await Promise.all(
      jobs.map(([id, job]) =>
        this.deps.models.releaseLease(job.accountId, id, this.owner).catch((err) => this.deps.logger.warn({ err, modelId: id }, 'could not release a training lease')),
      ),
    );
  }

  /** Claims lapsed training jobs, up to this instance's free capacity (run by training-sweep.ts). */
  async sweep(): Promise<void> {
    if (this.sweeping || this.stopped) return;
    this.sweeping = true;
    try {
      const capacity = this.deps.settings.maxJobs - this.jobs.size;
      if (capacity <= 0) return;
      const now = new Date();
      for (const lapsed of await this.deps.models.lapsedTrainings(now, capacity)) {
        if (this.stopped) return;
        if (this.jobs.has(lapsed._id)) continue;
        const lease: ModelLease = { owner: this.owner, until: new Date(now.getTime() + this.deps.settings.leaseMs), attempts: lapsed.lease.attempts + 1 };
        const claimed = await this.deps.models.claimLease(lapsed.accountId, lapsed._id, lapsed.lease, lease);
        if (!claimed) continue;
        if (lapsed.lease.attempts >= this.deps.settings.maxAttempts) {
          const error = `training was interrupted ${lapsed.lease.attempts} times (the service restarted while it ran); create the model again`;
          await this.deps.models.finishTraining(lapsed.accountId, lapsed._id, this.owner, { status: 'failed', error }, [
            modelFailed(lapsed.accountId, claimed.requestId ?? null, { id: lapsed._id, name: claimed.name }, error),
          ]);
          continue;
        }
        this.deps.logger.info({ modelId: lapsed._id, attempt: lease.attempts }, 'resuming an interrupted training job');
        this.launch(lapsed.accountId, lapsed._id);
      }
    } catch (err) {
      this.deps.logger.warn({ err }, 'training sweep failed; will retry');
    } finally {
      this.sweeping = false;
    }
  }

  /** Runs a recorded job here, renewing its lease while it runs. */
  launch(accountId: string, modelId: string): void {
    const abort = new AbortController();
    const renew = setInterval(
      () => {
        const until = new Date(Date.now() + this.deps.settings.leaseMs);
        this.deps.models.renewLease(accountId, modelId, this.owner, until).catch((err) => this.deps.logger.warn({ err, modelId }, 'could not renew a training lease'));
      },
      Math.max(200, Math.floor(this.deps.settings.leaseMs / 3)),
    );
    renew.unref();
    const done = this.execute(accountId, modelId, abort.signal)
      .catch((err) => this.deps.logger.error({ err, modelId }, 'training bookkeeping failed'))
      .finally(() => {
        clearInterval(renew);
        this.jobs.delete(modelId);
      });
    this.jobs.set(modelId, { accountId, abort, done });
  }

  private async execute(accountId: string, modelId: string, signal: AbortSignal): Promise<void> {
    const doc = await this.deps.models.findDoc(accountId, modelId);
    if (!doc || doc.status !== 'training' || !doc.spec || !doc.training) return;
    const started = performance.now();
    const requestId = doc.requestId ?? null;
    try {
      const { datasets, pool } = this.deps;
      const sourceId = doc.training.sourceId;
      const file = await datasets.currentFile(accountId, sourceId);
      if (!file) throw new TrainingError('the source has no data (it was never synced or was removed)');
      const jobOn = (data: string): TrainJob => ({
        spec: doc.spec!,
        data: { kind: 'parquet', file: data, maxRows: this.deps.settings.maxRows },
        limits: { maxClasses: this.deps.settings.maxClasses, silhouetteSample: this.deps.settings.silhouetteSample },
        duckdbMemoryLimit: this.deps.settings.duckdbMemoryLimit,
        ...(this.deps.settings.duckdbTempDir ? { duckdbTempDir: this.deps.settings.duckdbTempDir } : {}),
        ...(this.deps.settings.duckdbMaxTempSize ? { duckdbMaxTempSize: this.deps.settings.duckdbMaxTempSize } : {}),
      });
      // A newer sync may replace and remove the file under the read: it then reads the current one, once.
      const result = await readCurrentFile(
        file,
        () => datasets.currentFile(accountId, sourceId),
        (data) => pool.run(jobOn(data), { timeoutMs: this.deps.settings.timeoutMs, signal }),
      );
      const packed = await gzipAsync(JSON.stringify(result.outcome.artifact));
      if (packed.byteLength > MAX_ARTIFACT_BYTES) {
        throw new TrainingError(`the trained model takes ${packed.byteLength} bytes, over the ${MAX_ARTIFACT_BYTES} that can be stored; lower nEstimators or maxDepth`);
      }
      await this.deps.artifacts.put(accountId, modelId, { version: doc.version, format: 'trained-json-gzip', data: packed, summary: result.outcome.parameters });
      const profile = result.outcome.profile;
      const features = trainedFeatures(doc.features, profile, result.outcome.artifact.encoder);
      const durationMs = Math.round(performance.now() - started);
      const updated = await this.deps.models.finishTraining(
        accountId,
        modelId,
        this.owner,
        {
          status: 'ready',
          error: null,
          features,
          evaluation: result.outcome.evaluation,
          profile,
          training: { ...doc.training, rows: { ...result.rows, ...result.outcome.rows }, finishedAt: new Date(), durationMs },
        },
        [modelReady(accountId, requestId, { id: modelId, name: doc.name, type: doc.type })],
      );
      if (!updated && !(await this.deps.models.findDoc(accountId, modelId))) await this.deps.artifacts.remove(accountId, modelId); // deleted meanwhile
      this.deps.logger.info({ modelId, type: doc.type, rows: result.rows, timing: result.timing, durationMs }, updated ? 'model trained' : 'model trained but no longer wanted');
    } catch (err) {
      if (signal.aborted) return; // deleted, or this instance is stopping: the lease passes on
      const error = this.failureMessage(err, requestId, modelId);
      const durationMs = Math.round(performance.now() - started);
      await this.deps.models.finishTraining(accountId, modelId, this.owner, { status: 'failed', error, training: { ...doc.training, finishedAt: new Date(), durationMs } }, [
        modelFailed(accountId, requestId, { id: modelId, name: doc.name }, error),
      ]);
    }
  }

  /** The reason stored on a failed model: the caller's problem in plain words, or a pointer to our logs. */
  private failureMessage(err: unknown, requestId: string | null, modelId: string): string {
    if (err instanceof TrainingError) return err.message;
    if (err instanceof WorkerJobError && err.expected) return err.message;
    if (err instanceof WorkerTimeoutError)
      return `training took longer than ${this.deps.settings.timeoutMs} ms; lower sampleRows, nEstimators or maxIterations, or use fewer features`;
    this.deps.logger.error({ err, modelId, requestId }, 'training failed unexpectedly');
    return `training failed unexpectedly; contact support with the request id ${requestId ?? modelId}`;
  }
}
