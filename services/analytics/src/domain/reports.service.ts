import { access } from 'node:fs/promises';
import { resolve } from 'node:path';
import { newId, type AnalyticsQuery, type CallerContext, type DomainEvent, type Plan, type QueryEstimateDto, type QueryStatistics } from '@dap/contracts';
import { isVanishedFileError, readCurrentFile, type DatasetColumn } from '@dap/datasets';
import type { Logger } from '@dap/logger';
import type { SourceProjectionRepository } from '@dap/mongo';
import { encodeRows, type ReportDoc, type ReportOutcome, type ReportRepository, type ReportSummaryDoc } from '../persistence/report.repository.ts';
import type { ParquetLayout, RunOptions, StreamOptions, TableResult } from '../persistence/query.runner.ts';
import { compileQuery, type CompiledQuery, type ParamValue } from './query-compiler.ts';
import { estimateScan, timeSpan, type ScanEstimate } from './scan-estimate.ts';
import {
  FAILURE,
  exportInterrupted,
  queryFailed,
  queryInterrupted,
  reportDataReplaced,
  reportMadeBeforeExports,
  reportNotExportable,
  reportNotFound,
  sourceHasNoData,
  sourceNotFound,
  sourceNotReady,
  tooManyQueries,
  tooMuchToRead,
} from './errors.ts';
import { reportCompleted, reportFailed } from './events.ts';
import { settleWithin } from './settle.ts';

export interface ReportsLimits {
  /** How long a request waits for its query before answering 202. */
  budgetMs: number;
  timeoutMs: number;
  maxConcurrent: number;
  /** The largest result (serialised) a report stores; MongoDB documents top out at 16 MiB. */
  maxResultBytes: number;
  /** Per plan, the most bytes of data one query may read (see estimateScan); 0 is no limit. */
  maxBytesRead: Readonly<Record<Plan, number>>;
}

export interface ReportsDeps {
  reports: ReportRepository;
  sources: SourceProjectionRepository;
  store: { currentFile(accountId: string, sourceId: string): Promise<string | null> };
  runner: {
    run(sql: string, params: ParamValue[], opts: RunOptions): Promise<TableResult>;
    stream(sql: string, params: ParamValue[], opts: StreamOptions): AsyncGenerator<TableResult>;
    toParquet(sql: string, params: ParamValue[], opts: StreamOptions): Promise<string>;
    discard(file: string): Promise<void>;
    describe(file: string): Promise<DatasetColumn[]>;
    layout(file: string): Promise<ParquetLayout>;
    explain(sql: string, params: ParamValue[]): Promise<string[]>;
  };
  logger: Logger;
  limits: ReportsLimits;
}

/** Per output position, whether it is a measure (its doubles are computed and rounded); the page's count column is not. */
const computedOf = (compiled: CompiledQuery): boolean[] => [...compiled.columns.map((c) => c.role === 'measure'), false];

const isMissingFile = (err: unknown): boolean => (err as NodeJS.ErrnoException | null)?.code === 'ENOENT' || isVanishedFileError(err);

/** What an export that failed tells the client: its data is gone (409), or the service is stopping (503, retry). */
function exportError(id: string, err: unknown): unknown {
  if (isMissingFile(err)) return reportDataReplaced(id);
  if (err instanceof Error && err.name === 'QueryInterruptedError') return exportInterrupted(err);
  return err;
}

/** A compiled query, and how to compile it again for the source's current file if its file goes away. */
interface QueryRun {
  file: string;
  compiled: CompiledQuery;
  current: () => Promise<string | null>;
  read: ScanEstimate;
  recompile: (file: string) => Promise<{ compiled: CompiledQuery; read: ScanEstimate }>;
}

type Outcome =
  | { ok: true; result: TableResult; total: number; rowsJson: string; read: ScanEstimate; durationMs: number }
  | { ok: false; error: string; interrupted: boolean; durationMs: number };

/** The result of a run that stored no report: the result fields of a completed report, none of them still null. */
export type UnsavedResult = { query: Omit<AnalyticsQuery, 'async' | 'dryRun' | 'saveReport'> } & {
  [K in 'columns' | 'rows' | 'rowCount' | 'totalRows' | 'truncated' | 'durationMs' | 'statistics' | 'completedAt']: NonNullable<ReportDoc[K]>;
};

