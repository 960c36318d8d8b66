import { z } from 'zod';
import { datasetConfig, duckdbSize, duckdbSpillConfig, loadConfig, serviceConfigShape } from '@dap/config';

export const analyticsConfigShape = {
  ...serviceConfigShape('analytics'),
  ...datasetConfig,
  /** A query still running after this long answers 202 and finishes in the background; 0: every one answers 202 at once. */
  QUERY_BUDGET_MS: z.coerce.number().int().min(0).max(60_000).default(2_000),
  /** A query running longer than this is interrupted and its report fails. */
  QUERY_TIMEOUT_MS: z.coerce.number().int().min(1).max(3_600_000).default(30_000),
  /** Queries one account may have running at once. */
  MAX_CONCURRENT_QUERIES: z.coerce.number().int().min(1).max(1_000).default(4),
  /** DuckDB's memory for queries and its Parquet metadata and file caches (evicted under this limit). */
  DUCKDB_MEMORY_LIMIT: duckdbSize.default('1GB'),
  DUCKDB_THREADS: z.coerce.number().int().min(1).max(256).optional(),
  /**
   * The most bytes of a source's data (compressed Parquet, of the columns and row groups a query uses) one
   * query may read, per plan; 0 is no limit. A query over it is refused with 422 before it runs.
   */
  MAX_QUERY_BYTES_STARTER: z.coerce
    .number()
    .int()
    .min(0)
    .default(2 * 1024 ** 3),
  MAX_QUERY_BYTES_PROFESSIONAL: z.coerce
    .number()
    .int()
    .min(0)
    .default(20 * 1024 ** 3),
  MAX_QUERY_BYTES_ENTERPRISE: z.coerce
    .number()
    .int()
    .min(0)
    .default(200 * 1024 ** 3),
  ...duckdbSpillConfig,
};
export type AnalyticsConfig = ReturnType<typeof loadAnalyticsConfig>;

export function loadAnalyticsConfig(env: Record<string, string | undefined> = process.env) {
  return loadConfig(analyticsConfigShape, env);
}
