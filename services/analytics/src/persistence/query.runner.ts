import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { Duck, apiTypeOf, sqlIdent, sqlLiteral, type Cell, type DatasetColumn } from '@dap/datasets';
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
  /** Per output position: whether it is a computed measure, whose doubles are rounded (see `computedDouble`). */
  computed?: readonly boolean[];
}

/** A streamed or exported result: no time limit (it ran within one as a report), stopped by the signal. */
export interface StreamOptions {
  signal?: AbortSignal;
  computed?: readonly boolean[];
}

const TIME_TYPES = /^(TIMESTAMP|DATE)/;

/** A Parquet file's row groups: their rows, and per column (by its path in the schema) compressed bytes and min/max as text. */
export type ParquetLayout = { id: number; rows: number; columns: Record<string, { bytes: number; min: string | null; max: string | null }> }[];

interface PlanNode {
  name: string;
  children?: PlanNode[];
}

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

/**
 * A double a measure computed (sum, avg, quantiles) to 15 significant digits, the most a double always
 * holds: the digits past those are noise from the order the values were added in (318.34000000000003),
 * which even differs between runs when DuckDB sums in parallel.
 */
export function computedDouble(v: number): number {
  return Number.isFinite(v) && v !== 0 ? Number(v.toPrecision(15)) : v;
}

/** A FLOAT (32-bit) value as the shortest decimal that reads back as the same float: 0.1, not 0.10000000149011612. */
export function shortestFloat(v: number): number {
  if (!Number.isFinite(v) || v === 0) return v;
  for (let p = 1; p < 9; p++) {
    const n = Number(v.toPrecision(p));
    if (Math.fround(n) === v) return n;
  }
  return Number(v.toPrecision(9));
}

/** `318.30` → `318.3`, `-0.00` → `0`: the decimal as JavaScript prints the number it equals. */
function canonicalDecimal(text: string): string {
  const t = text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
  return t === '-0' ? '0' : t;
}

/**
 * A DECIMAL cell (DuckDB gives its exact digits): a JSON number when that number is exactly the decimal,
 * else the exact digits as a string, as for integers past 2^53. A sum of money stays exact either way.
 */
export function exactDecimal(v: unknown): Cell {
  if (typeof v !== 'string') return typeof v === 'number' ? v : anyCell(v);
  const n = Number(v);
  return Number.isFinite(n) && String(n) === canonicalDecimal(v) ? n : v;
}

const toNumber = (v: unknown): Cell => (typeof v === 'number' ? v : typeof v === 'string' || typeof v === 'bigint' ? Number(v) : anyCell(v));

/**
 * How one column's JSON values become API cells, chosen once per column (a 10,000-row result would
 * otherwise classify every cell's type again). `computed` marks a measure's column.
 */
export function cellConverter(duckType: string, computed = false): (v: unknown) => Cell {
  const api = apiTypeOf(duckType);
  if (api === 'integer') return exactInteger;
  if (api === 'number') {
    if (duckType.toUpperCase().startsWith('DECIMAL')) return exactDecimal;
    if (/^(FLOAT|REAL)$/i.test(duckType)) return (v) => (typeof v === 'number' ? shortestFloat(v) : toNumber(v));
    // A stored double (a dimension, or min/max) is returned as stored; only arithmetic makes noise.
    return computed ? (v) => (typeof v === 'number' ? computedDouble(v) : toNumber(v)) : toNumber;
  }
  if (TIME_TYPES.test(duckType)) return (v) => (typeof v === 'string' ? isoOf(v) : anyCell(v));
  return anyCell;
}

/** What node-api's JSON converter makes of a value it read (its `JsonDuckDBValueConverter`), per type it handles alike. */
const JSON_NUMBER_TYPES = /^(TINYINT|SMALLINT|INTEGER|UTINYINT|USMALLINT|UINTEGER)$/;
const JSON_STRING_TYPES = /^(VARCHAR|BIGINT|UBIGINT|HUGEINT|UHUGEINT|DATE|TIME|TIMESTAMP|TIMESTAMP_S|TIMESTAMP_MS|TIMESTAMP_NS|TIMESTAMP WITH TIME ZONE|UUID|DECIMAL\(\d+,\d+\))$/;

/**
 * How one column's values, as DuckDB's vectors hold them (numbers, bigints, strings, value objects), become API
 * cells: the same cells as `cellConverter` makes of node-api's JSON values, without building those first. Null
 * for a type this does not know (nested types): such a result takes node-api's JSON conversion.
 */
