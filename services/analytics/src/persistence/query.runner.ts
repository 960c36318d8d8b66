import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { resolve, sep } from 'node:path';
import { apiTypeOf, sqlLiteral, type Cell, type QueryResult } from '@dap/datasets';
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

/** DuckDB prints times as `2024-01-05 10:00:00[.fff][+00]`; the API speaks ISO-8601 UTC. */
function isoOf(v: string): string {
  if (/^\d{4}-\d{2}-\d{2}$/.test(v)) return `${v}T00:00:00.000Z`;
  const m = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?)([+-]\d{2}(?::?\d{2})?)?$/.exec(v);
  if (!m) return v;
  const zone = m[3] ? (m[3].length === 3 ? `${m[3]}:00` : m[3]) : 'Z';
  const ms = Date.parse(`${m[1]}T${m[2]}${zone}`);
  return Number.isNaN(ms) ? v : new Date(ms).toISOString();
}

function cellOf(v: unknown, duckType: string): Cell {
  if (v === null || v === undefined) return null;
  const api = apiTypeOf(duckType);
  if ((api === 'integer' || api === 'number') && (typeof v === 'string' || typeof v === 'bigint')) return Number(v);
  if (TIME_TYPES.test(duckType) && typeof v === 'string') return isoOf(v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'bigint') return Number(v);
  return JSON.stringify(v);
}

/**
 * Runs analytics SQL on its own DuckDB instance, so a query can be interrupted when it runs past its time
 * limit or the service stops (the shared `Duck` helper cannot interrupt). One connection per query, so
 * queries run side by side.
 */
export class QueryRunner {
  private readonly instance: DuckDBInstance;
  private readonly open = new Set<DuckDBConnection>();

  private constructor(instance: DuckDBInstance) {
    this.instance = instance;
  }

  /** `datasetDir` is the only directory queries may read (defence in depth behind the compiler). */
  static async open(opts: { datasetDir: string; memoryLimit: string; threads?: number }): Promise<QueryRunner> {
    const instance = await DuckDBInstance.create(':memory:', {
      memory_limit: opts.memoryLimit,
      ...(opts.threads ? { threads: String(opts.threads) } : {}),
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'false',
    });
    const conn = await instance.connect();
    try {
      const dir = resolve(opts.datasetDir) + sep;
      await conn.run(`SET allowed_directories = [${sqlLiteral(dir)}]`);
      await conn.run('SET enable_external_access = false');
      await conn.run('SET lock_configuration = true');
    } finally {
      conn.closeSync();
    }
    return new QueryRunner(instance);
  }

  async run(sql: string, params: ParamValue[], opts: RunOptions): Promise<QueryResult> {
    if (opts.signal?.aborted) throw new QueryInterruptedError('aborted', 'the query was cancelled');
    const conn = await this.instance.connect();
    this.open.add(conn);
    let stopped: QueryInterruptedError | null = null;
    const stop = (err: QueryInterruptedError) => {
      stopped ??= err;
      conn.interrupt();
    };
    const timer = setTimeout(
      () => stop(new QueryInterruptedError('timeout', `the query ran longer than its ${opts.timeoutMs} ms time limit and was stopped; narrow it with filters or a shorter time range`)),
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
      const rows = reader.getRowObjectsJson().map((r) => {
        const out: Record<string, Cell> = {};
        names.forEach((name, i) => (out[name] = cellOf(r[name], duckTypes[i] ?? 'VARCHAR')));
        return out;
      });
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
  }
}
