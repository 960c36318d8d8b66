import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { threadId } from 'node:worker_threads';
import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';

export type Cell = string | number | boolean | null;
export interface QueryResult {
  columns: { name: string; type: string }[];
  rows: Record<string, Cell>[];
}

/** DuckDB type names (as DESCRIBE prints them) mapped to the API's column types. */
export function apiTypeOf(duckType: string): 'string' | 'integer' | 'number' | 'boolean' | 'timestamp' {
  const t = duckType.toUpperCase();
  if (/^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT)$/.test(t)) return 'integer';
  if (/^(FLOAT|DOUBLE|REAL)$/.test(t) || t.startsWith('DECIMAL')) return 'number';
  if (t === 'BOOLEAN') return 'boolean';
  if (t.startsWith('TIMESTAMP') || t === 'DATE') return 'timestamp';
  return 'string';
}

/** Quotes a value we generated ourselves (file paths built from validated ids) as an SQL string literal. */
export function sqlLiteral(s: string): string {
  return `'${s.replaceAll("'", "''")}'`;
}

/** Quotes an identifier; callers only pass names already checked against a source's schema. */
export function sqlIdent(s: string): string {
  return `"${s.replaceAll('"', '""')}"`;
}

function toCell(v: unknown): Cell {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'string') return v;
  return String(v);
}

export interface DuckOptions {
  /** DuckDB's buffer-manager limit (default 1GB); a writer that must stay small passes less. */
  memoryLimit?: string;
  threads?: number;
  /** Where DuckDB spills when a query outgrows the memory limit; the instance takes a subdirectory of its own (see `ownTempDir`). */
  tempDirectory?: string;
  /** The most it may spill there (DuckDB's default: 90% of the free space). */
  maxTempSize?: string;
  /**
   * Sandboxes the instance for SQL built from customer input: only these directories may be read or written,
   * no extension is installed or loaded on demand (Parquet is loaded up front), and the configuration is locked
   * so a statement cannot undo any of it.
   */
  allowedDirectories?: string[];
  /**
   * Keeps Parquet footers in memory, read once per file rather than once per query (data files are immutable:
   * a sync writes a new one). The cache lives inside `memoryLimit`, least recently used evicted first.
   */
  parquetMetadataCache?: boolean;
}

/** A connection of a `Duck`'s, for callers that stream or run several statements; `release` closes it. */
export interface DuckLease {
  readonly conn: DuckDBConnection;
  release(): void;
}

/** The spill directories this thread made and still uses. */
const ownDirs = new Set<string>();

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A new spill directory under `base` for one DuckDB instance: instances name their spill files alike, so they
 * must not share one. On the way, this host's directories of processes that are gone (a crash, an OOM kill
 * while spilling) are removed, and so are this thread's own from before a restart that kept its pid (as a
 * container's does); other hosts' directories on a shared volume are left alone.
 */
export async function ownTempDir(base: string): Promise<string> {
  await mkdir(base, { recursive: true });
  const host = hostname().replace(/[^A-Za-z0-9.]/g, '_');
  for (const name of await readdir(base)) {
    const m = /^duckdb-(.+)-(\d+)-(\d+)-[A-Za-z0-9]{6}$/.exec(name);
    if (!m || m[1] !== host) continue;
    const [pid, thread] = [Number(m[2]), Number(m[3])];
    const stale = pid === process.pid ? thread === threadId && !ownDirs.has(join(base, name)) : !processAlive(pid);
    if (stale) await rm(join(base, name), { recursive: true, force: true });
  }
  const dir = await mkdtemp(join(base, `duckdb-${host}-${process.pid}-${threadId}-`));
  ownDirs.add(dir);
  return dir;
}

/** Removes a directory from `ownTempDir` once its instance is closed. */
export function releaseTempDir(dir: string | null): void {
  if (!dir) return;
  ownDirs.delete(dir);
  rmSync(dir, { recursive: true, force: true });
}

/** DuckDB settings for spilling, from `DuckOptions`. */
export function spillSettings(dir: string | null, maxTempSize: string | undefined): Record<string, string> {
  return { ...(dir ? { temp_directory: dir } : {}), ...(maxTempSize ? { max_temp_directory_size: maxTempSize } : {}) };
}

