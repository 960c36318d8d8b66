import { z } from 'zod';
import { loadConfig, serviceConfigShape } from '@dap/config';

export const modelsConfigShape = {
  ...serviceConfigShape('models'),
  /** The most successful requests read to compute one day's latency percentiles (newest first). */
  METRICS_MAX_SAMPLES: z.coerce.number().int().min(100).max(1_000_000).default(100_000),
  /** How long prediction-log entries are kept (a TTL index); metrics need one day. */
  PREDICTION_LOG_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  /** Worker threads for large prediction batches (0: everything runs on the main thread). */
  PREDICT_WORKERS: z.coerce.number().int().min(0).max(16).default(1),
  /** Batches with at least this many series values in all run on a worker thread. */
  PREDICT_WORKER_MIN_VALUES: z.coerce.number().int().min(1).default(20_000),
  OUTBOX_INTERVAL_MS: z.coerce.number().int().min(50).default(1_000),
};

export type ModelsConfig = ReturnType<typeof loadModelsConfig>;

export function loadModelsConfig(env: Record<string, string | undefined> = process.env) {
  return loadConfig(modelsConfigShape, env);
}
