import type { Db } from 'mongodb';
import type { InsightQuery } from '@dap/contracts';
import { TenantRepository, type TenantDoc } from '@dap/mongo';

export type InsightChart = 'line' | 'bar' | 'area' | 'table' | 'number';

/** A named, saved query. */
export interface InsightDoc extends TenantDoc {
  name: string;
  query: InsightQuery;
  chart: InsightChart;
  createdAt: Date;
  updatedAt: Date;
}

export class InsightRepository extends TenantRepository<InsightDoc> {
  constructor(db: Db) {
    super(db, 'insights', [[{ accountId: 1, _id: -1 }]]);
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

  update(accountId: string, id: string, set: Partial<Pick<InsightDoc, 'name' | 'query' | 'chart'>>): Promise<InsightDoc | null> {
    return this.coll.update(accountId, id, { ...set, updatedAt: new Date() });
  }

  /** Removed outright: an insight has no events waiting, so no tombstone is needed. Returns whether it existed. */
  delete(accountId: string, id: string): Promise<boolean> {
    return this.coll.delete(accountId, id);
  }
}
