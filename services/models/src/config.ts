import { z } from 'zod';
import { duckdbSize, duckdbSpillConfig, loadConfig, serviceConfigShape } from '@dap/config';
import { PREDICTION_LOG_WRITES } from './persistence/prediction-log.repository.ts';

export const modelsConfigShape = {
  ...serviceConfigShape('models'),
  /** The dataset store (read only here). Unset: this instance cannot train from sources (POST answers 503). */
  DATASET_DIR: z.string().min(1).optional(),
  /** The most successful requests read to compute one day's latency percentiles (newest first). */
  METRICS_MAX_SAMPLES: z.coerce.number().int().min(100).max(1_000_000).default(100_000),
  /** How long prediction-log entries are kept (a TTL index); metrics need one day. */
  PREDICTION_LOG_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  /**
   * When a prediction is answered relative to its log entry (and `prediction.completed`) being stored:
   * `before_answer` (the default: no crash loses one; the request waits for a grouped MongoDB insert) or
   * `after_answer` (the insert follows the answer, grouped and retried; a crash loses the entries not yet stored).
   */
  PREDICTION_LOG_WRITE: z.enum(PREDICTION_LOG_WRITES).default('before_answer'),
  /** Log entries waiting for their insert at most; past it a prediction answers 503 (`service_busy`). */
  PREDICTION_LOG_MAX_QUEUED: z.coerce.number().int().min(100).max(1_000_000).default(10_000),
  /** Worker threads for large built-in batches and ONNX models (0: everything runs on the main thread). */
  PREDICT_WORKERS: z.coerce.number().int().min(0).max(16).default(1),
  /** Batches with at least this many series values in all run on a worker thread. */
  PREDICT_WORKER_MIN_VALUES: z.coerce.number().int().min(1).default(20_000),
  /** An ONNX run (one request) taking longer fails with 422 and its worker is replaced. */
  ONNX_RUN_TIMEOUT_MS: z.coerce.number().int().min(10).max(600_000).default(10_000),
  /** Worker threads that train models (0: this instance leaves training to instances that have them). */
  TRAIN_WORKERS: z.coerce.number().int().min(0).max(16).default(1),
  /** A training job running longer fails. */
  TRAIN_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(24 * 3_600_000)
    .default(600_000),
  /** Rows read per training job at most; beyond, a deterministic sample of this many. */
  TRAIN_MAX_ROWS: z.coerce.number().int().min(100).max(5_000_000).default(200_000),
  /** Training jobs one instance holds (queued or running) before `POST /models` answers 503. */
  TRAIN_MAX_JOBS: z.coerce.number().int().min(1).max(1000).default(16),
  /** How soon another instance resumes the training job of an instance that died. */
  TRAIN_LEASE_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(30_000),
  TRAIN_DUCKDB_MEMORY_LIMIT: duckdbSize.default('512MB'),
  /** Where the training workers' DuckDB spills (DUCKDB_TEMP_DIR), and how much (DUCKDB_MAX_TEMP_SIZE), per worker. */
  ...duckdbSpillConfig,
  /** Inputs of each request to a trained model kept in the prediction log for drift (0: no drift). */
  DRIFT_SAMPLE_PER_REQUEST: z.coerce.number().int().min(0).max(1000).default(20),
  /** Logged inputs compared with the training data per metrics request. */
  DRIFT_MAX_INPUTS: z.coerce.number().int().min(100).max(1_000_000).default(5_000),
  /**
   * How old a model's record predict may serve from its per-process cache: a change made through another
   * instance (an alias move, a deletion, a finished training) is served here within this time; one made
   * through this instance at once. 0 reads the model on every request.
   */
  MODEL_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(1_000),
  /** Own models kept in that cache per process (least recently used out); a record with its drift profile and evaluation is a few KB to tens of KB. */
  MODEL_CACHE_SIZE: z.coerce.number().int().min(1).max(1_000_000).default(1_000),
  /** Trained and ONNX model runtimes kept in memory per process. */
  RUNTIME_CACHE_SIZE: z.coerce.number().int().min(1).max(10_000).default(64),
  /**
   * How long the relay holds handed-over events (one per prediction) to publish them together: one Kafka batch
   * and one bulk clear per interval instead of per prediction, off the requests' event loop turns. Adds at most
   * this much to an event's way to Kafka. 0: the next turn.
   */
  OUTBOX_LINGER_MS: z.coerce.number().int().min(0).max(5_000).default(20),
  /**
   * The outbox sweep for events a crashed writer left (live writes hand theirs to the relay at once); each
   * sweep is a query on the pending index of the models and the prediction log.
   */
  OUTBOX_INTERVAL_MS: z.coerce.number().int().min(50).default(15_000),
};

export type ModelsConfig = ReturnType<typeof loadModelsConfig>;

export function loadModelsConfig(env: Record<string, string | undefined> = process.env) {
  return loadConfig(modelsConfigShape, env);
}
