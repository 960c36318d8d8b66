import { DuckDBInstance, type DuckDBValue } from '@duckdb/node-api';

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
  /** Where DuckDB spills when a query outgrows the memory limit (default: none for an in-memory database). */
  tempDirectory?: string;
}

/** One DuckDB instance per process; each query gets its own connection so queries run concurrently. */
export class Duck {
  private readonly instance: DuckDBInstance;

  private constructor(instance: DuckDBInstance) {
    this.instance = instance;
  }

  static async open(opts: DuckOptions = {}): Promise<Duck> {
    const instance = await DuckDBInstance.create(':memory:', {
      memory_limit: opts.memoryLimit ?? '1GB',
      ...(opts.threads ? { threads: String(opts.threads) } : {}),
      ...(opts.tempDirectory ? { temp_directory: opts.tempDirectory } : {}),
    });
    return new Duck(instance);
  }

  /** Runs one statement on its own connection; aborting `signal` interrupts it (the promise then rejects). */
  async run(sql: string, params: DuckDBValue[] = [], opts: { signal?: AbortSignal } = {}): Promise<QueryResult> {
    opts.signal?.throwIfAborted();
    const conn = await this.instance.connect();
    const onAbort = () => conn.interrupt();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
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
      opts.signal?.removeEventListener('abort', onAbort);
      conn.closeSync();
    }
  }

  close(): void {
    this.instance.closeSync();
  }
}