export function rawCellConverter(duckType: string, computed = false): ((v: unknown) => Cell) | null {
  const t = duckType.toUpperCase();
  const viaJson = cellConverter(duckType, computed);
  if (t === 'BIGINT' || t === 'UBIGINT' || t === 'HUGEINT' || t === 'UHUGEINT') {
    // exactInteger of the digits, without printing and parsing them: Number() rounds a bigint as it rounds its digits.
    return (v) => {
      if (typeof v !== 'bigint') return v === null || v === undefined ? null : viaJson(String(v));
      const n = Number(v);
      return Number.isSafeInteger(n) ? n : String(v);
    };
  }
  if (JSON_NUMBER_TYPES.test(t)) return (v) => (typeof v === 'number' ? v : v === null || v === undefined ? null : viaJson(Number(v)));
  if (t === 'DOUBLE' || t === 'FLOAT') {
    // node-api's JSON gives a finite double as it is and the others as text ('NaN'), which the converter reads back.
    return (v) => (v === null || v === undefined ? null : viaJson(typeof v === 'number' && Number.isFinite(v) ? v : String(v)));
  }
  if (t === 'BOOLEAN') return (v) => (v === null || v === undefined ? null : Boolean(v));
  if (JSON_STRING_TYPES.test(t)) return (v) => (v === null || v === undefined ? null : viaJson(String(v)));
  return null;
}

/** The part of a DuckDB data chunk the conversion reads. */
interface ResultChunk {
  readonly rowCount: number;
  getColumnVector(i: number): { getItem(i: number): unknown };
}

/** The part of a DuckDB result `readRows` reads. */
interface RowSource {
  fetchAllChunks(): Promise<ResultChunk[]>;
  getRowsJson(): Promise<unknown[][]>;
}

/** Per column, its `rawCellConverter`; null when a column has none (the result then takes node-api's JSON values). */
function directConverters(duckTypes: readonly string[], computed?: readonly boolean[]): ((v: unknown) => Cell)[] | null {
  const raw = duckTypes.map((t, i) => rawCellConverter(t, computed?.[i] ?? false));
  return raw.every((f) => f !== null) ? (raw as ((v: unknown) => Cell)[]) : null;
}

/** One chunk's rows as positional API cells, read straight from its vectors. */
function chunkRows(chunk: ResultChunk, convert: readonly ((v: unknown) => Cell)[]): Cell[][] {
  const width = convert.length;
  const vectors = Array.from({ length: width }, (_, i) => chunk.getColumnVector(i));
  const rows = new Array<Cell[]>(chunk.rowCount);
  for (let r = 0; r < chunk.rowCount; r++) {
    const row = new Array<Cell>(width);
    for (let i = 0; i < width; i++) row[i] = convert[i]!(vectors[i]!.getItem(r));
    rows[r] = row;
  }
  return rows;
}

/**
 * Every row of a result as positional API cells: straight from DuckDB's vectors where every column's type has a
 * `rawCellConverter` (a 10,000-row page otherwise builds 10,000 rows of node-api JSON values first, and prints
 * each BIGINT to parse it back); through node-api's JSON values otherwise.
 */
async function readRows(result: RowSource, duckTypes: readonly string[], computed?: readonly boolean[]): Promise<Cell[][]> {
  const direct = directConverters(duckTypes, computed);
  if (direct) return (await result.fetchAllChunks()).flatMap((chunk) => chunkRows(chunk, direct));
  const width = duckTypes.length;
  const convert = duckTypes.map((t, i) => cellConverter(t, computed?.[i] ?? false));
  // Converted in place: the row arrays are ours, and a large result is not copied again.
  const rows = (await result.getRowsJson()) as Cell[][];
  for (const r of rows) for (let i = 0; i < width; i++) r[i] = convert[i]!(r[i]);
  return rows;
}

/** How a column is written to a Parquet export: doubles a measure computed rounded like the JSON, 128-bit integers (which Parquet lacks, and DuckDB would write as lossy doubles) as exact decimals. */
function parquetColumn(name: string, duckType: string, computed: boolean): string {
  const col = sqlIdent(name);
  const t = duckType.toUpperCase();
  if (computed && t === 'DOUBLE') return `CAST(printf('%.15g', ${col}) AS DOUBLE) AS ${col}`;
  if (t === 'HUGEINT' || t === 'UHUGEINT') return `CAST(${col} AS DECIMAL(38, 0)) AS ${col}`;
  return col;
}

