import type { Collection, Db, Document, Filter } from 'mongodb';
import { MongoBulkWriteError } from 'mongodb';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'cancelled';

export interface AttemptDoc {
  at: Date;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

/** One event for one endpoint. `_id` is `${eventId}:${endpointId}`, so scheduling twice is a no-op. */
export interface DeliveryDoc {
  _id: string;
  accountId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  requestId: string | null;
  /** The exact body signed and sent on every attempt. */
  body: string;
  status: DeliveryStatus;
  attempts: AttemptDoc[];
  nextAttemptAt: Date | null;
  /** A claim: while in the future, one dispatcher owns the next attempt; a crashed owner's claim expires. */
  lockedUntil: Date;
  lockedBy: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

export const UNLOCKED = new Date(0);
const RETENTION_SECONDS = 30 * 24 * 3600;

export const deliveryIdOf = (eventId: string, endpointId: string) => `${eventId}:${endpointId}`;

function isDuplicateOnly(err: unknown): err is MongoBulkWriteError {
  if (!(err instanceof MongoBulkWriteError)) return false;
  const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
  return errors.length > 0 && errors.every((w) => w.code === 11000);
}

export class DeliveryRepository {
  readonly raw: Collection<DeliveryDoc>;

  constructor(db: Db) {
    this.raw = db.collection<DeliveryDoc>('deliveries');
  }

  async init(): Promise<void> {
    await this.raw.createIndex({ status: 1, nextAttemptAt: 1 });
    await this.raw.createIndex({ endpointId: 1, status: 1 });
    await this.raw.createIndex({ accountId: 1, endpointId: 1, _id: -1 });
    await this.raw.createIndex({ finishedAt: 1 }, { expireAfterSeconds: RETENTION_SECONDS });
  }

  /** Inserts what is not there yet; answers the ids this call inserted (a duplicate was already scheduled). */
  async insertMany(docs: DeliveryDoc[]): Promise<Set<string>> {
    const ids = new Set(docs.map((d) => d._id));
    if (!docs.length) return ids;
    try {
      await this.raw.insertMany(docs, { ordered: false });
    } catch (err) {
      if (!isDuplicateOnly(err)) throw err;
      const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
      for (const w of errors) ids.delete(docs[w.index]!._id);
    }
    return ids;
  }

  /** Claims the most overdue delivery that is free, skipping endpoints this instance has no slot for. */
  async claimDue(now: Date, until: Date, owner: string, skipEndpoints: string[]): Promise<DeliveryDoc | null> {
    const filter: Filter<DeliveryDoc> = { status: 'pending', nextAttemptAt: { $lte: now }, lockedUntil: { $lte: now } };
    if (skipEndpoints.length) filter.endpointId = { $nin: skipEndpoints };
    return this.raw.findOneAndUpdate(filter, { $set: { lockedUntil: until, lockedBy: owner } }, { sort: { nextAttemptAt: 1 }, returnDocument: 'after' });
  }

  /** Records one attempt and what comes next, if this owner still holds the claim. */
  async recordAttempt(
    id: string,
    owner: string,
    attempt: AttemptDoc,
    next: { status: DeliveryStatus; nextAttemptAt: Date | null },
  ): Promise<boolean> {
    const now = new Date();
    const res = await this.raw.updateOne(
      { _id: id, lockedBy: owner, status: 'pending' },
      {
        $push: { attempts: attempt },
        $set: {
          status: next.status,
          nextAttemptAt: next.nextAttemptAt,
          lockedUntil: UNLOCKED,
          lockedBy: null,
          updatedAt: now,
          finishedAt: next.status === 'pending' ? null : now,
        },
      },
    );
    return res.matchedCount > 0;
  }

  /** Ends a delivery without an attempt (its endpoint is gone or disabled). */
  async cancel(id: string, owner: string): Promise<void> {
    const now = new Date();
    await this.raw.updateOne(
      { _id: id, lockedBy: owner, status: 'pending' },
      { $set: { status: 'cancelled', nextAttemptAt: null, lockedUntil: UNLOCKED, lockedBy: null, updatedAt: now, finishedAt: now } },
    );
  }

  /** Gives a claim back unused (shutdown), so the attempt is due again at once. */
  async release(id: string, owner: string): Promise<void> {
    await this.raw.updateOne({ _id: id, lockedBy: owner }, { $set: { lockedUntil: UNLOCKED, lockedBy: null } });
  }

  async cancelForEndpoint(accountId: string, endpointId: string): Promise<number> {
    const now = new Date();
    const res = await this.raw.updateMany(
      { accountId, endpointId, status: 'pending' },
      { $set: { status: 'cancelled', nextAttemptAt: null, updatedAt: now, finishedAt: now } },
    );
    return res.modifiedCount;
  }

  /** Newest event first; `before` is a delivery id from the previous page. */
  async listForEndpoint(accountId: string, endpointId: string, opts: { limit: number; before?: string }): Promise<DeliveryDoc[]> {
    const filter: Filter<DeliveryDoc> = { accountId, endpointId };
    if (opts.before) filter._id = { $lt: opts.before };
    return this.raw.find(filter).sort({ _id: -1 }).limit(opts.limit).toArray();
  }
}