/** A stale report is one older than any query can run, plus this much for the final write. */
const STALE_GRACE_MS = 60_000;

/** Parquet footers kept (files are immutable, so a path's layout never changes); each is a few KiB. */
const LAYOUT_CACHE_SIZE = 256;

/** Runs queries as reports: compile, admit, record, run (waiting up to the budget), record the outcome. */
export class ReportsService {
  private readonly deps: ReportsDeps;
  private readonly runningByAccount = new Map<string, number>();
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly shutdown = new AbortController();
  private readonly layouts = new Map<string, Promise<ParquetLayout>>();

  constructor(deps: ReportsDeps) {
    this.deps = deps;
  }

  /** Returns the report, and whether it is still running (202) or already finished (201). */
  async run(caller: CallerContext, query: AnalyticsQuery): Promise<{ report: ReportDoc; accepted: boolean }> {
    const { accountId } = caller;
    const { source, runOn, running } = await this.plan(caller, query);

    this.admit(accountId, running);
    const id = newId('rpt');
    // The query starts while its `running` record is written: the write is a round trip the answer need not
    // wait for twice. The outcome is stored only once the record exists; if it cannot be written, the query stops.
    const cancel = new AbortController();
    const computing = this.compute(query, runOn, id, cancel.signal);
    this.track(computing); // stop() waits for it even while the record is being written
    let report: ReportDoc;
    try {
      report = await this.deps.reports.insert(accountId, {
        _id: id,
        sourceId: source._id,
        query,
        status: 'running',
        error: null,
        columns: [],
        rows: [],
        rowCount: 0,
        totalRows: null,
        truncated: false,
        dataFile: runOn.file,
        durationMs: null,
        statistics: null,
        createdAt: new Date(),
        completedAt: null,
      });
    } catch (err) {
      cancel.abort();
      // The slot is held until the query has stopped.
      this.track(computing.finally(() => this.release(accountId)));
      throw err;
    }
    const outcome = computing.then((done) => this.record(report, done, caller.requestId)).finally(() => this.release(accountId));
    this.track(outcome);
    if (query.async) return { report, accepted: true };
    const settled = await settleWithin(outcome, this.deps.limits.budgetMs);
    return settled.done ? { report: settled.value, accepted: false } : { report, accepted: true };
  }

  /**
   * Runs a query to its end (within the time limit) and answers its result, storing nothing: Explore's runs and
   * insights' runs, which would otherwise leave a report behind each time. Holds one of the account's query slots.
   */
  async runUnsaved(caller: CallerContext, query: Omit<AnalyticsQuery, 'async' | 'dryRun' | 'saveReport'>): Promise<UnsavedResult> {
    const full: AnalyticsQuery = { ...query, async: false, dryRun: false, saveReport: false };
    const { runOn, running } = await this.plan(caller, full);
    this.admit(caller.accountId, running);
    const done = this.compute(full, runOn).finally(() => this.release(caller.accountId));
    this.track(done);
    const outcome = await done;
    if (!outcome.ok) {
      if (outcome.interrupted) throw queryInterrupted(outcome.error);
      throw queryFailed(outcome.error);
    }
    const { result, total, read, durationMs } = outcome;
    return {
      query,
      columns: result.columns,
      rows: result.rows,
      rowCount: result.rows.length,
      totalRows: total,
      truncated: query.offset + result.rows.length < total,
      durationMs,
      statistics: { elapsedMs: durationMs, rowsRead: read.rowsRead, bytesRead: read.bytesRead },
      completedAt: new Date(),
    };
  }

  private track(work: Promise<unknown>): void {
    this.inflight.add(work);
    void work.finally(() => this.inflight.delete(work));
  }

