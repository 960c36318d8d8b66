import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId, querySchema, type AnalyticsQuery, type CallerContext, type DomainEvent } from '@dap/contracts';
import { DomainError } from '@dap/errors';
import { createLogger } from '@dap/logger';
import type { SourceProjection, SourceProjectionRepository } from '@dap/mongo';
import type { ReportDoc, ReportOutcome, ReportRepository } from '../persistence/report.repository.ts';
import { QueryInterruptedError, type RunOptions, type TableResult } from '../persistence/query.runner.ts';
import { ReportsService, type ReportsDeps, type ReportsLimits } from './reports.service.ts';

const accountId = newId('acct');
const sourceId = newId('src');
const caller: CallerContext = { accountId, plan: 'starter', scopes: [], requestId: newId('req'), issuedAt: Date.now() };
const q = (extra: Record<string, unknown> = {}) => querySchema.parse({ sourceId, measures: [{ op: 'count' }], ...extra }) as AnalyticsQuery;

/** In-memory stand-ins with the repositories' semantics (finish only while running, events with the write). */
function harness(
  limits: Partial<ReportsLimits>,
  run: (opts: RunOptions, params: unknown[]) => Promise<TableResult>,
  exports: Partial<ReportsDeps['runner']> = {},
  currentFile = async () => '/data/file.parquet',
) {
  const docs = new Map<string, ReportDoc>();
  const events: DomainEvent[] = [];
  const reports = {
    insert: async (acct: string, doc: Omit<ReportDoc, 'accountId'>) => {
      const full = { ...doc, accountId: acct } as ReportDoc;
      docs.set(doc._id, full);
      return full;
    },
    countRunning: async (acct: string) => [...docs.values()].filter((d) => d.accountId === acct && d.status === 'running').length,
    finish: async (_acct: string, id: string, outcome: ReportOutcome, event: DomainEvent) => {
      const d = docs.get(id);
      if (!d || d.status !== 'running') return false;
      const { rowsJson, ...fields } = outcome;
      Object.assign(d, fields, { rows: JSON.parse(rowsJson) });
      events.push(event);
      return true;
    },
    findById: async (acct: string, id: string) => (docs.get(id)?.accountId === acct ? docs.get(id) : null),
  } as unknown as ReportRepository;
  const source: SourceProjection = {
    _id: sourceId,
    accountId,
    name: 's',
    type: 'inline',
    status: 'ready',
    error: null,
    schema: [{ name: 'x', type: 'integer' }],
    rowCount: 1,
    deleted: false,
    lastEventId: 'evt_0',
    updatedAt: new Date(),
  };
  const sources = { find: async (acct: string, id: string) => (acct === accountId && id === sourceId ? source : null) } as unknown as SourceProjectionRepository;
  const service = new ReportsService({
    reports,
    sources,
    store: { currentFile },
    // The page query carries the count of all result rows as a last column.
    runner: {
      run: async (_sql: string, params: unknown[], opts: RunOptions) => {
        const r = await run(opts, params);
        return { columns: [...r.columns, { name: '__total', type: 'integer' }], rows: r.rows.map((row) => [...row, r.rows.length]) };
      },
      layout: async () => [{ id: 0, rows: 1, columns: { x: { bytes: 10, min: '1', max: '1' } } }],
      ...exports,
    } as unknown as ReportsDeps['runner'],
    logger: createLogger({ name: 'test', level: 'silent' }),
    limits: { budgetMs: 1_000, timeoutMs: 30_000, maxConcurrent: 4, maxResultBytes: 1_000_000, maxBytesRead: { starter: 0, professional: 0, enterprise: 0 }, ...limits },
  });
  return { service, docs, events, source, reports };
}

const ONE_ROW: TableResult = { columns: [{ name: 'count', type: 'integer' }], rows: [[1]] };

