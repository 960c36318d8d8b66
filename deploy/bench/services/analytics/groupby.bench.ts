/**
 * Benchmark (deploy/bench/README.md): an analytics group-by over N rows (10M by default) through the service's HTTP API
 * versus raw DuckDB on the same Parquet file. Target: median API time / median raw time ≤ 1.1 on every query.
 *
 * - The dataset is deterministic (DuckDB `range()` + hash-based columns) and written once, cached under
 *   `.cache/bench/analytics/` (git-ignored); a rerun reuses it.
 * - (a) API: the analytics service runs in-process on the test stack's MongoDB and Kafka (`npm test` or
 *   `bash deploy/local/stack.sh up test` starts it); each run is a signed `POST /v1/analytics/query` over
 *   HTTP, timed from request to parsed response (the report is written to MongoDB on the way, as always).
 * - (b) raw: a DuckDB instance with the same threads and memory limit on the same file, reading the rows into
 *   JavaScript, twice over: the exact SQL the service compiles (so the gap is the service's own overhead) and
 *   the same question as a person would write it (so a slow compilation cannot hide). The ratio is taken
 *   against the faster of the two.
 * - Runs alternate between (a) and (b) after a warm-up of each, so page cache and CPU drift hit both alike.
 *
 * The 10M-row run is not part of `npm test` (a 20,000-row smoke run is: test/groupby-bench.int.test.ts).
 * Run: `node_modules/.bin/node --no-warnings deploy/bench/services/analytics/groupby.bench.ts [rows] [repetitions]`
 */
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { makeEvent, querySchema, type AnalyticsQuery } from '@dap/contracts';
import { Duck, sqlLiteral, type DatasetColumn } from '@dap/datasets';
import { createKafka, EventProducer } from '@dap/kafka';
import { createLogger } from '@dap/logger';
import { callerHeaders, repoRoot, stackEnv, TEST_INTERNAL_SECRET, uniqueSuffix, waitFor } from '@dap/testing';
import { loadAnalyticsConfig } from '../../../../services/analytics/src/config.ts';
import { compileQuery } from '../../../../services/analytics/src/domain/query-compiler.ts';
import { startAnalytics } from '../../../../services/analytics/src/index.ts';

/** Fixed ids, so the cached file sits where the dataset store expects it for this account and source. */
const ACCOUNT = 'acct_000000000000000000000BENCH';
const SOURCE = 'src_000000000000000000000BENCH';
/** Bump when the generated data changes, so an old cache is not reused. */
const DATA_VERSION = 'v1';

export interface BenchQuery {
  name: string;
  /** The analytics DSL body sent to the API (sourceId added). */
  dsl: Record<string, unknown>;
  /** The same question as a DuckDB user would write it; `FILE` is replaced by the file's path literal. */
  sql: string;
}

export const GROUP_BY_QUERIES: readonly BenchQuery[] = Object.freeze([
  {
    name: 'group by country (16 groups)',
    dsl: { measures: [{ op: 'count' }, { op: 'sum', field: 'amount' }, { op: 'avg', field: 'qty' }], dimensions: ['country'] },
    sql: 'SELECT country, count(*) AS count, sum(amount) AS sum_amount, avg(qty) AS avg_qty FROM read_parquet(FILE) GROUP BY country ORDER BY country',
  },
  {
    name: 'month x status, filtered (48 groups)',
    dsl: {
      measures: [{ op: 'count' }, { op: 'sum', field: 'amount', as: 'revenue' }],
      dimensions: ['status'],
      timeDimension: { field: 'ts', granularity: 'month' },
      filters: [{ field: 'paid', op: 'eq', value: true }],
    },
    sql: "SELECT status, date_trunc('month', ts) AS ts, count(*) AS count, sum(amount) AS revenue FROM read_parquet(FILE) " + 'WHERE paid = true GROUP BY ALL ORDER BY ts, status',
  },
  {
    name: 'group by customer, top 10,000 of 100,000 groups',
    dsl: {
      measures: [{ op: 'count' }, { op: 'sum', field: 'amount', as: 'revenue' }],
      dimensions: ['customer'],
      orderBy: [{ field: 'revenue', direction: 'desc' }],
      limit: 10_000,
    },
    sql: 'SELECT customer, count(*) AS count, sum(amount) AS revenue FROM read_parquet(FILE) GROUP BY customer ORDER BY revenue DESC, customer LIMIT 10000',
  },
]);

