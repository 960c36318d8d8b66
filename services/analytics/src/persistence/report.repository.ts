import type { Db, Document, Filter } from 'mongodb';
import type { Cell } from '@dap/datasets';
import { OUTBOX_PENDING_INDEX, TenantCollection, type TenantDoc, type WrittenEvents } from '@dap/mongo';
import type { AnalyticsQuery, DomainEvent, QueryStatistics } from '@dap/contracts';
import { stampActiveTrace } from '@dap/tracing';

export type ReportStatus = 'running' | 'completed' | 'failed';

/** A report as the domain sees it. */
export interface ReportDoc extends TenantDoc {
  sourceId: string;
  query: AnalyticsQuery;
  status: ReportStatus;
  error: string | null;
  columns: { name: string; type: string }[];
  /** Positional rows (one array per row, in `columns` order): column names may hold `.` or `$`, which MongoDB keys should not. */
  rows: Cell[][];
  /** Rows returned (the page). */
  rowCount: number;
  /** Rows in the whole result, before limit and offset; null until completed. */
  totalRows: number | null;
  /** Whether the result has rows past this page. */
  truncated: boolean;
  /** The absolute path of the Parquet file the query read (internal: exports read it again); null on reports from before. */
  dataFile: string | null;
  durationMs: number | null;
  /** What the run read and how long it took; null until completed, and on reports from before. */
  statistics: QueryStatistics | null;
  createdAt: Date;
  completedAt: Date | null;
}

export type ReportSummaryDoc = Omit<ReportDoc, 'rows' | 'dataFile'>;

/**
 * As stored: the rows are ONE JSON string (`rowsJson`). Writing and reading a single string is several
 * times cheaper than 10,000 nested BSON arrays, and the string is the one the size limit is measured on.
 * Documents written before carry `rows` instead; both are read.
 */
interface StoredReport extends Omit<ReportDoc, 'rows' | 'totalRows' | 'truncated' | 'dataFile' | 'statistics'> {
  statistics?: QueryStatistics | null;
  rowsJson?: string;
  rows?: Cell[][];
  totalRows?: number | null;
  truncated?: boolean;
  dataFile?: string | null;
}

/**
 * Reports stored before totals were recorded: the total is unknown, and a page that filled its limit may
 * have been cut off, so it says so.
 */
function withTotals<T extends Omit<StoredReport, 'rows' | 'rowsJson'>>(doc: T): T & Pick<ReportDoc, 'totalRows' | 'truncated' | 'statistics'> {
  return {
    ...doc,
    totalRows: doc.totalRows ?? null,
    truncated: doc.truncated ?? (doc.status === 'completed' && doc.rowCount >= doc.query.limit),
    statistics: doc.statistics ?? null,
  };
}

/** The outcome of a run, with its rows already serialised (see `encodeRows`). */
export type ReportOutcome = Pick<ReportDoc, 'status' | 'error' | 'columns' | 'rowCount' | 'totalRows' | 'truncated' | 'durationMs' | 'statistics' | 'completedAt'> & {
  rowsJson: string;
};

export const encodeRows = (rows: readonly Cell[][]): string => JSON.stringify(rows);

function decode(doc: StoredReport): ReportDoc {
  const { rowsJson, rows, ...rest } = doc;
  return { ...withTotals(rest), dataFile: rest.dataFile ?? null, rows: typeof rowsJson === 'string' ? (JSON.parse(rowsJson) as Cell[][]) : (rows ?? []) };
}

export const REPORTS_COLLECTION = 'reports';

export class ReportRepository {
  readonly coll: TenantCollection<StoredReport>;
  private readonly onEvents: (written: WrittenEvents) => void;

  constructor(db: Db, onEvents: (written: WrittenEvents) => void) {
    this.coll = new TenantCollection<StoredReport>(db, REPORTS_COLLECTION, onEvents);
    this.onEvents = onEvents;
  }

  async ensureIndexes(): Promise<void> {
    await this.coll.raw.createIndex({ accountId: 1, _id: -1 });
    await this.coll.raw.createIndex({ status: 1, createdAt: 1 });
    await this.coll.raw.createIndex(...OUTBOX_PENDING_INDEX);
  }

  async insert(accountId: string, doc: Omit<ReportDoc, 'accountId'>): Promise<ReportDoc> {
    const { rows, ...rest } = doc;
    return decode(await this.coll.insert(accountId, { ...rest, rowsJson: encodeRows(rows) }));
  }

  async findById(accountId: string, id: string): Promise<ReportDoc | null> {
    const doc = await this.coll.findById(accountId, id);
    return doc ? decode(doc) : null;
  }

  /** Newest first, without the rows (a list would otherwise carry up to 100 full results). */
  async list(accountId: string, opts: { limit: number; before?: string }): Promise<ReportSummaryDoc[]> {
    if (!accountId) throw new Error('accountId is required');
    const filter: Filter<Document> = { accountId, deletedAt: null };
    if (opts.before) filter._id = { $lt: opts.before as unknown as Document['_id'] };
    const docs = await this.coll.raw
      .find(filter, { projection: { _outbox: 0, rows: 0, rowsJson: 0, dataFile: 0 } })
      .sort({ _id: -1 })
      .limit(opts.limit)
      .toArray();
    return (docs as unknown as StoredReport[]).map(withTotals);
  }

  /**
   * Records the outcome and its event in one write, only if the report is still running; returns whether it
   * did. The caller already holds the outcome, so nothing is read back (a full result would cross twice).
   */
  async finish(accountId: string, id: string, outcome: ReportOutcome, event: DomainEvent): Promise<boolean> {
    if (!accountId) throw new Error('accountId is required');
    // TenantCollection.update's write, without its findOneAndUpdate read-back.
    stampActiveTrace([event]);
    const res = await this.coll.raw.updateOne({ _id: id as unknown as Document['_id'], accountId, deletedAt: null, status: 'running' }, {
      $set: { ...outcome, _outboxPending: true },
      $push: { _outbox: event },
    } as Document);
    if (res.matchedCount === 1) this.onEvents({ collection: this.coll.raw.collectionName, id, events: [event] });
    return res.matchedCount === 1;
  }

  count(accountId: string): Promise<number> {
    return this.coll.count(accountId);
  }

  /** Running reports started after `since` (older ones are stale: no query outlives its time limit). */
  countRunning(accountId: string, since: Date): Promise<number> {
    return this.coll.count(accountId, { status: 'running', createdAt: { $gte: since } });
  }

  /** Maintenance across accounts: reports left running by a process that died. */
  async findStale(before: Date, limit: number): Promise<Pick<ReportDoc, '_id' | 'accountId' | 'sourceId'>[]> {
    const docs = await this.coll.raw
      .find({ status: 'running', createdAt: { $lt: before }, deletedAt: null }, { projection: { _id: 1, accountId: 1, sourceId: 1 } })
      .limit(limit)
      .toArray();
    return docs as unknown as Pick<ReportDoc, '_id' | 'accountId' | 'sourceId'>[];
  }
}
