import { startService } from '@dap/lifecycle';
import { DatasetFiles } from '@dap/datasets';
import { addressOf, openHttpServer, type ServiceAddress } from '@dap/http';
import { openEventing, type Consumer, type Eventing } from '@dap/kafka';
import type { Logger } from '@dap/logger';
import { openMongo, outboxRelayOf, SourceProjectionRepository, startOutboxRelay, TenantCollection, type MongoHandle, type OutboxRelay } from '@dap/mongo';
import { createApp } from './app.ts';
import type { ModelsConfig } from './config.ts';
import { BUILTIN_MODELS } from './domain/builtin/index.ts';
import { ModelCatalog } from './domain/catalog.ts';
import { ModelLifecycle } from './domain/lifecycle.service.ts';
import { ModelsService } from './domain/models.service.ts';
import { ModelVersions } from './domain/versions.service.ts';
import { ModelVersionRepository } from './persistence/model-version.repository.ts';
import { InlineOnnxHost, WorkerOnnxHost } from './domain/onnx/onnx-host.ts';
import { OwnModelRuntimes } from './domain/runtimes.ts';
import { ServingCache } from './domain/serving-cache.ts';
import { TrainingService } from './domain/training.service.ts';
import { TrainingJobs } from './workers/training-jobs.ts';
import { startTrainingSweep } from './workers/training-sweep.ts';
import { modelsOutbox } from './events/outbox.ts';
import { runSourcesConsumer } from './events/sources.consumer.ts';
import { ArtifactRepository } from './persistence/artifact.repository.ts';
import { MODELS_COLLECTION, ModelRepository, type ModelDoc } from './persistence/model.repository.ts';
import { PREDICTION_LOG_COLLECTION, PredictionLogRepository, type PredictionLogDoc } from './persistence/prediction-log.repository.ts';
import type { PredictJob, PredictJobResult } from './workers/predict.worker.ts';
import type { TrainJob, TrainJobResult } from './workers/train.worker.ts';
import { WorkerPool } from './workers/worker-pool.ts';

export { ANOMALY_MODEL_ID, FORECAST_MODEL_ID, BUILTIN_MODELS } from './domain/builtin/index.ts';
export { loadModelsConfig, type ModelsConfig } from './config.ts';

/** Worker modules, resolved by package name from the process's working directory (the repo or image root). */
export const PREDICT_WORKER_MODULE = '@dap/models/predict-worker';
export const TRAIN_WORKER_MODULE = '@dap/models/train-worker';

export interface RunningModels extends ServiceAddress {
  mongo: MongoHandle;
  eventing: Eventing;
  relay: OutboxRelay;
  /** Prediction workers; null when disabled or when they could not start (then everything runs inline). */
  workers: WorkerPool<PredictJob, PredictJobResult> | null;
  /** Training workers; null when disabled, without DATASET_DIR, or when they could not start. */
  trainWorkers: WorkerPool<TrainJob, TrainJobResult> | null;
  training: TrainingService;
  logger: Logger;
  stop(): Promise<void>;
}

