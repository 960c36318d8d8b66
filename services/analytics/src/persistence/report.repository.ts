import type { Db, Document, Filter } from 'mongodb';
import type { Cell } from '@dap/datasets';
import { TenantCollection, type TenantDoc } from '@dap/mongo';
import type { AnalyticsQuery, DomainEvent } from '@dap/contracts';

export type ReportStatus = 'running' | 'completed' | 'failed';

export interface ReportDoc extends TenantDoc {
  sourceId: string;
  query: AnalyticsQuery;
  status: ReportStatus;
  error: string | null;
  columns: { name: string; type: string }[];
  /** Positional rows (one array per row, in `columns` order): column names may hold `.` or `$`, which MongoDB keys should not. */
  rows: Cell[][];
  rowCount: number;
  durationMs: number | null;
  createdAt: Date;
  completedAt: Date | null;
}

export type ReportSummaryDoc = Omit<ReportDoc, 'rows'>;

export class ReportRepository {
  readonly coll: TenantCollection<ReportDoc>;

  constructor(db: Db, onEvents: () => void) {
    this.coll = new TenantCollection<ReportDoc>(db, 'reports', onEvents);
  }

  async init(): Promise<void> {
    await this.coll.raw.createIndex({ accountId: 1, _id: -1 });
    await this.coll.raw.createIndex({ status: 1, createdAt: 1 });
  }

  insert(accountId: string, doc: Omit<ReportDoc, 'accountId'>): Promise<ReportDoc> {
    return this.coll.insert(accountId, doc);
  }

  findById(accountId: string, id: string): Promise<ReportDoc | null> {
    return this.coll.findById(accountId, id);
  }

  /** Newest first, without the rows (a list would otherwise carry up to 100 full results). */
  async list(accountId: string, opts: { limit: number; before?: string }): Promise<ReportSummaryDoc[]> {
    if (!accountId) throw new Error('accountId is required');
    const filter: Filter<Document> = { accountId, deletedAt: null };
    if (opts.before) filter._id = { $lt: opts.before as unknown as Document['_id'] };
    const docs = await this.coll.raw.find(filter, { projection: { _outbox: 0, rows: 0 } }).sort({ _id: -1 }).limit(opts.limit).toArray();
    return docs as unknown as ReportSummaryDoc[];
  }

  /** Records the outcome and its event in one write, only if the report is still running. */
  finish(
    accountId: string,
    id: string,
    outcome: Pick<ReportDoc, 'status' | 'error' | 'columns' | 'rows' | 'rowCount' | 'durationMs' | 'completedAt'>,
    event: DomainEvent,
  ): Promise<ReportDoc | null> {
    return this.coll.update(accountId, id, outcome, [event], { status: 'running' });
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
