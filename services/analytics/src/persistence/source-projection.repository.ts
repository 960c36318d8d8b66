import type { Collection, Db, Document } from 'mongodb';
import { COLUMN_TYPES, type Column } from '@dap/contracts';

export type ProjectedStatus = 'pending' | 'syncing' | 'ready' | 'failed';

/** What analytics knows about a source, built only from `sources.events`. */
export interface SourceProjection {
  _id: string;
  accountId: string;
  name: string;
  type: string;
  status: ProjectedStatus;
  error: string | null;
  schema: Column[];
  rowCount: number;
  deleted: boolean;
  /** The newest event applied; ids sort by time, so an older or repeated event is ignored. */
  lastEventId: string;
  updatedAt: Date;
}

export type SourceChange = Partial<Pick<SourceProjection, 'name' | 'type' | 'status' | 'error' | 'schema' | 'rowCount' | 'deleted'>>;

const DEFAULTS: Omit<SourceProjection, '_id' | 'accountId' | 'lastEventId' | 'updatedAt'> = {
  name: '',
  type: '',
  status: 'pending',
  error: null,
  schema: [],
  rowCount: 0,
  deleted: false,
};

/** Unknown column types from a newer producer are treated as strings, the safest reading. */
export function normaliseSchema(schema: readonly { name: string; type: string }[]): Column[] {
  return schema.map((c) => ({ name: c.name, type: (COLUMN_TYPES as readonly string[]).includes(c.type) ? (c.type as Column['type']) : 'string' }));
}

function isDuplicateKey(err: unknown): boolean {
  return (err as { code?: number })?.code === 11000;
}

export class SourceProjectionRepository {
  readonly raw: Collection<Document>;

  constructor(db: Db) {
    this.raw = db.collection('source_projections');
  }

  async init(): Promise<void> {
    await this.raw.createIndex({ accountId: 1, _id: 1 });
  }

  async find(accountId: string, sourceId: string): Promise<SourceProjection | null> {
    if (!accountId) throw new Error('accountId is required');
    return (await this.raw.findOne({ _id: sourceId as never, accountId })) as SourceProjection | null;
  }

  /**
   * Applies an event's change unless a newer (or the same) event was applied already. A deleted source
   * stays deleted. Optimistic: the write only lands if the document is still as read, else it re-reads.
   * Returns whether the change was applied.
   */
  async apply(accountId: string, sourceId: string, eventId: string, change: SourceChange, at: Date): Promise<boolean> {
    if (!accountId) throw new Error('accountId is required');
    for (let attempt = 0; attempt < 10; attempt++) {
      const current = (await this.raw.findOne({ _id: sourceId as never })) as SourceProjection | null;
      if (!current) {
        try {
          await this.raw.insertOne({ ...DEFAULTS, ...change, _id: sourceId as never, accountId, lastEventId: eventId, updatedAt: at });
          return true;
        } catch (err) {
          if (isDuplicateKey(err)) continue;
          throw err;
        }
      }
      if (current.accountId !== accountId) return false; // an id can never move between accounts
      if (current.lastEventId >= eventId) return false;
      const next = current.deleted ? { deleted: true } : change;
      const res = await this.raw.updateOne(
        { _id: sourceId as never, accountId, lastEventId: current.lastEventId },
        { $set: { ...next, lastEventId: eventId, updatedAt: at } },
      );
      if (res.matchedCount === 1) return true;
    }
    throw new Error(`source projection ${sourceId} kept changing; giving up for now`);
  }

  countActive(accountId: string): Promise<number> {
    if (!accountId) throw new Error('accountId is required');
    return this.raw.countDocuments({ accountId, deleted: false });
  }

  /** Total rows over the account's ready sources. */
  async readyRowCount(accountId: string): Promise<number> {
    if (!accountId) throw new Error('accountId is required');
    const docs = await this.raw.find({ accountId, deleted: false, status: 'ready' }, { projection: { rowCount: 1 } }).toArray();
    return docs.reduce((sum, d) => sum + (typeof d.rowCount === 'number' ? d.rowCount : 0), 0);
  }
}