  /** Checks the source and the plan's read limit and compiles the query for the current file; reserves nothing. */
  private async plan(caller: CallerContext, query: AnalyticsQuery) {
    const { accountId } = caller;
    // Independent lookups, side by side: one round trip of latency instead of three. The file path is
    // under this account's own directory, so looking before the source is known to be ours reveals nothing.
    const since = new Date(Date.now() - this.deps.limits.timeoutMs - STALE_GRACE_MS);
    const [source, current, running] = await Promise.all([
      this.deps.sources.find(accountId, query.sourceId),
      this.deps.store.currentFile(accountId, query.sourceId).then(
        (file) => ({ file }),
        (err: unknown) => ({ err }),
      ),
      this.deps.reports.countRunning(accountId, since),
    ]);
    if (!source || source.deleted) throw sourceNotFound();
    if (source.status !== 'ready') throw sourceNotReady(source._id, source.status);
    if ('err' in current) throw current.err;
    if (!current.file) throw sourceHasNoData(source._id);
    // A newer sync may replace and remove the file under the query: it then runs once more on the current one.
    const currentFile = async () => {
      const now = await this.deps.store.currentFile(accountId, query.sourceId);
      return now && resolve(now);
    };
    const {
      file,
      compiled,
      read: estimate,
    } = await readCurrentFile(resolve(current.file), currentFile, async (f) => ({ file: f, ...(await this.prepare(query, source.schema, f)) }));
    const max = this.deps.limits.maxBytesRead[caller.plan] ?? 0;
    if (max > 0 && estimate.bytesRead > max) throw tooMuchToRead(estimate.bytesRead, max, caller.plan);
    const runOn: QueryRun = { file, compiled, read: estimate, current: currentFile, recompile: (other) => this.prepare(query, source.schema, other) };
    return { source, runOn, running };
  }

  /**
   * Validates a query and says what it would read and how it compiles, without running it or saving a report;
   * over the plan's limit is `withinLimit: false`, not an error (finding that out is the point).
   */
  async dryRun(caller: CallerContext, query: AnalyticsQuery): Promise<QueryEstimateDto> {
    const [source, current] = await Promise.all([this.deps.sources.find(caller.accountId, query.sourceId), this.deps.store.currentFile(caller.accountId, query.sourceId)]);
    if (!source || source.deleted) throw sourceNotFound();
    if (source.status !== 'ready') throw sourceNotReady(source._id, source.status);
    if (!current) throw sourceHasNoData(source._id);
    const file = resolve(current);
    const { compiled, read: estimate } = await this.prepare(query, source.schema, file);
    const operators = await this.deps.runner.explain(compiled.sql, compiled.params);
    const max = this.deps.limits.maxBytesRead[caller.plan] ?? 0;
    return {
      dryRun: true,
      estimate,
      limit: { plan: caller.plan, maxBytesRead: max > 0 ? max : null, withinLimit: max === 0 || estimate.bytesRead <= max },
      plan: { columns: compiled.columns, reads: compiled.scan.columns, operators },
    };
  }

  /** The query compiled for `file` with what its (cached) Parquet footer tells, and what it reads of it. */
  private async prepare(query: AnalyticsQuery, schema: readonly DatasetColumn[], file: string): Promise<{ compiled: CompiledQuery; read: ScanEstimate }> {
    let layout = this.layouts.get(file);
    if (layout) {
      // Least recently used out: a hit moves to the end.
      this.layouts.delete(file);
    } else {
      layout = this.deps.runner.layout(file);
      layout.catch(() => this.layouts.delete(file));
    }
    this.layouts.set(file, layout);
    if (this.layouts.size > LAYOUT_CACHE_SIZE) this.layouts.delete(this.layouts.keys().next().value!);
    const parquet = await layout;
    const compiled = compileQuery(query, schema, file, { timeSpan: query.timeDimension ? timeSpan(parquet, query.timeDimension.field) : null });
    return { compiled, read: estimateScan(parquet, compiled.scan) };
  }

  async get(accountId: string, id: string): Promise<ReportDoc> {
    const report = await this.deps.reports.findById(accountId, id);
    if (!report) throw reportNotFound();
    return report;
  }

  list(accountId: string, opts: { limit: number; before?: string }): Promise<ReportSummaryDoc[]> {
    return this.deps.reports.list(accountId, opts);
  }

  /**
   * Reserves one of the account's query slots. The in-process count is exact for this instance; the
   * count of running reports in MongoDB (`running`, read just before) covers the other instances.
   */
  private admit(accountId: string, running: number): void {
    const max = this.deps.limits.maxConcurrent;
    const local = this.runningByAccount.get(accountId) ?? 0;
    if (local >= max || running >= max) throw tooManyQueries(max);
    this.runningByAccount.set(accountId, local + 1);
  }

  private release(accountId: string): void {
    const n = (this.runningByAccount.get(accountId) ?? 1) - 1;
    if (n > 0) this.runningByAccount.set(accountId, n);
    else this.runningByAccount.delete(accountId);
  }

