/**
 * DuckDB allocates through its own jemalloc, which keeps freed pages for reuse. A load on two threads frees
 * and allocates large buffers (CSV reads of 8 MB, Parquet column chunks) in both threads' arenas, and the
 * pages each arena keeps added up: a 64 MiB CSV peaked at 444-480 MB of service RSS, over the 400 MB budget.
 * Requests of 8 MB and more are served from jemalloc's oversize arena instead, which returns pages at once.
 * Measured on the bench's 118 MiB CSV, loaded alone: peak +106-125 MB over the process's RSS instead of
 * +131-207 MB, in the same time (707-740 ms vs 679-730 ms). jemalloc reads this once, when DuckDB's library
 * loads, so it is set before anything imports DuckDB: the imports below are dynamic for that reason. An
 * operator's own DUCKDB_JE_MALLOC_CONF wins.
 */
process.env.DUCKDB_JE_MALLOC_CONF ??= 'oversize_threshold:8388608';

const { installShutdown } = await import('@dap/http');
const { createLogger } = await import('@dap/logger');
const { loadSourcesConfig } = await import('./config.ts');
const { startSources } = await import('./index.ts');

const config = loadSourcesConfig();
const logger = createLogger({ name: 'sources', level: config.LOG_LEVEL });
const svc = await startSources(config, { logger });
installShutdown(logger, svc.stop);
