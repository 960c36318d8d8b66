import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { resolve, sep } from 'node:path';
import { apiTypeOf, ownTempDir, releaseTempDir, spillSettings, sqlLiteral, type Cell } from '@dap/datasets';
import type { ParamValue } from '../domain/query-compiler.ts';

/** Why a query was stopped before it finished. */
export class QueryInterruptedError extends Error {
  readonly reason: 'timeout' | 'aborted';

  constructor(reason: 'timeout' | 'aborted', message: string) {
    super(message);
    this.name = 'QueryInterruptedError';
    this.reason = reason;
  }
}

export interface RunOptions {
  timeoutMs: number;
  signal?: AbortSignal;
}

const TIME_TYPES = /^(TIMESTAMP|DATE)/;

/** A result with positional rows (one array per row, in `columns` order), as reports store and export them. */
export interface TableResult {
  columns: { name: string; type: ApiType }[];
  rows: Cell[][];
}
type ApiType = ReturnType<typeof apiTypeOf>;

/** DuckDB prints times as `2024-01-05 10:00:00[.fff][+00]`; the API speaks ISO-8601 UTC. */
function isoOf(v: string): string {
  if (/^\d{4}-\d{2}-\d{2}$/.test(v)) return `${v}T00:00:00.000Z`;
  const m = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?)([+-]\d{2}(?::?\d{2})?)?$/.exec(v);
  if (!m) return v;
  const zone = m[3] ? (m[3].length === 3 ? `${m[3]}:00` : m[3]) : 'Z';
  const ms = Date.parse(`${m[1]}T${m[2]}${zone}`);
  return Number.isNaN(ms) ? v : new Date(ms).toISOString();
}

function anyCell(v: unknown): Cell {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'bigint') return Number(v);
  return JSON.stringify(v);
}

/**
 * How one column's JSON values become API cells, chosen once per column (a 10,000-row result would
 * otherwise classify every cell's type again). Big integers and decimals arrive as strings.
 */
/**
 * An integer cell: a JSON number when a double holds it exactly (|n| ≤ 2^53 − 1), else its exact digits as a
 * string. DuckDB's BIGINT and HUGEINT go past that (snowflake ids, sums of large counters), and a JSON number
 * would silently become a neighbouring value in every JavaScript client and in this service.
 */
export function exactInteger(v: unknown): Cell {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' || typeof v === 'bigint') {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : String(v);
  }
  return anyCell(v);
}

export function cellConverter(duckType: string): (v: unknown) => Cell {
  const api = apiTypeOf(duckType);
  if (api === 'integer') return exactInteger;
  if (api === 'number') return (v) => (typeof v === 'number' ? v : typeof v === 'string' || typeof v === 'bigint' ? Number(v) : anyCell(v));
  if (TIME_TYPES.test(duckType)) return (v) => (typeof v === 'string' ? isoOf(v) : anyCell(v));
  return anyCell;
}

/**
 * Runs analytics SQL on its own DuckDB instance, so a query can be interrupted when it runs past its time
 * limit or the service stops (the shared `Duck` helper cannot interrupt). One connection per query, so
 * queries run side by side.
 */
export class QueryRunner {
  private readonly instance: DuckDBInstance;
  private readonly open = new Set<DuckDBConnection>();
  /** This instance's own spill directory (under DUCKDB_TEMP_DIR), removed on close. */
  readonly tempDirectory: string | null;

  private constructor(instance: DuckDBInstance, tempDirectory: string | null) {
    this.instance = instance;
    this.tempDirectory = tempDirectory;
  }

  /**
   * `datasetDir` is the only directory queries may read (defence in depth behind the compiler). A query that
   * outgrows `memoryLimit` spills under `tempDirectory` (a writable volume; the working directory is read-only).
   */
  static async open(opts: { datasetDir: string; memoryLimit: string; threads?: number; tempDirectory?: string; maxTempSize?: string }): Promise<QueryRunner> {
    const temp = opts.tempDirectory ? await ownTempDir(opts.tempDirectory) : null;
    let instance: DuckDBInstance;
    try {
      instance = await DuckDBInstance.create(':memory:', {
        memory_limit: opts.memoryLimit,
        ...(opts.threads ? { threads: String(opts.threads) } : {}),
        ...spillSettings(temp, opts.maxTempSize),
        autoinstall_known_extensions: 'false',
        autoload_known_extensions: 'false',
      });
    } catch (err) {
      releaseTempDir(temp);
      throw err;
    }
    const conn = await instance.connect();
    try {
      // Parquet footers are read once per file, not once per query (files are immutable: a sync writes a new one).
      // The cache lives inside memory_limit, evicted least recently used first (query.runner.memory.test.ts).
      await conn.run('LOAD parquet');
      await conn.run('SET GLOBAL parquet_metadata_cache = true');
      const dir = resolve(opts.datasetDir) + sep;
      await conn.run(`SET allowed_directories = [${sqlLiteral(dir)}]`);
      await conn.run('SET enable_external_access = false');
      await conn.run('SET lock_configuration = true');
    } finally {
      conn.closeSync();
    }
    return new QueryRunner(instance, temp);
  }

  async run(sql: string, params: ParamValue[], opts: RunOptions): Promise<TableResult> {
    if (opts.signal?.aborted) throw new QueryInterruptedError('aborted', 'the query was cancelled');
    const conn = await this.instance.connect();
    this.open.add(conn);
    let stopped: QueryInterruptedError | null = null;
    const stop = (err: QueryInterruptedError) => {
      stopped ??= err;
      conn.interrupt();
    };
    const timer = setTimeout(
      () =>
        stop(new QueryInterruptedError('timeout', `the query ran longer than its ${opts.timeoutMs} ms time limit and was stopped; narrow it with filters or a shorter time range`)),
      opts.timeoutMs,
    );
    const onAbort = () => stop(new QueryInterruptedError('aborted', 'the query was cancelled because the service is shutting down; run it again'));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const reader = await conn.runAndReadAll(sql, params);
      if (stopped) throw stopped;
      const names = reader.columnNames();
      const duckTypes = reader.columnTypes().map((t) => t.toString());
      const columns = names.map((name, i) => ({ name, type: apiTypeOf(duckTypes[i] ?? 'VARCHAR') }));
      const convert = duckTypes.map(cellConverter);
      const width = convert.length;
      // Converted in place: the reader's row arrays are ours, and a large result is not copied again.
      const rows = reader.getRowsJson() as unknown[][] as Cell[][];
      for (const r of rows) for (let i = 0; i < width; i++) r[i] = convert[i]!(r[i]);
      return { columns, rows };
    } catch (err) {
      throw stopped ?? err;
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      this.open.delete(conn);
      conn.closeSync();
    }
  }

  close(): void {
    for (const conn of this.open) conn.interrupt();
    this.instance.closeSync();
    releaseTempDir(this.tempDirectory);
  }
}