  /** Stores a query's outcome with its event; never rejects. */
  private async record(report: ReportDoc, outcome: Outcome, requestId: string): Promise<ReportDoc> {
    const { logger } = this.deps;
    const { durationMs } = outcome;
    const completedAt = new Date();
    let fields: Omit<ReportOutcome, 'rowsJson'>;
    let rows: ReportDoc['rows'];
    let rowsJson: string;
    let event: DomainEvent;
    if (outcome.ok) {
      ({ rows } = outcome.result);
      rowsJson = outcome.rowsJson;
      const truncated = report.query.offset + rows.length < outcome.total;
      const statistics: QueryStatistics = { elapsedMs: durationMs, rowsRead: outcome.read.rowsRead, bytesRead: outcome.read.bytesRead };
      fields = {
        status: 'completed',
        error: null,
        columns: outcome.result.columns,
        rowCount: rows.length,
        totalRows: outcome.total,
        truncated,
        durationMs,
        statistics,
        completedAt,
      };
      event = reportCompleted(report.accountId, requestId, { id: report._id, sourceId: report.sourceId, rowCount: rows.length, durationMs });
    } else {
      rows = [];
      rowsJson = encodeRows(rows);
      fields = { status: 'failed', error: outcome.error, columns: [], rowCount: 0, totalRows: null, truncated: false, durationMs, statistics: null, completedAt };
      event = reportFailed(report.accountId, requestId, { id: report._id, sourceId: report.sourceId, error: outcome.error });
    }
    try {
      if (await this.deps.reports.finish(report.accountId, report._id, { ...fields, rowsJson }, event)) return { ...report, ...fields, rows };
      // Someone else ended it first (the stale sweeper): answer what is stored.
      return (await this.deps.reports.findById(report.accountId, report._id)) ?? report;
    } catch (err) {
      // The sweeper marks the report failed later; nothing is lost but this query's result.
      logger.error({ err, reportId: report._id }, 'could not store a report outcome');
      return report;
    }
  }

  /** Runs the query for its page and total; never rejects (a failure is an outcome, in words a customer can act on). */
  private async compute(query: AnalyticsQuery, run: QueryRun, reportId?: string, cancel?: AbortSignal): Promise<Outcome> {
    const { logger, limits } = this.deps;
    const started = performance.now();
    const elapsed = () => Math.round((performance.now() - started) * 100) / 100;
    try {
      // A newer sync may have replaced and removed the file meanwhile: then the page is read once more from the current one.
      const { result, total, read } = await readCurrentFile(run.file, run.current, async (file) => {
        const { compiled, read } = file === run.file ? run : await run.recompile(file);
        const signal = cancel ? AbortSignal.any([this.shutdown.signal, cancel]) : this.shutdown.signal;
        const opts = { timeoutMs: limits.timeoutMs, signal, computed: computedOf(compiled) };
        const page = await this.deps.runner.run(compiled.sql, compiled.params, opts);
        // The page's last column is the count of all result rows (the same on every row); it is not an output.
        const width = compiled.columns.length;
        let count: number | null = null;
        for (const row of page.rows) {
          count ??= Number(row[width]);
          row.length = width;
        }
        // A page past the end has no row to carry the count; only then is it a query of its own.
        if (count === null) count = query.offset === 0 ? 0 : Number((await this.deps.runner.run(compiled.countSql, compiled.fullParams, opts)).rows[0]?.[0] ?? 0);
        return { result: { columns: page.columns.slice(0, width), rows: page.rows }, total: count, read };
      });
      // Serialised once: the size limit is measured on the very string that is stored.
      const rowsJson = encodeRows(result.rows);
      const bytes = Buffer.byteLength(rowsJson);
      if (bytes > limits.maxResultBytes) return { ok: false, error: FAILURE.tooLarge(bytes, limits.maxResultBytes), interrupted: false, durationMs: elapsed() };
      return { ok: true, result, total, rowsJson, read, durationMs: elapsed() };
    } catch (err) {
      const interrupted = err instanceof Error && err.name === 'QueryInterruptedError' && (err as Error & { reason?: string }).reason === 'aborted';
      if (!(err instanceof Error && err.name === 'QueryInterruptedError')) logger.warn({ err, reportId }, 'analytics query failed');
      return { ok: false, error: this.describe(err), interrupted, durationMs: elapsed() };
    }
  }