/**
 * One DuckDB instance per process, and the only place that opens one and sets its settings (memory, threads,
 * spilling, sandbox). Each query gets its own connection, so queries run concurrently.
 */
export class Duck {
  private readonly instance: DuckDBInstance;
  /** This instance's own spill directory, removed on close. */
  readonly tempDirectory: string | null;
  private readonly open = new Set<DuckDBConnection>();

  private constructor(instance: DuckDBInstance, tempDirectory: string | null) {
    this.instance = instance;
    this.tempDirectory = tempDirectory;
  }

  static async open(opts: DuckOptions = {}): Promise<Duck> {
    const temp = opts.tempDirectory ? await ownTempDir(opts.tempDirectory) : null;
    let instance: DuckDBInstance | null = null;
    try {
      instance = await DuckDBInstance.create(':memory:', {
        memory_limit: opts.memoryLimit ?? '1GB',
        ...(opts.threads ? { threads: String(opts.threads) } : {}),
        ...spillSettings(temp, opts.maxTempSize),
        ...(opts.allowedDirectories ? { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' } : {}),
      });
      await configure(instance, opts);
      return new Duck(instance, temp);
    } catch (err) {
      instance?.closeSync();
      releaseTempDir(temp);
      throw err;
    }
  }

  /** A new connection, interrupted when `signal` aborts (its statement then rejects); the caller releases it. */
  async connect(signal?: AbortSignal): Promise<DuckLease> {
    signal?.throwIfAborted();
    const conn = await this.instance.connect();
    this.open.add(conn);
    const onAbort = () => conn.interrupt();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) {
      // Aborted while connecting: the listener came too late to interrupt anything.
      signal.removeEventListener('abort', onAbort);
      this.open.delete(conn);
      conn.closeSync();
      signal.throwIfAborted();
    }
    return {
      conn,
      release: () => {
        signal?.removeEventListener('abort', onAbort);
        this.open.delete(conn);
        conn.closeSync();
      },
    };
  }

  /** Runs one statement on its own connection; aborting `signal` interrupts it (the promise then rejects). */
  async run(sql: string, params: DuckDBValue[] = [], opts: { signal?: AbortSignal } = {}): Promise<QueryResult> {
    const { conn, release } = await this.connect(opts.signal);
    try {
      const reader = await conn.runAndReadAll(sql, params);
      const names = reader.columnNames();
      const types = reader.columnTypes().map((t) => t.toString());
      const columns = names.map((name, i) => ({ name, type: apiTypeOf(types[i] ?? 'VARCHAR') }));
      const rows = reader.getRowObjectsJson().map((r) => {
        const out: Record<string, Cell> = {};
        for (const [i, name] of names.entries()) {
          const v = toCell(r[name]);
          const t = columns[i]!.type;
          out[name] = (t === 'integer' || t === 'number') && typeof v === 'string' ? Number(v) : v;
        }
        return out;
      });
      return { columns, rows };
    } finally {
      release();
    }
  }

  /** Stops the statements still running, then closes the instance and removes its spill directory. */
  close(): void {
    for (const conn of this.open) conn.interrupt();
    this.instance.closeSync();
    releaseTempDir(this.tempDirectory);
  }
}

/** The instance-wide settings that take SQL: the Parquet cache, and the sandbox last, since it locks the rest. */
async function configure(instance: DuckDBInstance, opts: DuckOptions): Promise<void> {
  if (!opts.allowedDirectories && !opts.parquetMetadataCache) return;
  const conn = await instance.connect();
  try {
    if (opts.allowedDirectories) await conn.run('LOAD parquet');
    if (opts.parquetMetadataCache) await conn.run('SET GLOBAL parquet_metadata_cache = true');
    if (opts.allowedDirectories) {
      const dirs = opts.allowedDirectories.map((d) => sqlLiteral(resolve(d) + sep));
      await conn.run(`SET allowed_directories = [${dirs.join(', ')}]`);
      await conn.run('SET enable_external_access = false');
      await conn.run('SET lock_configuration = true');
    }
  } finally {
    conn.closeSync();
  }
}
