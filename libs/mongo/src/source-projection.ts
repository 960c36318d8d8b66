import type { Collection, Db, Document } from 'mongodb';
import { COLUMN_TYPES, type Column, type DomainEvent, type EventOf } from '@dap/contracts';

export type ProjectedStatus = 'pending' | 'syncing' | 'ready' | 'failed';

/**
 * What a service that owns no sources knows about one, built only from `sources.events` (analytics for its
 * queries and overview, models for its training checks). Each service keeps its own copy in its own database.
 */
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

export const SOURCE_PROJECTIONS_COLLECTION = 'source_projections';

/** A field a document lacks reads as this (the models service once stored neither `type` nor `error`). */
const DEFAULTS: Omit<SourceProjection, '_id' | 'accountId' | 'lastEventId' | 'updatedAt'> = {
  name: '',
  type: '',
  status: 'pending',
  error: null,
  schema: [],
  rowCount: 0,
  deleted: false,
};

/** Unknown column types from a newer producer read as strings, the safest reading. */
export function normaliseSchema(schema: readonly { name: string; type: string }[]): Column[] {
  return schema.map((c) => ({ name: c.name, type: (COLUMN_TYPES as readonly string[]).includes(c.type) ? (c.type as Column['type']) : 'string' }));
}

type SourceEventType = 'source.created' | 'source.ready' | 'source.failed' | 'source.deleted';

/** What each source event changes in the projection. */
const SOURCE_CHANGES: { [T in SourceEventType]: (e: EventOf<T>) => SourceChange } = {
  'source.created': (e) => ({ name: e.data.name, type: e.data.type, status: 'pending', error: null }),
  'source.ready': (e) => ({
    name: e.data.name,
    type: e.data.type,
    status: 'ready',
    error: null,
    schema: normaliseSchema(e.data.schema),
    rowCount: e.data.rowCount,
  }),
  // A failed re-sync that kept the last good data leaves the source ready on it (docs/architecture.md); only
  // a source that never had data becomes failed.
  'source.failed': (e) =>
    e.data.kept
      ? { name: e.data.name, status: 'ready', error: null, schema: normaliseSchema(e.data.kept.schema), rowCount: e.data.kept.rowCount }
      : { name: e.data.name, status: 'failed', error: e.data.error },
  'source.deleted': () => ({ deleted: true }),
};

function isSourceEvent(e: DomainEvent): e is EventOf<SourceEventType> {
  return Object.hasOwn(SOURCE_CHANGES, e.type);
}

/** The source an event is about and what it changes there, or null for any other event. */
export function sourceChangeOf(event: DomainEvent): { sourceId: string; change: SourceChange } | null {
  if (!isSourceEvent(event)) return null;
  return { sourceId: event.data.id, change: (SOURCE_CHANGES[event.type] as (e: DomainEvent) => SourceChange)(event) };
}

function isDuplicateKey(err: unknown): boolean {
  return (err as { code?: number })?.code === 11000;
}

/** The per-account read model of sources, applied idempotently by event id. */
export class SourceProjectionRepository {
  readonly raw: Collection<Document>;

  constructor(db: Db) {
    this.raw = db.collection(SOURCE_PROJECTIONS_COLLECTION);
  }

  /** The index the per-account counts use. */
  async ensureIndexes(): Promise<void> {
    await this.raw.createIndex({ accountId: 1, _id: 1 });
  }

  async find(accountId: string, sourceId: string): Promise<SourceProjection | null> {
    if (!accountId) throw new Error('accountId is required');
    const doc = (await this.raw.findOne({ _id: sourceId as never, accountId })) as SourceProjection | null;
    return doc && { ...DEFAULTS, ...doc };
  }

  /** Applies a source event (see `apply`); any other event is ignored. Returns whether it changed anything. */
  async applyEvent(event: DomainEvent, at = new Date()): Promise<boolean> {
    const of = sourceChangeOf(event);
    return of ? this.apply(event.accountId, of.sourceId, event.id, of.change, at) : false;
  }

  /**
   * Applies an event's change unless the same or a newer event was applied already; a deleted source stays
   * deleted. Optimistic: the write lands only if the document is still as read, else it re-reads.
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
      if (current.accountId !== accountId) return false; // an id never moves between accounts
      if (current.lastEventId >= eventId) return false;
      const next = current.deleted ? { deleted: true } : change;
      const res = await this.raw.updateOne({ _id: sourceId as never, accountId, lastEventId: current.lastEventId }, { $set: { ...next, lastEventId: eventId, updatedAt: at } });
      if (res.matchedCount === 1) return true;
    }
    throw new Error(`source projection ${sourceId} kept changing; giving up for now`);
  }

  /** The account's sources not deleted, whatever their status. */
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