/**
 * Runs analytics SQL on a sandboxed `Duck` of its own, and stops a query when it runs past its time limit or
 * the service stops. One connection per query, so queries run side by side.
 */
export class QueryRunner {
  private readonly duck: Duck;
  /** The one directory DuckDB may write: Parquet exports on their way to the client. */
  private readonly exportDir: string;

  private constructor(duck: Duck, exportDir: string) {
    this.duck = duck;
    this.exportDir = exportDir;
  }

  /** This instance's own spill directory (under DUCKDB_TEMP_DIR), removed on close. */
  get tempDirectory(): string | null {
    return this.duck.tempDirectory;
  }

  /**
   * `datasetDir` is the only directory queries may read (defence in depth behind the compiler). A query that
   * outgrows `memoryLimit` spills under `tempDirectory` (a writable volume; the working directory is read-only).
   * Parquet footers are cached (query.runner.memory.test.ts checks the cache stays within the memory limit).
   */
  static async open(opts: { datasetDir: string; memoryLimit: string; threads?: number; tempDirectory?: string; maxTempSize?: string }): Promise<QueryRunner> {
    const exportDir = mkdtempSync(join(tmpdir(), 'dap-analytics-export-'));
    try {
      const { datasetDir, ...settings } = opts;
      const duck = await Duck.open({ ...settings, allowedDirectories: [datasetDir, exportDir], parquetMetadataCache: true });
      return new QueryRunner(duck, exportDir);
    } catch (err) {
      rmSync(exportDir, { recursive: true, force: true });
      throw err;
    }
  }