  /**
   * The query giving every row of a completed report, in its order and without its limit, over the very
   * data file it read (Parquet files are immutable; a sync writes a new one and removes the old).
   */
  private async fullQuery(report: ReportDoc): Promise<CompiledQuery> {
    if (report.status !== 'completed') throw reportNotExportable(report._id, report.status, report.error);
    const file = report.dataFile;
    if (!file) throw reportMadeBeforeExports(report._id);
    try {
      await access(file);
      return (await this.prepare(report.query, await this.deps.runner.describe(file), file)).compiled;
    } catch (err) {
      throw isMissingFile(err) ? reportDataReplaced(report._id) : err;
    }
  }

  /**
   * Every row of a completed report, streamed in parts (the first carries the columns, even if empty), so
   * memory stays bounded whatever the size. Counts as one of the account's running queries.
   * Leaving the loop early, or aborting `signal`, stops the query.
   */
  async *exportRows(report: ReportDoc, signal: AbortSignal): AsyncGenerator<TableResult> {
    // A report from before full exports knows no data file: its stored page is what there is.
    if (report.status === 'completed' && !report.dataFile) {
      yield { columns: report.columns as TableResult['columns'], rows: report.rows };
      return;
    }
    const compiled = await this.fullQuery(report);
    await this.admitExport(report.accountId);
    const stop = AbortSignal.any([signal, this.shutdown.signal]);
    try {
      yield* this.deps.runner.stream(compiled.fullSql, compiled.fullParams, { signal: stop, computed: computedOf(compiled) });
    } catch (err) {
      throw exportError(report._id, err);
    } finally {
      this.release(report.accountId);
    }
  }

  /** Every row of a completed report as a Parquet file; `discard` it once sent. */
  async exportParquet(report: ReportDoc, signal: AbortSignal): Promise<string> {
    const compiled = await this.fullQuery(report);
    await this.admitExport(report.accountId);
    try {
      return await this.deps.runner.toParquet(compiled.fullSql, compiled.fullParams, { signal: AbortSignal.any([signal, this.shutdown.signal]), computed: computedOf(compiled) });
    } catch (err) {
      throw exportError(report._id, err);
    } finally {
      this.release(report.accountId);
    }
  }

  discard(file: string): Promise<void> {
    return this.deps.runner.discard(file);
  }

  private async admitExport(accountId: string): Promise<void> {
    const since = new Date(Date.now() - this.deps.limits.timeoutMs - STALE_GRACE_MS);
    this.admit(accountId, await this.deps.reports.countRunning(accountId, since));
  }

  /** A failure reason a customer can act on, without file paths or internals. */
  private describe(err: unknown): string {
    if (err instanceof Error && err.name === 'QueryInterruptedError') return err.message;
    const message = err instanceof Error ? err.message : String(err);
    const firstLine = (message.split('\n')[0] ?? '').replace(/(["'])\/[^"']*\1/g, '$1<dataset>$1').replace(/\/[^\s"']+/g, '<dataset>');
    if (/no files found|cannot open file|no such file/i.test(message)) return "the source's data could not be read; sync the source again";
    return `the query could not be executed: ${firstLine.slice(0, 300)}`;
  }

  /** Marks reports whose process died mid-query as failed (with their event). */
  async sweepStale(): Promise<number> {
    const before = new Date(Date.now() - this.deps.limits.timeoutMs - STALE_GRACE_MS);
    const stale = await this.deps.reports.findStale(before, 100);
    let n = 0;
    for (const r of stale) {
      const done = await this.deps.reports.finish(
        r.accountId,
        r._id,
        {
          status: 'failed',
          error: FAILURE.interrupted,
          columns: [],
          rowsJson: encodeRows([]),
          rowCount: 0,
          totalRows: null,
          truncated: false,
          durationMs: null,
          statistics: null,
          completedAt: new Date(),
        },
        reportFailed(r.accountId, null, { id: r._id, sourceId: r.sourceId, error: FAILURE.interrupted }),
      );
      if (done) n++;
    }
    return n;
  }

  /** Cancels running queries (their reports fail with a clear reason) and waits for their outcomes. */
  async stop(): Promise<void> {
    this.shutdown.abort();
    await Promise.allSettled([...this.inflight]);
  }
}
