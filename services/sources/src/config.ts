import { hostname } from 'node:os';
import { z } from 'zod';
import { datasetConfig, duckdbSize, duckdbSpillConfig, loadConfig, outboundConfig, serviceConfigShape, sizeLimitFromEnv, uploadConfig } from '@dap/config';
import { keySchema } from '@dap/crypto';
import { DEFAULT_DATASET_GRACE_MS } from '@dap/datasets';

const ms = (min: number, max: number, def: number) => z.coerce.number().int().min(min).max(max).default(def);

export const sourcesConfigShape = {
  ...serviceConfigShape('sources'),
  ...datasetConfig,
  ...outboundConfig,
  ...uploadConfig,
  /** Syncs run in-process, at most this many at once; 0 makes an API-only instance that leaves syncs to others. */
  SYNC_CONCURRENCY: z.coerce.number().int().min(0).max(16).default(2),
  /**
   * Syncs one account may run at once on an instance (capped by SYNC_CONCURRENCY). Accounts take the free slots
   * in turn, so one account's slow sources leave a slot for everyone else's.
   */
  SYNC_ACCOUNT_CONCURRENCY: z.coerce.number().int().min(1).max(16).default(1),
  /** A running sync holds its source for this long and renews it; an expired lease means its worker died. */
  SYNC_LEASE_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(60_000),
  /** Names this instance's sync leases; a restarted instance with the same id resumes its own syncs at once. */
  INSTANCE_ID: z.string().min(1).max(200).default(hostname()),
  /** How often an instance looks for pending syncs and expired leases (it also does so at start-up). */
  SYNC_SWEEP_MS: z.coerce.number().int().min(100).max(3_600_000).default(15_000),
  /**
   * A failed run of a scheduled source is retried after SYNC_RETRY_BASE_MS, doubling up to SYNC_RETRY_CAP_MS
   * (±20 % jitter), at most SYNC_RETRY_MAX times, and never past the source's next regular run.
   */
  SYNC_RETRY_BASE_MS: ms(1_000, 3_600_000, 60_000),
  SYNC_RETRY_CAP_MS: ms(1_000, 24 * 3_600_000, 30 * 60_000),
  SYNC_RETRY_MAX: z.coerce.number().int().min(0).max(100).default(5),
  /**
   * AES-256-GCM key for source credentials at rest: 32 bytes as base64 or 64 hex characters. Without it the
   * service still serves upload sources but refuses remote ones (URL, databases) with 503.
   */
  SOURCE_CREDENTIALS_KEY: keySchema.optional(),
  /** Largest remote pull (file bytes, or staged bytes for a database), and the largest Content-Length accepted. */
  SOURCE_MAX_BYTES: sizeLimitFromEnv.default(2 * 1024 ** 3),
  /** Opening a connection (TCP, TLS, handshake, authentication) to a file server or a database. */
  SOURCE_CONNECT_TIMEOUT_MS: ms(100, 120_000, 10_000),
  /** The whole connection check made before a source is accepted (connect + probe). */
  SOURCE_CHECK_TIMEOUT_MS: ms(500, 120_000, 20_000),
  /** A whole pull from a URL; a file server that sends nothing for SOURCE_IDLE_TIMEOUT_MS also fails it. */
  SOURCE_URL_TIMEOUT_MS: ms(1_000, 24 * 3_600_000, 30 * 60_000),
  SOURCE_IDLE_TIMEOUT_MS: ms(500, 3_600_000, 60_000),
  /** A whole pull from PostgreSQL, MySQL/MariaDB or MongoDB (the query and every batch). */
  SOURCE_DB_TIMEOUT_MS: ms(1_000, 24 * 3_600_000, 60 * 60_000),
  /**
   * DuckDB's memory limit in this process; loads run one at a time so a big file stays within it. The service's
   * peak RSS follows it: loading a 1 GiB CSV (one thread) took the loader +183 MB over its idle RSS at 256 MB,
   * +144 MB at 160 MB; a 118 MiB one (all threads) +227 / +176 MB, in the same time (9.5 s; 0.70 s). At 112 MB
   * and below a load on two threads no longer runs in parallel: DuckDB holds back the thread that reads ahead
   * of the ordered write, which then spins (a 2M-row CSV: 1.2-1.4 s of wall and 2.3-2.5 s of CPU, against
   * 0.66-0.77 s and 1.25-1.38 s at 160 MB).
   */
  DUCKDB_MEMORY_LIMIT: duckdbSize.default('160MB'),
  ...duckdbSpillConfig,
  /**
   * How long a replaced Parquet file stays after a sync publishes its successor: analytics and models replicas
   * may still be reading it. Keep it above analytics' QUERY_TIMEOUT_MS and the models' training read.
   */
  DATASET_GRACE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(7 * 24 * 3_600_000)
    .default(DEFAULT_DATASET_GRACE_MS),
  /**
   * Staged files up to this size load on all DuckDB threads; a bigger CSV on INGEST_LARGE_CSV_THREADS, a bigger
   * JSON file on one thread, so memory stays bounded however many cores the machine has.
   */
  INGEST_PARALLEL_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(32 * 1024 ** 2),
  /**
   * DuckDB threads for a CSV over INGEST_PARALLEL_MAX_BYTES. The load's SQL on a 2M-row, 123 MB CSV on a quiet
   * 2-core machine: 1,136 ms on one thread, 621 ms on two, DuckDB's own COPY of the file 603 ms. Two cost memory:
   * an ordered COPY keeps what one thread reads ahead until the other's rows are written, so a 121 MiB CSV
   * peaked at 387-400 MB of service RSS on two threads against 323 MB on one (soak, idle ~190 MB, load average
   * ~17). The default keeps the 400 MB budget; a deployment with more memory per replica can set 2.
   */
  INGEST_LARGE_CSV_THREADS: z.coerce.number().int().min(1).max(64).default(1),
};

export type SourcesConfig = z.infer<z.ZodObject<typeof sourcesConfigShape>>;

export function loadSourcesConfig(env: Record<string, string | undefined> = process.env): SourcesConfig {
  return loadConfig(sourcesConfigShape, env);
}
