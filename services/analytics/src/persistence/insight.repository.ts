import type { Db } from 'mongodb';
import type { InsightQuery } from '@dap/contracts';
import { TenantCollection, type TenantDoc } from '@dap/mongo';

export type InsightChart = 'line' | 'bar' | 'area' | 'table' | 'number';

/** A named, saved query. */
export interface InsightDoc extends TenantDoc {
  name: string;
  query: InsightQuery;
  chart: InsightChart;
  createdAt: Date;
  updatedAt: Date;
}

export class InsightRepository {
  readonly coll: TenantCollection<InsightDoc>;

  constructor(db: Db) {
    this.coll = new TenantCollection<InsightDoc>(db, 'insights');
  }

  async ensureIndexes(): Promise<void> {
    await this.coll.raw.createIndex({ accountId: 1, _id: -1 });
  }

  insert(accountId: string, doc: Omit<InsightDoc, 'accountId'>): Promise<InsightDoc> {
    return this.coll.insert(accountId, doc);
  }

  findById(accountId: string, id: string): Promise<InsightDoc | null> {
    return this.coll.findById(accountId, id);
  }

  /** The account's insights among `ids` (a dashboard's tiles), by id. */
  async findMany(accountId: string, ids: readonly string[]): Promise<Map<string, InsightDoc>> {
    if (!accountId) throw new Error('accountId is required');
    if (ids.length === 0) return new Map();
    const docs = (await this.coll.raw
      .find({ accountId, deletedAt: null, _id: { $in: [...ids] as unknown as never[] } }, { projection: { _outbox: 0 } })
      .toArray()) as unknown as InsightDoc[];
    return new Map(docs.map((d) => [d._id, d]));
  }

  list(accountId: string, opts: { limit: number; before?: string }): Promise<InsightDoc[]> {
    return this.coll.list(accountId, opts);
  }

  update(accountId: string, id: string, set: Partial<Pick<InsightDoc, 'name' | 'query' | 'chart'>>): Promise<InsightDoc | null> {
    return this.coll.update(accountId, id, { ...set, updatedAt: new Date() });
  }

  /** Removed outright: an insight has no events waiting, so no tombstone is needed. Returns whether it existed. */
  async delete(accountId: string, id: string): Promise<boolean> {
    if (!accountId) throw new Error('accountId is required');
    const res = await this.coll.raw.deleteOne({ _id: id as unknown as never, accountId, deletedAt: null });
    return res.deletedCount === 1;
  }
}
