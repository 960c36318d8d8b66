import { open, rm, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { sqlIdent as id, sqlLiteral as q, type DatasetStore, type IngestResult, type StagedFormat } from '@dap/datasets';
import type { Column } from '@dap/contracts';
import type { Logger } from '@dap/logger';
import type { StagedColumn } from '../connectors/connector.ts';
import { scanCsv } from '../connectors/csv.connector.ts';
import { duckReason, isCsvLineError, isDuckError } from '../connectors/duck-errors.ts';
import { fieldNameProblem, MAX_COLUMNS } from '../connectors/rows.ts';
import { csvReader, refuseRagged, sniffCsv, type CsvDialect, type DuckColumn } from './csv-dialect.ts';
import { fitQuery, isStrictError, readColumns, strictSelect, widen, type ReadColumn } from './csv-strict.ts';
import { LoadError } from './load-error.ts';
import { detectTimestampFamily, TIMESTAMP_FAMILIES, type TimestampFamily } from './timestamp-formats.ts';

export { LoadError };

/** DuckDB's default CSV sample; a value past it that does not fit the sampled type makes the loader read the whole file again (copyCsv). */
export const CSV_SAMPLE_ROWS = 20_480;
const TIMESTAMP_SAMPLE_ROWS = 2_000;
const PARQUET = 'FORMAT parquet, COMPRESSION zstd';

export interface LoadRequest {
  accountId: string;
  sourceId: string;
  format: StagedFormat;
  /** Known column types (database pulls); without them types are inferred from the data. */
  columns?: StagedColumn[];
  /** Field names come from documents and must follow the uploaded-JSON rules. */
  checkFieldNames?: boolean;
  signal?: AbortSignal;
  /**
   * Sees the new file and its columns before it is published: throwing leaves the published data as it was;
   * returning another file (one of `newFile`'s) publishes that one instead.
   */
  beforePublish?: (ctx: { file: string; schema: Column[]; newFile: () => string }) => Promise<string | void>;
}

/**
 * Turns a staged file into the source's Parquet data with DuckDB, in as few passes as the data allows:
 *
 * - CSV: DuckDB's sniffer reads a sample for the dialect and types, and one COPY reads the file with those
 *   settings, checked so that a later value that contradicts the sample is never changed silently, as
 *   DuckDB's casts would (csv-strict.ts). A value that fails a check makes the loader measure every value
 *   and widen those columns; one DuckDB refuses makes it sniff the whole file. Either way the COPY runs
 *   again, and a mixed column widens instead of failing.
 * - JSON/NDJSON: read with types inferred from every record, or with the origin's own types (databases).
 * - Then every column is made one of the API's scalar types: nested values become JSON text, zoned
 *   timestamps become UTC, and text columns whose every value is a timestamp in a common format become
 *   timestamps. Only when something changes is the Parquet file rewritten (a cheap columnar pass).
 *
 * Loads run one at a time per process: DuckDB's memory (DUCKDB_MEMORY_LIMIT) is shared, and one big COPY
 * at a time, on a bounded number of threads when the file is big (INGEST_PARALLEL_MAX_BYTES,
 * INGEST_LARGE_CSV_THREADS), is what keeps the process small. Row order is kept.
 */
export class DatasetLoader {
  private readonly store: DatasetStore;
  private readonly parallelMaxBytes: number;
  private readonly largeCsvThreads: number;
  private readonly logger: Logger;
  private queue: Promise<unknown> = Promise.resolve();
  private ready: Promise<void> | null = null;

  constructor(store: DatasetStore, opts: { parallelMaxBytes: number; largeCsvThreads?: number; logger: Logger }) {
    this.store = store;
    this.parallelMaxBytes = opts.parallelMaxBytes;
    this.largeCsvThreads = opts.largeCsvThreads ?? 1;
    this.logger = opts.logger;
  }

  load(req: LoadRequest): Promise<IngestResult> {
    const run = this.queue.then(() => this.loadNow(req));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async loadNow(req: LoadRequest): Promise<IngestResult> {
    const { store } = this;
    req.signal?.throwIfAborted();
    // Timestamps without an offset are UTC, never the server's zone.
    this.ready ??= store.duck.run(`SET TimeZone = 'UTC'`).then(() => undefined);
    await this.ready;
    const staged = store.stagingFile(req.accountId, req.sourceId, req.format);
    const size = (await stat(staged)).size;
    // A database table may be empty and still has its columns; a file with no bytes has nothing.
    if (req.columns && !req.columns.length) throw new LoadError('the query returned no columns');
    if (size === 0 && !req.columns) throw new LoadError('the data is empty');
    // Every DuckDB thread holds its own read and write buffers (and keeping row order buffers chunks that
    // finish early): a small file uses them all; a big CSV INGEST_LARGE_CSV_THREADS, a big JSON file one.
    const threads = req.format === 'csv' ? this.largeCsvThreads : 1;
    await store.duck.run(size <= this.parallelMaxBytes ? 'RESET threads' : `SET threads = ${threads}`);
    const written: string[] = [];
    const target = () => {
      const f = store.newDataFile(req.accountId, req.sourceId);
      written.push(f);
      return f;
    };
    try {
      const raw = target();
      const t0 = performance.now();
      if (req.format === 'csv') await this.copyCsv(staged, raw, req.signal);
      else await this.copyJson(staged, req.format, req.columns, raw, req.signal);
      const t1 = performance.now();
      const final = await this.normalize(raw, target, req);
      const t2 = performance.now();
      const chosen = req.beforePublish ? ((await req.beforePublish({ file: final, schema: await store.describeFile(final), newFile: target })) ?? final) : final;
      const published = await store.publish(req.accountId, req.sourceId, chosen);
      const ms = (a: number, b: number) => Math.round(b - a);
      this.logger.debug(
        { sourceId: req.sourceId, format: req.format, bytes: size, copyMs: ms(t0, t1), normalizeMs: ms(t1, t2), publishMs: ms(t2, performance.now()) },
        'dataset loaded',
      );
      return published;
    } catch (err) {
      const current = await store.currentFile(req.accountId, req.sourceId).catch(() => null);
      for (const f of written) if (!current || basename(current) !== basename(f)) await rm(f, { force: true });
      throw err;
    }
  }

  // ------------------------------------------------------------------ CSV

  /**
   * Sniffs a sample, then one COPY with the sniffed types, checked (csv-strict.ts). When DuckDB itself
   * cannot read a value with those settings: if it was a timestamp (outside TIMESTAMP_NS's range), the
   * COPY runs again with timestamps read as text; else, or if that fails too, the whole file is sniffed and
   * the COPY runs once more (timestamps as text). A failure then is the customer's.
   */
  private async copyCsv(file: string, out: string, signal?: AbortSignal): Promise<void> {
    const header = await this.headerOf(file);
    /** DuckDB's own error comes back to choose the next try; anything else (ours, an abort) is thrown. */
    const duckFailure = (err: unknown): Error => {
      if (!isDuckError(err) || signal?.aborted) throw err;
      this.logger.debug({ reason: (err as Error).message.split('\n')[0] }, 'CSV value that DuckDB cannot read with these settings');
      return err as Error;
    };
    const attempt = async (dialect: CsvDialect, textTimestamps: boolean): Promise<Error | null> => {
      try {
        await this.copyCsvWith(file, out, dialect, textTimestamps, signal);
        return null;
      } catch (err) {
        await rm(out, { force: true });
        return duckFailure(err);
      }
    };
    let sampled: CsvDialect | null = null;
    let sampledFailure: Error | null = null;
    try {
      sampled = await this.sniff(file, CSV_SAMPLE_ROWS, header, signal);
    } catch (err) {
      duckFailure(err);
    }
    if (sampled) {
      sampledFailure = await attempt(sampled, false);
      // Most likely a timestamp outside TIMESTAMP_NS's range (about 1677–2262): the same settings, timestamps as text.
      if (sampledFailure?.message.includes('TIMESTAMP_NS')) sampledFailure = await attempt(sampled, true);
      if (!sampledFailure) return;
    }
    let failure: Error | null;
    try {
      failure = await attempt(await this.sniff(file, -1, header, signal), true);
    } catch (err) {
      // The whole file defeats the sniffer (a quote never closed past the sample does): the read with the
      // sample's dialect, if there was one, says which line is wrong.
      failure = sampledFailure && isCsvLineError(sampledFailure) ? sampledFailure : duckFailure(err);
    }
    if (failure) throw new LoadError(`the CSV could not be parsed: ${duckReason(failure, [this.store.root])}`);
  }

  /**
   * One COPY with the dialect's types, checked. When a check fails (a value the cast would change or
   * refuse), every value of the checked columns is measured, and the COPY runs once more with each
   * column's exact type.
   */
  private async copyCsvWith(file: string, out: string, dialect: CsvDialect, textTimestamps: boolean, signal?: AbortSignal): Promise<void> {
    const columns = readColumns(dialect.columns, dialect.timestampFormat, textTimestamps);
    try {
      return await this.copyColumns(file, out, dialect, columns, signal);
    } catch (err) {
      if (!isStrictError(err) || signal?.aborted) throw err;
      this.logger.debug('CSV value past the sample does not fit its column; measuring every value');
      await rm(out, { force: true });
    }
    return this.copyColumns(file, out, dialect, await this.fitColumns(file, dialect, columns, signal), signal);
  }

  private async copyColumns(file: string, out: string, dialect: CsvDialect, columns: ReadColumn[], signal?: AbortSignal): Promise<void> {
    const { inner, outer } = strictSelect(columns, normalizedExpr);
    await this.store.duck.run(`COPY (SELECT ${outer} FROM (SELECT ${inner} FROM ${csvReader(file, dialect, columns)})) TO ${q(out)} (${PARQUET})`, [], { signal });
  }

  /** Reads the checked columns' every value as text (one aggregate, no output) and widens what needs it. */
  private async fitColumns(file: string, dialect: CsvDialect, columns: ReadColumn[], signal?: AbortSignal): Promise<ReadColumn[]> {
    const asText = columns.map((c) => ({ name: c.name, type: 'VARCHAR', kind: null }));
    const sql = fitQuery(columns, csvReader(file, dialect, asText));
    if (!sql) return columns;
    const res = await this.store.duck.run(sql, [], { signal });
    const widened = widen(columns, res.rows[0] ?? {});
    this.logger.debug({ asText: widened.filter((c, i) => columns[i]!.kind && c.type === 'VARCHAR').length }, 'CSV columns measured');
    return widened;
  }

  private async headerOf(file: string): Promise<string> {
    const fh = await open(file, 'r');
    try {
      const buf = Buffer.alloc(256 * 1024);
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
      const text = buf.subarray(0, bytesRead).toString('utf8');
      if (text.includes('\u0000')) throw new LoadError('the CSV contains NUL characters; it looks like a binary file');
      if (!text.trim()) throw new LoadError('the CSV is empty');
      const { headerEnd } = scanCsv(text, text.length);
      return headerEnd < 0 ? text : text.slice(0, headerEnd);
    } finally {
      await fh.close();
    }
  }

  private async sniff(file: string, sample: number, header: string, signal?: AbortSignal): Promise<CsvDialect> {
    const dialect = await sniffCsv(this.store.duck, file, sample, signal);
    refuseRagged(dialect, header);
    return dialect;
  }

  // ------------------------------------------------------------------ JSON

  private async copyJson(file: string, format: StagedFormat, columns: StagedColumn[] | undefined, out: string, signal?: AbortSignal): Promise<void> {
    const shape = format === 'json' ? 'array' : 'newline_delimited';
    const reader = columns
      ? `read_json(${q(file)}, format = ${q(shape)}, records = true, columns = {${columns.map((c) => `${q(c.name)}: ${q(c.type)}`).join(', ')}})`
      : `read_json(${q(file)}, format = ${q(shape)}, records = true, sample_size = -1)`;
    await this.store.duck.run(`COPY (SELECT * FROM ${reader}) TO ${q(out)} (${PARQUET})`, [], { signal });
  }

  // ------------------------------------------------------------------ normalization

  private async describe(file: string): Promise<DuckColumn[]> {
    const res = await this.store.duck.run(`DESCRIBE SELECT * FROM read_parquet(${q(file)})`);
    return res.rows.map((r) => ({ name: String(r.column_name), type: String(r.column_type) }));
  }

  private async normalize(raw: string, target: () => string, req: LoadRequest): Promise<string> {
    const columns = await this.describe(raw);
    if (columns.length > MAX_COLUMNS) throw new LoadError(`the data has ${columns.length} fields; at most ${MAX_COLUMNS} are allowed`);
    if (req.checkFieldNames) {
      for (const c of columns) {
        const problem = fieldNameProblem(c.name);
        if (problem) throw new LoadError(problem);
      }
    }
    const exprs = columns.map((c) => ({ column: c, expr: normalizedExpr(c) }));
    const families = await this.timestampColumns(raw, columns, req.signal);
    for (const e of exprs) {
      const family = families.get(e.column.name);
      if (family) e.expr = `${TIMESTAMP_FAMILIES[family].expr(id(e.column.name))} AS ${id(e.column.name)}`;
    }
    if (exprs.every((e) => e.expr === id(e.column.name))) return raw;
    const out = target();
    await this.store.duck.run(`COPY (SELECT ${exprs.map((e) => e.expr).join(', ')} FROM read_parquet(${q(raw)})) TO ${q(out)} (${PARQUET})`, [], {
      signal: req.signal,
    });
    await rm(raw, { force: true });
    return out;
  }

  /** Text columns whose every value is a timestamp in one common format: guessed on a sample, proven on all rows. */
  private async timestampColumns(file: string, columns: DuckColumn[], signal?: AbortSignal): Promise<Map<string, TimestampFamily>> {
    const found = new Map<string, TimestampFamily>();
    const text = columns.filter((c) => c.type === 'VARCHAR');
    if (!text.length) return found;
    const sample = await this.store.duck.run(`SELECT ${text.map((c) => id(c.name)).join(', ')} FROM read_parquet(${q(file)}) LIMIT ${TIMESTAMP_SAMPLE_ROWS}`, [], { signal });
    for (const c of text) {
      const values = sample.rows.map((r) => r[c.name]).filter((v): v is string => typeof v === 'string');
      for (const family of detectTimestampFamily(values)) {
        const col = id(c.name);
        const res = await this.store.duck.run(
          `SELECT count(*) FILTER (WHERE ${col} IS NOT NULL AND (NOT regexp_full_match(${col}, ${q(TIMESTAMP_FAMILIES[family].pattern)}) OR ${TIMESTAMP_FAMILIES[family].expr(col)} IS NULL)) AS bad
           FROM read_parquet(${q(file)})`,
          [],
          { signal },
        );
        if (Number(res.rows[0]?.bad) === 0) {
          found.set(c.name, family);
          break;
        }
      }
    }
    return found;
  }
}

/**
 * A TIMESTAMPTZ column as the naive UTC TIMESTAMP the API stores. Both types count microseconds since the
 * epoch in UTC, so the value's own count is the answer: `timezone('UTC', …)` gives the same values but goes
 * through ICU's calendar for each one, which was a third of a typical CSV's load time. Infinities have no
 * count and take the cast.
 */
export function utcTimestamp(col: string): string {
  return `CASE WHEN isfinite(${col}) THEN make_timestamp(epoch_us(${col})) ELSE CAST(${col} AS TIMESTAMP) END`;
}

/**
 * The select expression that turns a column into one of the API's scalar types (or the bare column), named
 * after the column; `col` is what it reads (the column itself unless the query renamed it).
 */
export function normalizedExpr(c: DuckColumn, col: string = id(c.name)): string {
  const name = id(c.name);
  const t = c.type.toUpperCase();
  if (t === 'JSON') return `(${col} ->> '$') AS ${name}`;
  if (t.startsWith('STRUCT') || t.startsWith('MAP') || t.startsWith('UNION') || t.endsWith(']')) return `CAST(to_json(${col}) AS VARCHAR) AS ${name}`;
  if (t === 'TIMESTAMP WITH TIME ZONE') return `${utcTimestamp(col)} AS ${name}`;
  if (t === 'TIMESTAMP_NS' || t === 'TIMESTAMP_MS' || t === 'TIMESTAMP_S') return `CAST(${col} AS TIMESTAMP) AS ${name}`;
  if (t === 'HUGEINT' || t === 'UHUGEINT') return `CAST(${col} AS DOUBLE) AS ${name}`;
  if (/^(TIME|TIME WITH TIME ZONE|INTERVAL|UUID|BLOB|BIT|ENUM.*)$/.test(t)) return `CAST(${col} AS VARCHAR) AS ${name}`;
  return col === name ? col : `${col} AS ${name}`;
}