/** `now`: the serving cache's clock (tests move it past the cache's age bound). */
export async function startModels(config: ModelsConfig, deps: { logger?: Logger; now?: () => number } = {}): Promise<RunningModels> {
  return startService('models', config, deps, async (life, logger) => {
    const mongo = await openMongo(life, config, logger);
    const eventing = await openEventing(life, config, logger);
    const producer = eventing.producer;

    const relay = outboxRelayOf(mongo.db, modelsOutbox(config), producer, logger);
    const predictionLog = new TenantCollection<PredictionLogDoc>(mongo.db, PREDICTION_LOG_COLLECTION, (w) => relay.written(w));
    const modelsColl = new TenantCollection<ModelDoc>(mongo.db, MODELS_COLLECTION, (w) => relay.written(w));

    const logRepository = new PredictionLogRepository(
      predictionLog,
      { write: config.PREDICTION_LOG_WRITE, maxBatch: 500, maxQueued: config.PREDICTION_LOG_MAX_QUEUED, retryMs: 1_000 },
      logger,
    );
    const modelRepository = new ModelRepository(modelsColl);
    await logRepository.ensureIndexes(config.PREDICTION_LOG_RETENTION_DAYS, logger);
    await modelRepository.ensureIndexes(logger);
    await startOutboxRelay(life, relay, logger);
    // Closed after the server and the shadow runs (registered later, so stopped earlier), before the relay.
    life.onStop('prediction log', () => logRepository.close(5_000));
    const artifacts = new ArtifactRepository(mongo.db);
    const versionRepository = new ModelVersionRepository(mongo.db);
    await versionRepository.ensureIndexes(logger);
    const versions = new ModelVersions({ models: modelRepository, versions: versionRepository });
    const sources = new SourceProjectionRepository(mongo.db);

    // This thread only resolves current files (no DuckDB); reading them is the training workers' job.
    const datasets = config.DATASET_DIR ? new DatasetFiles(config.DATASET_DIR) : null;
    if (!datasets) logger.warn('DATASET_DIR is not set: this instance cannot train models from sources');

    // Both pools boot at once: each worker imports its module, which is most of the start-up time.
    const [workers, trainWorkers] = await Promise.all([
      config.PREDICT_WORKERS > 0 ? WorkerPool.start<PredictJob, PredictJobResult>({ name: 'predict', module: PREDICT_WORKER_MODULE, size: config.PREDICT_WORKERS, logger }) : null,
      config.TRAIN_WORKERS > 0 && datasets
        ? WorkerPool.start<TrainJob, TrainJobResult>({ name: 'train', module: TRAIN_WORKER_MODULE, size: config.TRAIN_WORKERS, logger, maxQueue: config.TRAIN_MAX_JOBS })
        : null,
    ]);
    if (workers) life.onStop('prediction workers', () => workers.stop());
    if (trainWorkers) life.onStop('training workers', () => trainWorkers.stop());

    const onnx = workers ? new WorkerOnnxHost(workers, config.ONNX_RUN_TIMEOUT_MS) : new InlineOnnxHost();
    const runtimes = new OwnModelRuntimes({ artifacts, onnx, maxEntries: config.RUNTIME_CACHE_SIZE });
    const catalog = new ModelCatalog({ repository: modelRepository, builtins: BUILTIN_MODELS, runtimes });
    const serving = new ServingCache({
      source: { model: (accountId, id) => modelRepository.findById(accountId, id), version: (accountId, id, v) => versionRepository.find(accountId, id, v) },
      ttlMs: config.MODEL_CACHE_TTL_MS,
      maxEntries: config.MODEL_CACHE_SIZE,
      ...(deps.now ? { now: deps.now } : {}),
      onRefreshError: (err) => logger.warn({ err }, 'could not refresh a cached model; the next request past its age bound reads it'),
    });
    modelRepository.onChange((accountId, id) => serving.invalidate(accountId, id));
    const service = new ModelsService({
      catalog,
      versions,
      predictionLog: logRepository,
      logger,
      metricsMaxSamples: config.METRICS_MAX_SAMPLES,
      offload: workers ? { pool: workers, minCost: config.PREDICT_WORKER_MIN_VALUES } : null,
      drift: { samplePerRequest: config.DRIFT_SAMPLE_PER_REQUEST, maxInputs: config.DRIFT_MAX_INPUTS },
      serving,
    });
    // Closed before the workers and the database: shadow runs in flight finish and are recorded.
    life.onStop('shadow predictions', () => service.drainShadows());
    const trainingSettings = {
      timeoutMs: config.TRAIN_TIMEOUT_MS,
      maxRows: config.TRAIN_MAX_ROWS,
      leaseMs: config.TRAIN_LEASE_MS,
      maxAttempts: 3,
      maxJobs: config.TRAIN_MAX_JOBS,
      maxClasses: 50,
      silhouetteSample: 1000,
      duckdbMemoryLimit: config.TRAIN_DUCKDB_MEMORY_LIMIT,
      duckdbTempDir: config.DUCKDB_TEMP_DIR,
      ...(config.DUCKDB_MAX_TEMP_SIZE ? { duckdbMaxTempSize: config.DUCKDB_MAX_TEMP_SIZE } : {}),
    };
    const trainingJobs =
      trainWorkers && datasets ? new TrainingJobs({ models: modelRepository, artifacts, datasets, pool: trainWorkers, logger, settings: trainingSettings }) : null;
    // Stops before the worker pools (closed in reverse): jobs end and leases go back.
    if (trainingJobs) life.onStop('training jobs', () => trainingJobs.stop());
    const training = new TrainingService({ models: modelRepository, versions: versionRepository, sources, datasets, runner: trainingJobs, settings: trainingSettings });
    const lifecycle = new ModelLifecycle({ catalog, models: modelRepository, artifacts, versions, training, onnx, runtimes, logger });

    const app = createApp({ logger, bodyLimitBytes: config.BODY_LIMIT_BYTES, internalSecret: config.INTERNAL_SECRET, ready: mongo.ping, models: service, lifecycle });
    const server = await openHttpServer(life, app, config);
    await life.open(
      'sources consumer',
      () => runSourcesConsumer(eventing, logger, sources),
      (c: Consumer) => c.disconnect(),
    );
    startTrainingSweep(life, trainingJobs, config.TRAIN_LEASE_MS);
    logger.info({ url: server.url, training: Boolean(trainWorkers), predictWorkers: workers?.size ?? 0 }, 'models service listening');

    return {
      ...addressOf(server),
      mongo,
      eventing,
      relay,
      workers,
      trainWorkers,
      training,
      logger,
      /** Reverse order: consumer, server, training jobs, worker pools, DuckDB, outbox (flushed), Kafka, MongoDB. */
      stop: () => life.stop(),
    };
  });
}