describe('ReportsService', () => {
  it("refuses a query over the plan's cap on bytes read with 422 before it saves or runs anything", async () => {
    let runs = 0;
    const h = harness({ maxBytesRead: { starter: 9, professional: 0, enterprise: 0 } }, async () => {
      runs++;
      return ONE_ROW;
    });
    const err = await h.service.run(caller, q({ measures: [{ op: 'sum', field: 'x' }] })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect([(err as DomainError).kind, (err as DomainError).code]).toEqual(['unprocessable', 'query_read_limit']);
    expect((err as DomainError).message).toContain('10 bytes');
    expect((err as DomainError).message).toContain('maxBytesRead');
    expect([h.docs.size, runs]).toEqual([0, 0]);
    // Positive controls: a count reads no column, and the same sum on an uncapped plan runs, with its statistics.
    expect((await h.service.run(caller, q())).report.statistics).toEqual({ elapsedMs: expect.any(Number), rowsRead: 1, bytesRead: 0 });
    const pro = await h.service.run({ ...caller, plan: 'professional' }, q({ measures: [{ op: 'sum', field: 'x' }] }));
    expect(pro.report.statistics).toEqual({ elapsedMs: expect.any(Number), rowsRead: 1, bytesRead: 10 });
  });

  it('answers a fast query completed (201) with its report.completed event', async () => {
    const h = harness({}, async () => ONE_ROW);
    const { report, accepted } = await h.service.run(caller, q());
    expect(accepted).toBe(false);
    expect(report).toMatchObject({ status: 'completed', rows: [[1]], rowCount: 1, totalRows: 1, truncated: false, columns: ONE_ROW.columns });
    expect(h.events).toEqual([expect.objectContaining({ type: 'report.completed', subject: report._id, requestId: caller.requestId })]);
  });

  it('starts the query while its running record is written, and stores the outcome once that write is done', async () => {
    let ran = false;
    const h = harness({}, async () => {
      ran = true;
      return ONE_ROW;
    });
    const insert = h.reports.insert.bind(h.reports);
    let written!: () => void;
    const gate = new Promise<void>((r) => (written = r));
    let ranBeforeWritten: boolean | null = null;
    h.reports.insert = async (acct, doc) => {
      await gate;
      ranBeforeWritten = ran;
      return insert(acct, doc);
    };
    const answer = h.service.run(caller, q());
    await new Promise((r) => setImmediate(r));
    written();
    const { report, accepted } = await answer;
    expect(ranBeforeWritten).toBe(true);
    expect([accepted, report.status, report.rows]).toEqual([false, 'completed', [[1]]]);
    expect(h.docs.get(report._id)).toMatchObject({ status: 'completed', rows: [[1]] });
    expect(h.events.map((e) => e.type)).toEqual(['report.completed']);
  });

  it('waits on stop for a query whose running record is still being written', async () => {
    let stopped = false;
    const h = harness(
      {},
      (opts) =>
        new Promise((resolve) => {
          opts.signal?.addEventListener('abort', () => setImmediate(() => ((stopped = true), resolve(ONE_ROW))), { once: true });
        }),
    );
    const insert = h.reports.insert.bind(h.reports);
    let written!: () => void;
    const gate = new Promise<void>((r) => (written = r));
    h.reports.insert = async (acct, doc) => {
      await gate;
      return insert(acct, doc);
    };
    const answer = h.service.run(caller, q());
    await new Promise((r) => setImmediate(r));
    await h.service.stop();
    expect(stopped).toBe(true);
    written();
    expect((await answer).report._id).toMatch(/^rpt_/);
  });

  it('stops the query and frees its slot when the running record cannot be written', async () => {
    let signal: AbortSignal | undefined;
    let finish!: () => void;
    const h = harness({ maxConcurrent: 1 }, (opts) => {
      signal = opts.signal;
      return new Promise((resolve, reject) => {
        finish = () => resolve(ONE_ROW);
        opts.signal?.addEventListener('abort', () => reject(new QueryInterruptedError('aborted', 'stopped')), { once: true });
      });
    });
    const insert = h.reports.insert.bind(h.reports);
    h.reports.insert = async () => {
      throw new Error('the database is unreachable');
    };
    await expect(h.service.run(caller, q())).rejects.toThrow('the database is unreachable');
    expect(signal?.aborted).toBe(true);
    expect([h.docs.size, h.events]).toEqual([0, []]);
    // Positive control: the slot is free again, and a query whose record is written runs to the end.
    h.reports.insert = insert;
    const next = h.service.run(caller, q());
    await new Promise((r) => setImmediate(r));
    expect(signal?.aborted).toBe(false);
    finish();
    expect((await next).report.status).toBe('completed');
  });

  it('answers what is stored when another writer ended the report first, without a second event', async () => {
    const h: ReturnType<typeof harness> = harness({}, async () => {
      await new Promise((r) => setImmediate(r)); // the query starts as its record is written: after that write
      for (const d of h.docs.values()) d.status = 'failed'; // the stale sweeper got there first
      return ONE_ROW;
    });
    const { report } = await h.service.run(caller, q());
    expect(report.status).toBe('failed');
    expect(report.rows).toEqual([]);
    expect(h.events).toEqual([]);
  });

  it('answers 202 once the budget passes, and finishes in the background', async () => {
    let release!: () => void;
    const h = harness({ budgetMs: 20 }, () => new Promise((r) => (release = () => r(ONE_ROW))));
    const { report, accepted } = await h.service.run(caller, q());
    expect([accepted, report.status]).toEqual([true, 'running']);
    release();
    await h.service.stop();
    expect(h.docs.get(report._id)!.status).toBe('completed');
  });

  it('refuses a fifth concurrent query with 409, and admits again once one finishes', async () => {
    const releases: (() => void)[] = [];
    const h = harness({ budgetMs: 0 }, () => new Promise((r) => releases.push(() => r(ONE_ROW))));
    for (let i = 0; i < 4; i++) expect((await h.service.run(caller, q({ async: true }))).accepted).toBe(true);
    const err = await h.service.run(caller, q()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('query_concurrency_limit');
    expect((err as DomainError).retryAfterSeconds).toBe(1);
    expect((err as DomainError).message).toMatch(/already has 4 queries running/);
    expect(h.docs.size).toBe(4); // the refused query left no report behind
    releases.shift()!();
    await new Promise((r) => setTimeout(r, 10));
    expect((await h.service.run(caller, q({ async: true }))).accepted).toBe(true);
    releases.forEach((r) => r());
    await h.service.stop();
  });

  it('holds a query slot while an export streams, and frees it when the export is left early or cancelled', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'analytics-export-'));
    const file = join(dir, 'data.parquet');
    await writeFile(file, 'x');
    // An export that sends one part, then waits until it is cancelled.
    const stream = async function* (_sql: string, _params: unknown[], opts: { signal?: AbortSignal }) {
      yield ONE_ROW;
      if (!opts.signal!.aborted) await new Promise((resolve) => opts.signal!.addEventListener('abort', resolve));
      throw new QueryInterruptedError('aborted', 'cancelled');
    };
    const h = harness({ maxConcurrent: 1 }, async () => ONE_ROW, { stream, describe: async () => [{ name: 'x', type: 'integer' }] });
    try {
      const { report } = await h.service.run(caller, q());
      const exported = { ...report, dataFile: file };
      const busy = () =>
        h.service.run(caller, q()).then(
          () => 'admitted',
          (e: DomainError) => e.code,
        );

      const left = h.service.exportRows(exported, new AbortController().signal);
      expect((await left.next()).value).toEqual(ONE_ROW);
      expect(await busy()).toBe('query_concurrency_limit'); // the export holds the account's one slot
      await left.return(undefined);
      expect(await busy()).toBe('admitted');

      const ctl = new AbortController();
      const cancelled = h.service.exportRows(exported, ctl.signal);
      await cancelled.next();
      expect(await busy()).toBe('query_concurrency_limit');
      ctl.abort();
      await expect(cancelled.next()).rejects.toMatchObject({ code: 'export_interrupted', message: 'cancelled', retryAfterSeconds: 1 });
      expect(await busy()).toBe('admitted');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses (409) to export a report that is not completed, or whose data file a newer sync removed', async () => {
    const h = harness({}, async () => ONE_ROW, { describe: async () => [{ name: 'x', type: 'integer' }] });
    const { report } = await h.service.run(caller, q());
    const next = (r: ReportDoc) => h.service.exportRows(r, new AbortController().signal).next();
    await expect(next({ ...report, status: 'running' })).rejects.toMatchObject({ code: 'report_running', message: expect.stringContaining('still running') });
    await expect(next({ ...report, dataFile: '/nonexistent/data.parquet' })).rejects.toMatchObject({
      code: 'report_data_replaced',
      message: expect.stringContaining('replaced by a newer sync'),
    });
  });

  it('runs once more on the current file when a newer sync removed the one it resolved', async () => {
    const files = ['/data/old.parquet', '/data/new.parquet'];
    let resolved = 0;
    const tried: unknown[] = [];
    const h = harness(
      {},
      async (_opts, params) => {
        tried.push(params[0]);
        if (params[0] === files[0]) throw new Error(`IO Error: No files found that match the pattern "${files[0]}"`);
        return ONE_ROW;
      },
      {},
      async () => files[Math.min(resolved++, 1)]!,
    );
    const { report } = await h.service.run(caller, q());
    expect(report).toMatchObject({ status: 'completed', rows: [[1]] });
    expect(tried).toEqual(files);
  });

  it('fails with the reason when the file is gone and no newer one replaced it (one try, no loop)', async () => {
    let tries = 0;
    const h = harness({}, async () => {
      tries++;
      throw new Error('IO Error: No files found that match the pattern "/data/file.parquet"');
    });
    const { report } = await h.service.run(caller, q());
    expect(report).toMatchObject({ status: 'failed', error: "the source's data could not be read; sync the source again" });
    expect(tries).toBe(1);
  });

  it('fails a query that times out with the reason, and emits report.failed', async () => {
    const h = harness({ timeoutMs: 50 }, async (opts) => {
      throw new QueryInterruptedError('timeout', `the query ran longer than its ${opts.timeoutMs} ms time limit and was stopped`);
    });
    const { report } = await h.service.run(caller, q());
    expect(report).toMatchObject({ status: 'failed', error: 'the query ran longer than its 50 ms time limit and was stopped' });
    expect(h.events[0]).toMatchObject({ type: 'report.failed', data: { id: report._id, sourceId, error: report.error } });
  });

  it('fails a result too large to store', async () => {
    const h = harness({ maxResultBytes: 10 }, async () => ({ columns: [{ name: 's', type: 'string' }], rows: [['x'.repeat(100)]] }));
    const { report } = await h.service.run(caller, q());
    expect(report.status).toBe('failed');
    expect(report.error).toMatch(/too large to store/);
  });

  it('cancels running queries on stop, failing their reports with a clear reason', async () => {
    const h = harness(
      { budgetMs: 0 },
      (opts) => new Promise((_r, reject) => opts.signal!.addEventListener('abort', () => reject(new QueryInterruptedError('aborted', 'cancelled: shutting down')))),
    );
    const { report } = await h.service.run(caller, q({ async: true }));
    await h.service.stop();
    expect(h.docs.get(report._id)).toMatchObject({ status: 'failed', error: 'cancelled: shutting down' });
  });

  it('answers 404 for an unknown or deleted source and 409 for one not ready', async () => {
    const h = harness({}, async () => ONE_ROW);
    await expect(h.service.run({ ...caller, accountId: newId('acct') }, q())).rejects.toMatchObject({ code: 'source_not_found' });
    h.source.status = 'syncing';
    await expect(h.service.run(caller, q())).rejects.toMatchObject({ code: 'source_not_ready', message: expect.stringContaining('status is syncing') });
    h.source.deleted = true;
    await expect(h.service.run(caller, q())).rejects.toMatchObject({ code: 'source_not_found' });
  });
});