  /** A connection that is interrupted when `opts.signal` aborts or `timeoutMs` passes; `stopped` says why. */
  private async connect(opts: { timeoutMs?: number; signal?: AbortSignal }) {
    if (opts.signal?.aborted) throw new QueryInterruptedError('aborted', 'the query was cancelled');
    const interrupt = new AbortController();
    let stopped: QueryInterruptedError | null = null;
    const stop = (err: QueryInterruptedError) => {
      stopped ??= err;
      interrupt.abort();
    };
    const timer =
      opts.timeoutMs === undefined
        ? undefined
        : setTimeout(
            () =>
              stop(
                new QueryInterruptedError(
                  'timeout',
                  `the query ran longer than its ${opts.timeoutMs} ms time limit and was stopped; narrow it with filters or a shorter time range`,
                ),
              ),
            opts.timeoutMs,
          );
    const onAbort = () => stop(new QueryInterruptedError('aborted', 'the query was cancelled because the service is shutting down; run it again'));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    };
    let lease;
    try {
      lease = await this.duck.connect(interrupt.signal);
    } catch (err) {
      done();
      throw stopped ?? err;
    }
    const { conn, release } = lease;
    return {
      conn,
      stopped: () => stopped,
      close: () => {
        done();
        release();
      },
    };
  }

  async run(sql: string, params: ParamValue[], opts: RunOptions): Promise<TableResult> {
    const c = await this.connect(opts);
    try {
      const result = await c.conn.run(sql, params);
      const duckTypes = result.columnTypes().map((t) => t.toString());
      const rows = await readRows(result, duckTypes, opts.computed);
      const stopped = c.stopped();
      if (stopped) throw stopped;
      const columns = result.columnNames().map((name, i) => ({ name, type: apiTypeOf(duckTypes[i] ?? 'VARCHAR') }));
      return { columns, rows };
    } catch (err) {
      throw c.stopped() ?? err;
    } finally {
      c.close();
    }
  }

  /**
   * Streams a result in DuckDB's chunks (up to 2,048 rows each), converted like `run`, so memory stays
   * bounded however many rows there are. The first part always comes, with the columns, even when empty;
   * leaving the loop early closes the query.
   */
  async *stream(sql: string, params: ParamValue[], opts: StreamOptions = {}): AsyncGenerator<TableResult> {
    const c = await this.connect(opts);
    try {
      const result = await c.conn.stream(sql, params);
      const duckTypes = result.columnTypes().map((t) => t.toString());
      const columns = result.columnNames().map((name, i) => ({ name, type: apiTypeOf(duckTypes[i] ?? 'VARCHAR') }));
      let first = true;
      const direct = directConverters(duckTypes, opts.computed);
      if (direct) {
        for (let chunk = await result.fetchChunk(); chunk && chunk.rowCount > 0; chunk = await result.fetchChunk()) {
          first = false;
          yield { columns, rows: chunkRows(chunk, direct) };
        }
      } else {
        const convert = duckTypes.map((t, i) => cellConverter(t, opts.computed?.[i] ?? false));
        const width = convert.length;
        for await (const chunk of result.yieldRowsJson()) {
          const rows = chunk as unknown[][] as Cell[][];
          for (const r of rows) for (let i = 0; i < width; i++) r[i] = convert[i]!(r[i]);
          first = false;
          yield { columns, rows };
        }
      }
      const stopped = c.stopped();
      if (stopped) throw stopped;
      if (first) yield { columns, rows: [] };
    } catch (err) {
      throw c.stopped() ?? err;
    } finally {
      c.close();
    }
  }

  /**
   * Writes a result to a new Parquet file in the runner's export directory and returns its path; the caller
   * sends it and then calls `discard`. DuckDB writes row group by row group, so memory stays bounded.
   */
  async toParquet(sql: string, params: ParamValue[], opts: StreamOptions = {}): Promise<string> {
    const c = await this.connect(opts);
    const file = join(this.exportDir, `${randomUUID()}.parquet`);
    try {
      // The result's types (known only once the parameters are bound); LIMIT 0 plans it without reading data.
      const shape = await c.conn.runAndReadAll(`SELECT * FROM (${sql}) AS q LIMIT 0`, params);
      const types = shape.columnTypes().map((t) => t.toString());
      const cols = shape.columnNames().map((name, i) => parquetColumn(name, types[i] ?? 'VARCHAR', opts.computed?.[i] ?? false));
      // The outer projection keeps the inner ORDER BY's order (DuckDB preserves insertion order).
      await c.conn.run(`COPY (SELECT ${cols.join(', ')} FROM (${sql}) AS q) TO ${sqlLiteral(file)} (FORMAT parquet, COMPRESSION zstd)`, params);
      const stopped = c.stopped();
      if (stopped) throw stopped;
      return file;
    } catch (err) {
      await rm(file, { force: true });
      throw c.stopped() ?? err;
    } finally {
      c.close();
    }
  }

  /** A data file's columns with their API types, as ingestion recorded them. */
  async describe(file: string): Promise<DatasetColumn[]> {
    const res = await this.run('DESCRIBE SELECT * FROM read_parquet($1)', [file], { timeoutMs: 30_000 });
    return res.rows.map((r) => ({ name: String(r[0]), type: apiTypeOf(String(r[1])) }));
  }

  /** A Parquet file's row groups and the compressed size and min/max statistics of each column in them, from its footer. */
  async layout(file: string): Promise<ParquetLayout> {
    const res = await this.run(
      'SELECT row_group_id, row_group_num_rows, path_in_schema, total_compressed_size, stats_min, stats_max FROM parquet_metadata($1) ORDER BY row_group_id',
      [file],
      { timeoutMs: 30_000 },
    );
    const groups: ParquetLayout = [];
    for (const [id, rows, path, bytes, min, max] of res.rows) {
      let g = groups[groups.length - 1];
      if (!g || g.id !== Number(id)) groups.push((g = { id: Number(id), rows: Number(rows), columns: {} }));
      g.columns[String(path)] = { bytes: Number(bytes), min: min === null ? null : String(min), max: max === null ? null : String(max) };
    }
    return groups;
  }

  /** DuckDB's physical plan of a statement, without running it: one operator per entry, children indented. */
  async explain(sql: string, params: ParamValue[]): Promise<string[]> {
    const res = await this.run(`EXPLAIN (FORMAT json) ${sql}`, params, { timeoutMs: 30_000 });
    const plan = JSON.parse(String(res.rows[0]?.[1] ?? '[]')) as PlanNode[];
    const out: string[] = [];
    const walk = (node: PlanNode, depth: number) => {
      out.push(`${'  '.repeat(depth)}${node.name}`);
      for (const child of node.children ?? []) walk(child, depth + 1);
    };
    for (const node of plan) walk(node, 0);
    return out;
  }

  /** Removes a file `toParquet` wrote. */
  async discard(file: string): Promise<void> {
    if (resolve(file).startsWith(this.exportDir + sep)) await rm(file, { force: true });
  }

  close(): void {
    this.duck.close();
    rmSync(this.exportDir, { recursive: true, force: true });
  }
}
