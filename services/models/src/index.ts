import { kafkaSettingsOf } from '@dap/config';
import { listen } from '@dap/http';
import { connectEventing, type Eventing } from '@dap/kafka';
import { createLogger, type Logger } from '@dap/logger';
import { connectMongo, OutboxRelay, TenantCollection, type MongoHandle } from '@dap/mongo';
import { createApp } from './app.ts';
import type { ModelsConfig } from './config.ts';
import { BUILTIN_MODELS } from './domain/builtin/index.ts';
import { ModelCatalog } from './domain/catalog.ts';
import { ModelsService } from './domain/models.service.ts';
import { PredictWorkerPool } from './domain/worker-pool.ts';
import { MODELS_COLLECTION, ModelRepository, type ModelDoc } from './persistence/model.repository.ts';
import { PredictionLogRelay } from './persistence/prediction-log.relay.ts';
import { PREDICTION_LOG_COLLECTION, PredictionLogRepository, type PredictionLogDoc } from './persistence/prediction-log.repository.ts';

export { ANOMALY_MODEL_ID, FORECAST_MODEL_ID, BUILTIN_MODELS } from './domain/builtin/index.ts';
export { loadModelsConfig, type ModelsConfig } from './config.ts';

export interface RunningModels {
  url: string;
  port: number;
  mongo: MongoHandle;
  eventing: Eventing;
  relay: OutboxRelay;
  logRelay: PredictionLogRelay;
  /** Null when disabled or when the workers could not start (large batches then run inline). */
  workers: PredictWorkerPool | null;
  logger: Logger;
  stop(): Promise<void>;
}

export async function startModels(config: ModelsConfig, deps: { logger?: Logger } = {}): Promise<RunningModels> {
  const logger = deps.logger ?? createLogger({ name: 'models', level: config.LOG_LEVEL });
  const mongo = await connectMongo(config.MONGO_URL, config.MONGO_DB);
  let eventing: Eventing | undefined;
  let workers: PredictWorkerPool | null = null;
  try {
    eventing = await connectEventing(kafkaSettingsOf(config), logger);
    const producer = eventing.producer;
    // Prediction-log entries are insert-only and many, so they get a batching relay of their own.
    const settings = { publisher: producer, logger, intervalMs: config.OUTBOX_INTERVAL_MS };
    const logRelay = new PredictionLogRelay({ collection: mongo.db.collection(PREDICTION_LOG_COLLECTION), ...settings });
    const relay = new OutboxRelay({ collections: [mongo.db.collection(MODELS_COLLECTION)], ...settings });
    const predictionLog = new TenantCollection<PredictionLogDoc>(mongo.db, PREDICTION_LOG_COLLECTION, () => logRelay.kick());
    const models = new TenantCollection<ModelDoc>(mongo.db, MODELS_COLLECTION, () => relay.kick());

    const logRepository = new PredictionLogRepository(predictionLog);
    await logRepository.ensureIndexes(config.PREDICTION_LOG_RETENTION_DAYS, logger);
    const catalog = new ModelCatalog({ repository: new ModelRepository(models), builtins: BUILTIN_MODELS });
    workers = config.PREDICT_WORKERS > 0 ? await PredictWorkerPool.start({ size: config.PREDICT_WORKERS, logger }) : null;
    const service = new ModelsService({
      catalog,
      predictionLog: logRepository,
      logger,
      metricsMaxSamples: config.METRICS_MAX_SAMPLES,
      offload: workers ? { pool: workers, minCost: config.PREDICT_WORKER_MIN_VALUES } : null,
    });

    const app = createApp({
      logger,
      bodyLimitBytes: config.BODY_LIMIT_BYTES,
      internalSecret: config.INTERNAL_SECRET,
      ready: mongo.ping,
      models: service,
    });
    const server = await listen(app, config.HOST, config.PORT);
    relay.start();
    logRelay.start();
    logger.info({ url: server.url }, 'models service listening');

    const ev = eventing;
    const pool = workers;
    return {
      url: server.url,
      port: server.port,
      mongo,
      eventing: ev,
      relay,
      logRelay,
      workers: pool,
      logger,
      async stop() {
        await server.close();
        await pool?.stop();
        await Promise.all([relay.stop(), logRelay.stop()]);
        await Promise.all([relay.flush(), logRelay.flush()]).catch((err) =>
          logger.warn({ err }, 'outbox flush at shutdown failed; the next start publishes the rest'),
        );
        await ev.close();
        await mongo.close();
      },
    };
  } catch (err) {
    await workers?.stop().catch(() => {});
    await eventing?.close().catch(() => {});
    await mongo.close().catch(() => {});
    throw err;
  }
}