export interface Timing {
  medianMs: number;
  minMs: number;
  runsMs: number[];
  /**
   * Median CPU time of this process per run (user + system, DuckDB's threads included; the MongoDB server's
   * excluded). Less disturbed than wall time when other processes compete for the cores.
   */
  cpuMedianMs: number;
}

export interface GroupByBenchResult {
  rows: number;
  file: string;
  fileBytes: number;
  generatedMs: number | null;
  repetitions: number;
  threads: number;
  memoryLimit: string;
  cpus: number;
  queries: {
    name: string;
    resultRows: number;
    /** Through HTTP, request to parsed response. */
    api: Timing;
    /** The service's own query time (the report's durationMs), median. */
    serverDurationMs: number;
    /** Raw DuckDB, the compiled SQL. */
    raw: Timing;
    /** Raw DuckDB, the hand-written SQL. */
    rawHandWritten: Timing;
    /** api median / the faster raw median. */
    ratio: number;
    /** api min / the faster raw min. */
    minRatio: number;
  }[];
  /** The worst ratio over the queries. */
  ratio: number;
  /** The worst ratio of the fastest runs (api min / faster raw min): steadier than medians on a busy machine. */
  minRatio: number;
  /** 1-minute load average before and after: other processes on the machine skew every figure. */
  loadAverage: { before: number; after: number };
  target: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const round = (x: number) => Math.round(x * 10) / 10;
const timing = (runs: number[], cpu: number[]): Timing => ({
  medianMs: round(median(runs)),
  minMs: round(Math.min(...runs)),
  runsMs: runs.map(round),
  cpuMedianMs: round(median(cpu)),
});

/** Runs `fn` and adds its process CPU time (ms) to `cpu`. */
async function withCpu<T>(cpu: number[], fn: () => Promise<T>): Promise<T> {
  const before = process.cpuUsage();
  const out = await fn();
  const used = process.cpuUsage(before);
  cpu.push((used.user + used.system) / 1000);
  return out;
}

/** Writes the deterministic dataset once (atomically: a half-written file is never cached). */
async function ensureDataset(datasetDir: string, rows: number): Promise<{ file: string; generatedMs: number | null }> {
  const dir = join(datasetDir, ACCOUNT, SOURCE);
  const file = join(dir, 'data.parquet');
  if (existsSync(file) && existsSync(join(dir, 'current'))) return { file, generatedMs: null };
  await mkdir(dir, { recursive: true });
  const started = performance.now();
  const tmp = `${file}.${process.pid}.tmp`;
  const duck = await Duck.open();
  try {
    await duck.run(`
      COPY (
        SELECT
          i AS id,
          ['DE','FR','US','UK','ES','IT','NL','PL','SE','JP','BR','IN','CN','CA','AU','MX'][1 + (hash(i) % 16)::INTEGER] AS country,
          ['paid','pending','refunded','paid_late'][1 + (hash(i + 1000000007) % 4)::INTEGER] AS status,
          ((hash(i + 2000000014) % 100000)::DOUBLE) / 100 AS amount,
          (hash(i + 3000000021) % 10)::INTEGER AS qty,
          hash(i + 4000000028) % 10 < 6 AS paid,
          TIMESTAMP '2024-01-01 00:00:00' + to_seconds((hash(i + 5000000035) % 31536000)::BIGINT) AS ts,
          (hash(i + 6000000042) % 100000)::INTEGER AS customer
        FROM range(${Math.floor(rows)}) t(i)
      ) TO ${sqlLiteral(tmp)} (FORMAT parquet, COMPRESSION zstd)`);
  } finally {
    duck.close();
  }
  await rename(tmp, file);
  await writeFile(join(dir, 'current'), 'data.parquet');
  return { file, generatedMs: round(performance.now() - started) };
}

/** The dataset's columns as the sources service would announce them in `source.ready`. */
const SCHEMA: DatasetColumn[] = [
  { name: 'id', type: 'integer' },
  { name: 'country', type: 'string' },
  { name: 'status', type: 'string' },
  { name: 'amount', type: 'number' },
  { name: 'qty', type: 'integer' },
  { name: 'paid', type: 'boolean' },
  { name: 'ts', type: 'timestamp' },
  { name: 'customer', type: 'integer' },
];

export async function runGroupByBench(
  opts: { rows?: number; repetitions?: number; threads?: number; memoryLimit?: string; queries?: readonly BenchQuery[]; log?: (line: string) => void } = {},
): Promise<GroupByBenchResult> {
  const rows = opts.rows ?? 10_000_000;
  const repetitions = opts.repetitions ?? 7;
  const threads = opts.threads ?? cpus().length;
  const memoryLimit = opts.memoryLimit ?? '2GB';
  const queries = opts.queries ?? GROUP_BY_QUERIES;
  const log = opts.log ?? (() => {});
  const loadBefore = round(loadavg()[0] ?? 0);

  const datasetDir = join(repoRoot(), '.cache', 'bench', 'analytics', `groupby-${rows}-${DATA_VERSION}`, 'datasets');
  const { file, generatedMs } = await ensureDataset(datasetDir, rows);
  const fileBytes = (await stat(file)).size;
  log(`dataset: ${rows} rows, ${(fileBytes / 1e6).toFixed(1)} MB${generatedMs === null ? ' (cached)' : ` (generated in ${generatedMs} ms)`}`);

  const stack = stackEnv();
  const suffix = uniqueSuffix();
  const prefix = `bench${suffix}.`;
  const logger = createLogger({ name: 'analytics-bench', level: 'silent' });
  const svc = await startAnalytics(
    loadAnalyticsConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'silent',
      MONGO_URL: stack.MONGO_URL,
      MONGO_DB: `analytics_bench_${suffix}`,
      KAFKA_BROKERS: stack.KAFKA_BROKERS,
      KAFKA_TOPIC_PREFIX: prefix,
      INTERNAL_SECRET: TEST_INTERNAL_SECRET,
      DATASET_DIR: datasetDir,
      QUERY_BUDGET_MS: '60000',
      QUERY_TIMEOUT_MS: '600000',
      DUCKDB_THREADS: String(threads),
      DUCKDB_MEMORY_LIMIT: memoryLimit,
    }),
    { logger },
  );
  const settings = { brokers: stack.KAFKA_BROKERS.split(','), clientId: 'analytics-bench', topicPrefix: prefix };
  const producer = new EventProducer(createKafka(settings, logger), settings);
  // The same settings as the service's runner (but its sandbox), so the gap measured is the service's own.
  const raw = await Duck.open({ threads, memoryLimit, parquetMetadataCache: true });
  const { conn: rawConn, release: releaseRaw } = await raw.connect();
  try {
    await rawConn.run('LOAD parquet');
    await producer.connect();
    // Play the sources service: announce the (already written) file.
    await producer.publish([
      makeEvent('source.ready', { accountId: ACCOUNT, subject: SOURCE, data: { id: SOURCE, name: 'bench', type: 'inline', rowCount: rows, schema: SCHEMA } }),
    ]);
    await waitFor(() => svc.mongo.db.collection('source_projections').findOne({ _id: SOURCE as never, status: 'ready' }), { what: 'the source projection', timeoutMs: 30_000 });

    const viaApi = async (dsl: Record<string, unknown>) => {
      const started = performance.now();
      const res = await fetch(`${svc.url}/v1/analytics/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...callerHeaders(ACCOUNT, { plan: 'enterprise' }) },
        body: JSON.stringify({ sourceId: SOURCE, ...dsl }),
      });
      const body = (await res.json()) as { status: string; rowCount: number; durationMs: number; error?: string };
      const ms = performance.now() - started;
      if (res.status !== 201 || body.status !== 'completed') throw new Error(`API query failed: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
      return { ms, rows: body.rowCount, serverMs: body.durationMs };
    };
    const viaDuckDb = async (sql: string, params: (string | number | boolean | null)[] = []) => {
      const started = performance.now();
      const reader = await rawConn.runAndReadAll(sql.replaceAll('FILE', sqlLiteral(file)), params);
      const out = reader.getRows();
      return { ms: performance.now() - started, rows: out.length };
    };

    const results: GroupByBenchResult['queries'] = [];
    for (const q of queries) {
      const compiled = compileQuery(querySchema.parse({ sourceId: SOURCE, ...q.dsl }) as AnalyticsQuery, SCHEMA, file);
      // Warm-up of each path, and a check that all three answer the same number of rows.
      const counts = [(await viaApi(q.dsl)).rows, (await viaDuckDb(compiled.sql, compiled.params)).rows, (await viaDuckDb(q.sql)).rows];
      if (new Set(counts).size !== 1) throw new Error(`${q.name}: API, compiled SQL and hand-written SQL returned ${counts.join(', ')} rows`);
      const runs = { api: [] as number[], server: [] as number[], raw: [] as number[], hand: [] as number[] };
      const cpu = { api: [] as number[], raw: [] as number[], hand: [] as number[] };
      const steps = {
        api: async () => {
          const r = await withCpu(cpu.api, () => viaApi(q.dsl));
          runs.api.push(r.ms);
          runs.server.push(r.serverMs);
        },
        raw: async () => void runs.raw.push((await withCpu(cpu.raw, () => viaDuckDb(compiled.sql, compiled.params))).ms),
        hand: async () => void runs.hand.push((await withCpu(cpu.hand, () => viaDuckDb(q.sql))).ms),
      };
      const orders = [
        ['api', 'raw', 'hand'],
        ['raw', 'hand', 'api'],
        ['hand', 'api', 'raw'],
      ] as const;
      for (let i = 0; i < repetitions; i++) for (const step of orders[i % orders.length]!) await steps[step]();
      const api = timing(runs.api, cpu.api);
      const raw = timing(runs.raw, cpu.raw);
      const rawHandWritten = timing(runs.hand, cpu.hand);
      const ratio = Math.round((api.medianMs / Math.min(raw.medianMs, rawHandWritten.medianMs)) * 100) / 100;
      const minRatio = Math.round((api.minMs / Math.min(raw.minMs, rawHandWritten.minMs)) * 100) / 100;
      const entry = { name: q.name, resultRows: counts[0]!, api, serverDurationMs: round(median(runs.server)), raw, rawHandWritten, ratio, minRatio };
      results.push(entry);
      log(
        `${q.name}: API ${api.medianMs} ms (query ${entry.serverDurationMs} ms) vs DuckDB ${raw.medianMs} ms (hand-written ${rawHandWritten.medianMs} ms) -> ratio ${ratio} (fastest runs ${minRatio}; CPU ${api.cpuMedianMs} vs ${raw.cpuMedianMs} ms)`,
      );
    }
    return {
      rows,
      file,
      fileBytes,
      generatedMs,
      repetitions,
      threads,
      memoryLimit,
      cpus: cpus().length,
      queries: results,
      ratio: Math.max(...results.map((r) => r.ratio)),
      minRatio: Math.max(...results.map((r) => r.minRatio)),
      loadAverage: { before: loadBefore, after: round(loadavg()[0] ?? 0) },
      target: 1.1,
    };
  } finally {
    releaseRaw();
    raw.close();
    await producer.disconnect().catch(() => {});
    await svc.mongo.db.dropDatabase().catch(() => {});
    await svc.stop();
  }
}

/** Removes the cached datasets (all sizes). */
export async function clearGroupByBenchCache(): Promise<void> {
  await rm(join(repoRoot(), '.cache', 'bench', 'analytics'), { recursive: true, force: true });
}

// Run directly: print the result as JSON; exit 1 when the target is missed. (No top-level await: jest loads this file as CommonJS.)
if (process.argv[1]?.endsWith('groupby.bench.ts')) {
  const rows = Number(process.argv[2] ?? 10_000_000);
  const repetitions = Number(process.argv[3] ?? 7);
  runGroupByBench({ rows, repetitions, log: (line) => console.error(`[bench] ${line}`) }).then(
    (result) => {
      console.log(JSON.stringify(result, null, 2));
      process.exit(result.ratio <= result.target ? 0 : 1);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(2);
    },
  );
}
