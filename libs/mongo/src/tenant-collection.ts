import { MongoBulkWriteError, type Collection, type Db, type Document, type Filter } from 'mongodb';
import type { DomainEvent } from '@dap/contracts';
import { stampActiveTrace } from '@dap/tracing';
import type { WrittenEvents } from './outbox.ts';

/** Every stored document names its tenant and may carry events waiting for the outbox relay. */
export interface TenantDoc {
  _id: string;
  accountId: string;
  deletedAt?: Date | null;
  _outbox?: DomainEvent[];
  _outboxPending?: boolean;
}

/** A document as stored: its tenant, not deleted, and the events waiting for the outbox relay. */
function stored(accountId: string, doc: object, events: DomainEvent[]): Document {
  return { ...doc, accountId, deletedAt: null, _outbox: events, _outboxPending: events.length > 0 };
}

type Fields<T> = Partial<Omit<T, '_id' | 'accountId' | '_outbox' | '_outboxPending'>>;

/**
 * A collection whose every method takes the account id first, so a query without a tenant does not compile.
 * State changes and their events are one atomic document write (the outbox lives in the document).
 */
export class TenantCollection<T extends TenantDoc> {
  readonly raw: Collection<Document>;
  private readonly onEvents: (written: WrittenEvents) => void;

  /** `onEvents` gets every write that stored events: pass the relay's `written` so they go out at once. */
  constructor(db: Db, name: string, onEvents: (written: WrittenEvents) => void = () => {}) {
    this.raw = db.collection(name);
    this.onEvents = onEvents;
  }

  private scope(accountId: string, filter: Filter<Document> = {}): Filter<Document> {
    if (!accountId) throw new Error('accountId is required');
    return { ...filter, accountId, deletedAt: null };
  }

  /**
   * By `_id` alone, with the tenant and deletion checked on the document: the same answer as the scoped query,
   * one index probe on any server (docs/architecture.md, "Queries the local MongoDB-wire server can index").
   */
  async findById(accountId: string, id: string): Promise<T | null> {
    if (!accountId) throw new Error('accountId is required');
    const doc = (await this.raw.findOne({ _id: id as unknown as Document['_id'] }, { projection: { _outbox: 0 } })) as T | null;
    return doc && doc.accountId === accountId && doc.deletedAt == null ? doc : null;
  }

  /** Newest first, keyset-paginated on the time-sortable id. */
  async list(accountId: string, opts: { limit: number; before?: string; filter?: Filter<Document> }): Promise<T[]> {
    const filter = this.scope(accountId, opts.filter);
    if (opts.before) filter._id = { $lt: opts.before as unknown as Document['_id'] };
    return (await this.raw
      .find(filter, { projection: { _outbox: 0 } })
      .sort({ _id: -1 })
      .limit(opts.limit)
      .toArray()) as unknown as T[];
  }

  async count(accountId: string, filter?: Filter<Document>): Promise<number> {
    return this.raw.countDocuments(this.scope(accountId, filter));
  }

  async insert(accountId: string, doc: Omit<T, 'accountId'>, events: DomainEvent[] = []): Promise<T> {
    stampActiveTrace(events); // the relay sends the request's trace context on with each event
    const full = stored(accountId, doc, events);
    await this.raw.insertOne(full);
    if (events.length) this.onEvents({ collection: this.raw.collectionName, id: doc._id, events });
    return full as T;
  }

  /** Inserts documents of any tenants in one round trip, with no events (bulk seeding and imports). */
  async insertMany(entries: Array<{ accountId: string; doc: Omit<T, 'accountId'> }>): Promise<void> {
    if (entries.length) await this.raw.insertMany(entries.map((e) => stored(e.accountId, e.doc, [])));
  }

  /**
   * Inserts documents of any tenants, each with its events, in one unordered round trip (a writer batching
   * its own inserts). Answers per entry the error that kept it out, or null once stored; each stored entry's
   * events go to the relay as insert()'s do. A failure of the whole call (outcome unknown) throws: the relay's
   * sweep publishes the events of whatever was stored. Events are not stamped here: a batch holds several
   * requests' entries, so the writer stamps each request's events (stampActiveTrace) in that request.
   */
  async insertEach(entries: ReadonlyArray<{ accountId: string; doc: Omit<T, 'accountId'>; events: DomainEvent[] }>): Promise<(unknown | null)[]> {
    const outcome: (unknown | null)[] = entries.map(() => null);
    if (!entries.length) return outcome;
    const docs = entries.map((e) => stored(e.accountId, e.doc, e.events));
    try {
      await this.raw.insertMany(docs, { ordered: false });
    } catch (err) {
      const errors = err instanceof MongoBulkWriteError ? [err.writeErrors].flat() : [];
      if (!errors.length) throw err;
      for (const e of errors) outcome[e.index] = e;
    }
    entries.forEach((e, i) => {
      if (outcome[i] === null && e.events.length) this.onEvents({ collection: this.raw.collectionName, id: e.doc._id, events: e.events });
    });
    return outcome;
  }

  /** Applies `set` (and records events) only when the document matches `where`; returns the new document. */
  async update(accountId: string, id: string, set: Fields<T>, events: DomainEvent[] = [], where: Filter<Document> = {}): Promise<T | null> {
    return this.write(accountId, id, set, events, where, false);
  }

  private async write(accountId: string, id: string, set: Fields<T>, events: DomainEvent[], where: Filter<Document>, tombstone: boolean): Promise<T | null> {
    const update: Document = { $set: { ...set } };
    if (events.length) {
      stampActiveTrace(events);
      update.$push = { _outbox: { $each: events } };
      update.$set._outboxPending = true;
    }
    const result = await this.raw.findOneAndUpdate(this.scope(accountId, { ...where, _id: id as unknown as Document['_id'] }), update, {
      returnDocument: 'after',
      projection: { _outbox: 0 },
    });
    if (result && events.length) this.onEvents({ collection: this.raw.collectionName, id, events, tombstone });
    return result as T | null;
  }

  /** Removes the document outright, for documents that never carry events (no tombstone is needed); whether it was there. */
  async delete(accountId: string, id: string): Promise<boolean> {
    const res = await this.raw.deleteOne(this.scope(accountId, { _id: id as unknown as Document['_id'] }));
    return res.deletedCount === 1;
  }

  /** Soft-deletes with its event; the relay removes the tombstone once the event is published. */
  async softDelete(accountId: string, id: string, events: DomainEvent[] = []): Promise<T | null> {
    return this.write(accountId, id, { deletedAt: new Date() } as Fields<T>, events, {}, true);
  }
}
