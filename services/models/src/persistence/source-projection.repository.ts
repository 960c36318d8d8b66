import type { Collection, Db, Document } from 'mongodb';
import { COLUMN_TYPES, type Column } from '@dap/contracts';

/**
 * What the models service knows about an account's sources, built only from `sources.events`: enough to
 * check a training request (does the source exist for this account, is it ready, which columns of which
 * types does it have) without calling the sources service.
 */
export interface SourceProjection {
  _id: string;
  accountId: string;
  name: string;
  status: 'pending' | 'ready' | 'failed';
  schema: Column[];
  rowCount: number;
  deleted: boolean;
  /** The newest event applied; ids sort by time, so an older or repeated event is ignored. */
  lastEventId: string;
  updatedAt: Date;
}

export type SourceChange = Partial<Pick<SourceProjection, 'name' | 'status' | 'schema' | 'rowCount' | 'deleted'>>;

export const SOURCE_PROJECTIONS_COLLECTION = 'source_projections';

/** Unknown column types from a newer producer read as strings, the safest reading. */
export function normaliseSchema(schema: readonly { name: string; type: string }[]): Column[] {
  return schema.map((c) => ({ name: c.name, type: (COLUMN_TYPES as readonly string[]).includes(c.type) ? (c.type as Column['type']) : 'string' }));
}

export class SourceProjectionRepository {
  private readonly coll: Collection<Document>;

  constructor(db: Db) {
    this.coll = db.collection(SOURCE_PROJECTIONS_COLLECTION);
  }

  async find(accountId: string, sourceId: string): Promise<SourceProjection | null> {
    if (!accountId) throw new Error('accountId is required');
    return (await this.coll.findOne({ _id: sourceId as never, accountId })) as SourceProjection | null;
  }

  /**
   * Applies an event's change unless the same or a newer event was applied already; a deleted source stays
   * deleted. Optimistic: the write lands only if the document is still as read, else it re-reads.
   */
  async apply(accountId: string, sourceId: string, eventId: string, change: SourceChange, at: Date): Promise<boolean> {
    if (!accountId) throw new Error('accountId is required');
    for (let attempt = 0; attempt < 10; attempt++) {
      const current = (await this.coll.findOne({ _id: sourceId as never })) as SourceProjection | null;
      if (!current) {
        const doc: Omit<SourceProjection, '_id'> = { name: '', status: 'pending', schema: [], rowCount: 0, deleted: false, ...change, accountId, lastEventId: eventId, updatedAt: at };
        try {
          await this.coll.insertOne({ _id: sourceId as never, ...doc });
          return true;
        } catch (err) {
          if ((err as { code?: number })?.code === 11000) continue;
          throw err;
        }
      }
      if (current.accountId !== accountId) return false; // an id never moves between accounts
      if (current.lastEventId >= eventId) return false;
      const next = current.deleted ? { deleted: true } : change;
      const res = await this.coll.updateOne({ _id: sourceId as never, accountId, lastEventId: current.lastEventId }, { $set: { ...next, lastEventId: eventId, updatedAt: at } });
      if (res.matchedCount === 1) return true;
    }
    throw new Error(`source projection ${sourceId} kept changing; giving up for now`);
  }
}
