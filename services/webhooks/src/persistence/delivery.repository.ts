import type { AnyBulkWriteOperation, Collection, Db, Filter, UpdateFilter } from 'mongodb';
import { MongoBulkWriteError } from 'mongodb';
import type { DomainEvent } from '@dap/contracts';
import { OUTBOX_PENDING_INDEX } from '@dap/mongo';
import type { TraceCarrier } from '@dap/tracing';
import type { ResponseRecord } from '../domain/response-record.ts';
import { Batcher } from './batcher.ts';

/** `skipped`: the event came while the endpoint was disabled; stored with its body, never attempted. */
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'cancelled' | 'skipped';

/** Finished without reaching the endpoint: what a replay sends again. */
export const REPLAYABLE_STATUSES: readonly DeliveryStatus[] = ['failed', 'cancelled', 'skipped'];

export interface AttemptDoc {
  at: Date;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  /** The receiver's Retry-After (429/503), bounded, in ms; absent when it sent none. */
  retryAfterMs?: number | null;
  /** The headers sent (the signature is there, the endpoint's secret never); absent on attempts recorded before they were kept. */
  requestHeaders?: Record<string, string> | null;
  /** The answer, capped; null when none came, absent on attempts recorded before answers were kept. */
  response?: ResponseRecord | null;
}

/** One event for one endpoint. `_id` is `${eventId}:${endpointId}`, so scheduling twice is a no-op. */
export interface DeliveryDoc {
  _id: string;
  accountId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  requestId: string | null;
  /** The trace of the event's consumption (W3C Trace Context): each attempt's span is its child. */
  trace?: TraceCarrier;
  /** The exact body signed and sent on every attempt. */
  body: string;
  /** The event's subject (source, model, report id): what an ordered endpoint keeps in order. */
  subject?: string | null;
  status: DeliveryStatus;
  attempts: AttemptDoc[];
  nextAttemptAt: Date | null;
  /** A claim: while in the future, one dispatcher owns the next attempt; a crashed owner's claim expires. */
  lockedUntil: Date;
  lockedBy: string | null;
  /** The instance id of the claim's owner, so a restart under the same id takes its claims back at once. */
  lockedInstance?: string | null;
  /** Index in `attempts` where the current series starts (a manual redelivery starts a new one). */
  seriesStart?: number;
  redeliveries?: number;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  /**
   * Written by earlier versions: the delivery.completed of the final attempt, waiting for the relay. Events
   * are now staged in `delivery_outbox` (see RecordOutbox); the relay still sweeps these at start.
   */
  _outbox?: DomainEvent[];
  _outboxPending?: boolean;
}

/** An endpoint's attempts over a window (see DeliveryRepository.health). */
export interface EndpointHealth {
  attempts: number;
  succeeded: number;
  lastFailureAt: Date | null;
}

/** Attempts made in the current series. */
export const seriesAttempts = (d: Pick<DeliveryDoc, 'attempts' | 'seriesStart'>) => d.attempts.length - (d.seriesStart ?? 0);

type PendingRecord = {
  id: string;
  attemptAt: Date;
  events: DomainEvent[];
} & (
  | {
      owner: string;
      /** When the owner's claim lapses (as the owner itself set or renewed it). */
      claimUntil: Date;
      update: UpdateFilter<DeliveryDoc>;
    }
  /** A delivery stored for the first time with its first attempt (sent before anything was stored). */
  | { insert: DeliveryDoc }
);

/** The events a final attempt of one delivery produces (its delivery.completed). */
export interface OutboxEntry {
  deliveryId: string;
  /** The attempt's time: the entry counts only once the delivery stores an attempt made at this time. */
  attemptAt: Date;
  events: DomainEvent[];
}

export const DELIVERIES_COLLECTION = 'deliveries';

/** Where batches of record writes stage their events (the relay's staged outbox of @dap/mongo). */
export const DELIVERY_OUTBOX = 'delivery_outbox';

/** The entries whose attempt is stored on its delivery: a batch left behind by a crash publishes only those. */
export function recordedEntries(deliveries: Collection<DeliveryDoc>) {
  return async (entries: OutboxEntry[]): Promise<OutboxEntry[]> => {
    const stored = await deliveries.find({ _id: { $in: [...new Set(entries.map((e) => e.deliveryId))] } }, { projection: { attempts: 1 } }).toArray();
    const attemptsOf = new Map(stored.map((d) => [d._id, d.attempts]));
    return entries.filter((e) => (attemptsOf.get(e.deliveryId) ?? []).some((a) => a.at.getTime() === e.attemptAt.getTime()));
  };
}

/**
 * Where a record write stages the events of final attempts: staged before the write, published once it is
 * done, verified with `recordedEntries` when left behind (OutboxRelay of @dap/mongo, its staged outbox).
 */
export interface RecordOutbox {
  stage(entries: OutboxEntry[]): Promise<string>;
  recorded(id: string, entries: OutboxEntry[]): void;
  unsettled(id: string): void;
}

export type RedeliverResult =
  | { outcome: 'scheduled'; delivery: DeliveryDoc }
  | { outcome: 'not_found' }
  | { outcome: 'in_progress' }
  /**
   * Finished by an earlier version, whose delivery.completed (stored on the delivery) is not published yet.
   * Events staged in the delivery outbox do not hold a redelivery up: they are tied to their own attempt.
   */
  | { outcome: 'finishing' };

export type RetryNowResult = { outcome: 'due'; delivery: DeliveryDoc } | { outcome: 'not_found' } | { outcome: 'not_pending' };

export const UNLOCKED = new Date(0);
/**
 * A record whose claim has at least this long to run is written without reading the claim back first: only
 * its owner can extend or give back a claim, and no other instance may take it before it lapses.
 */
export const CLAIM_MARGIN_MS = 5_000;
const RETENTION_SECONDS = 30 * 24 * 3600;
/**
 * How long an attempt's record waits for others to share its bulk write (and its outbox batch). Measured in the
 * delivery bench on two cores, 8,000 events at once: without it a write held ~6 records, and the service spent
 * ~257 µs of CPU per delivery and MongoDB ~100; with 20 ms, ~216 and ~84, and deliveries/s rose ~10 %. When
 * idle, an attempt shows in the deliveries log (and its delivery.completed goes out) up to this much later.
 */
export const RECORD_LINGER_MS = 20;

export const deliveryIdOf = (eventId: string, endpointId: string) => `${eventId}:${endpointId}`;

/** Who holds a delivery's next attempt, and until when. */
export interface Claim {
  until: Date;
  owner: string;
  instance: string;
}

/**
 * A new delivery of one event to one endpoint, due at `now`: claimed by `claim` (the insert is then the
 * claim), or free for the claim query when it is null.
 */
export function newDelivery(
  d: Pick<DeliveryDoc, 'accountId' | 'endpointId' | 'eventId' | 'eventType' | 'requestId' | 'body' | 'subject' | 'trace'>,
  claim: Claim | null,
  now: Date = new Date(),
): DeliveryDoc {
  return {
    _id: deliveryIdOf(d.eventId, d.endpointId),
    ...d,
    status: 'pending',
    attempts: [],
    nextAttemptAt: now,
    lockedUntil: claim?.until ?? UNLOCKED,
    lockedBy: claim?.owner ?? null,
    lockedInstance: claim?.instance ?? null,
    createdAt: now,
    updatedAt: now,
    finishedAt: null,
  };
}

/** An event that came while its endpoint was disabled: in the log with its body, not sent (a replay sends it). */
export function skippedDelivery(
  d: Pick<DeliveryDoc, 'accountId' | 'endpointId' | 'eventId' | 'eventType' | 'requestId' | 'body' | 'subject' | 'trace'>,
  now: Date = new Date(),
): DeliveryDoc {
  return { ...newDelivery(d, null, now), status: 'skipped', nextAttemptAt: null, finishedAt: now };
}

export interface ReplayResult {
  replayed: number;
  /** The last message looked at when more remain (the next call starts at its time), else null. */
  lastEventId: string | null;
}

function isDuplicateOnly(err: unknown): err is MongoBulkWriteError {
  if (!(err instanceof MongoBulkWriteError)) return false;
  const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
  return errors.length > 0 && errors.every((w) => w.code === 11000);
}

/** A delivery's state after an attempt: what comes next, unclaimed, and finished unless it waits for a retry. */
function afterAttempt(next: { status: DeliveryStatus; nextAttemptAt: Date | null }, now: Date) {
  return {
    status: next.status,
    nextAttemptAt: next.nextAttemptAt,
    lockedUntil: UNLOCKED,
    lockedBy: null,
    lockedInstance: null,
    updatedAt: now,
    finishedAt: next.status === 'pending' ? null : now,
  };
}

export class DeliveryRepository {
  readonly raw: Collection<DeliveryDoc>;
  private readonly outbox: RecordOutbox;
  /** Inserts from concurrent consumers go to the database together. */
  private readonly inserts = new Batcher<DeliveryDoc[], Set<string>>((groups) => this.insertGroups(groups));
  /**
   * Attempt results from concurrent deliveries go to the database as one bulk write, gathered for up to
   * RECORD_LINGER_MS: nothing waits on a record (the endpoint's slot is free once it answered).
   */
  private readonly records = new Batcher<PendingRecord, boolean>((items) => this.writeRecords(items), { lingerMs: RECORD_LINGER_MS });

  /** The dispatcher's clock: due times and claims are compared with it. */
  private readonly now: () => number;

  /** `outbox` holds the events of final attempts from before their record write until they are published. */
  constructor(db: Db, outbox: RecordOutbox, now: () => number = () => Date.now()) {
    this.raw = db.collection<DeliveryDoc>(DELIVERIES_COLLECTION);
    this.outbox = outbox;
    this.now = now;
  }

  async ensureIndexes(): Promise<void> {
    await this.raw.createIndex({ status: 1, nextAttemptAt: 1 });
    await this.raw.createIndex(...OUTBOX_PENDING_INDEX);
    await this.raw.createIndex({ lockedInstance: 1, status: 1 });
    await this.raw.createIndex({ endpointId: 1, status: 1 });
    await this.raw.createIndex({ endpointId: 1, subject: 1, status: 1, eventId: 1 });
    await this.raw.createIndex({ accountId: 1, endpointId: 1, _id: -1 });
    // An attempt's record sets updatedAt, so deliveries with an attempt since T have updatedAt >= T (health).
    await this.raw.createIndex({ accountId: 1, endpointId: 1, updatedAt: -1 });
    await this.raw.createIndex({ finishedAt: 1 }, { expireAfterSeconds: RETENTION_SECONDS });
  }

  /** Inserts what is not there yet; answers the ids this call inserted (a duplicate was already scheduled). */
  async insertMany(docs: DeliveryDoc[]): Promise<Set<string>> {
    if (!docs.length) return new Set();
    return this.inserts.add(docs);
  }

  private async insertGroups(groups: DeliveryDoc[][]): Promise<Set<string>[]> {
    const docs = groups.flat();
    const failed = new Set<number>();
    try {
      await this.raw.insertMany(docs, { ordered: false });
    } catch (err) {
      if (!isDuplicateOnly(err)) throw err;
      const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
      for (const w of errors) failed.add(w.index);
    }
    let i = 0;
    return groups.map((g) => {
      const inserted = new Set<string>();
      for (const d of g) if (!failed.has(i++)) inserted.add(d._id);
      return inserted;
    });
  }

  /** Which of these deliveries are stored (read by _id alone). */
  async existingIds(ids: string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const found = await this.raw.find({ _id: { $in: ids } }, { projection: { _id: 1 } }).toArray();
    return new Set(found.map((d) => d._id));
  }

  /** Claims the most overdue delivery that is free, skipping endpoints this instance has no slot for. */
  async claimDue(now: Date, until: Date, owner: { id: string; instance: string }, skipEndpoints: string[]): Promise<DeliveryDoc | null> {
    const filter: Filter<DeliveryDoc> = { status: 'pending', nextAttemptAt: { $lte: now }, lockedUntil: { $lte: now } };
    if (skipEndpoints.length) filter.endpointId = { $nin: skipEndpoints };
    return this.raw.findOneAndUpdate(
      filter,
      { $set: { lockedUntil: until, lockedBy: owner.id, lockedInstance: owner.instance } },
      { sort: { nextAttemptAt: 1 }, returnDocument: 'after', projection: { _outbox: 0 } },
    );
  }

  /**
   * Frees the claims that an earlier process with this instance id still holds: that process is gone (this
   * one has its id), so its attempts are due again now rather than when the leases lapse.
   */
  async releaseInstanceClaims(instance: string, currentOwner: string): Promise<number> {
    const res = await this.raw.updateMany(
      { status: 'pending', lockedInstance: instance, lockedBy: { $nin: [null, currentOwner] } },
      { $set: { lockedUntil: UNLOCKED, lockedBy: null, lockedInstance: null } },
    );
    return res.modifiedCount;
  }

  /** Extends this owner's claim; answers the new expiry, or null if the claim was lost (lapsed and taken, or finished). */
  async renewClaim(id: string, owner: string, until: Date): Promise<Date | null> {
    const res = await this.raw.updateOne({ _id: id, lockedBy: owner, status: 'pending' }, { $set: { lockedUntil: until } });
    return res.matchedCount > 0 ? until : null;
  }

  /** Gives back every claim this owner still holds (graceful shutdown), so they are due again at once. */
  async releaseOwner(owner: { id: string; instance: string }): Promise<number> {
    const res = await this.raw.updateMany(
      { lockedInstance: owner.instance, status: 'pending', lockedBy: owner.id },
      { $set: { lockedUntil: UNLOCKED, lockedBy: null, lockedInstance: null } },
    );
    return res.modifiedCount;
  }

  /**
   * Records one attempt and what comes next, if this owner still holds the claim; answers whether it did.
   * `events` (the delivery.completed of a final attempt) are staged in the outbox before the write and
   * published once it is done. Concurrent records share one bulk write (and one outbox batch).
   */
  async recordAttempt(
    id: string,
    claim: { owner: string; until: Date },
    attempt: AttemptDoc,
    next: { status: DeliveryStatus; nextAttemptAt: Date | null },
    events: DomainEvent[] = [],
  ): Promise<boolean> {
    const update: UpdateFilter<DeliveryDoc> = { $push: { attempts: attempt }, $set: afterAttempt(next, new Date(this.now())) };
    return this.records.add({ id, owner: claim.owner, claimUntil: claim.until, update, attemptAt: attempt.at, events });
  }

  /**
   * Stores a delivery not stored yet together with its first attempt and what comes next (an attempt sent
   * before any write), in the same bulk writes as the other records. Answers false when the delivery was
   * stored already (its event consumed again after a crash or a rebalance): that record stands.
   */
  async recordFirstAttempt(doc: DeliveryDoc, attempt: AttemptDoc, next: { status: DeliveryStatus; nextAttemptAt: Date | null }, events: DomainEvent[] = []): Promise<boolean> {
    const insert: DeliveryDoc = { ...doc, attempts: [attempt], ...afterAttempt(next, new Date(this.now())) };
    return this.records.add({ id: doc._id, insert, attemptAt: attempt.at, events });
  }

  /**
   * Writes a batch of records by id. Every by-id read or write costs the local wire-compatible server index
   * look-ups that dominate its CPU, so claims are not read back when they cannot have changed hands:
   * a claim with more than CLAIM_MARGIN_MS to run is held by its owner until then, whoever else looks. Only
   * records whose claim is about to lapse (the owner stalled) are checked by id first; between that check
   * and the write (milliseconds) a claim could only change hands if the owner stalled again for its lease.
   * A delivery cancelled (its endpoint deleted or disabled) while an attempt was on the wire records that
   * attempt and its outcome; if that outcome is a retry, the retry finds the endpoint gone or disabled and
   * cancels the delivery again.
   */
  private async writeRecords(items: PendingRecord[]): Promise<boolean[]> {
    const safeUntil = this.now() + CLAIM_MARGIN_MS;
    const unsure = items.flatMap((i) => ('insert' in i || i.claimUntil.getTime() > safeUntil ? [] : [i.id]));
    const current = unsure.length ? await this.raw.find({ _id: { $in: [...new Set(unsure)] } }, { projection: { lockedBy: 1, status: 1 } }).toArray() : [];
    const byId = new Map(current.map((d) => [d._id, d]));
    const owned = items.map((i) => 'insert' in i || i.claimUntil.getTime() > safeUntil || (byId.get(i.id)?.lockedBy === i.owner && byId.get(i.id)?.status === 'pending'));
    const writes = items.filter((_, k) => owned[k]);
    const ops: AnyBulkWriteOperation<DeliveryDoc>[] = writes.map((i) =>
      'insert' in i ? { insertOne: { document: i.insert } } : { updateOne: { filter: { _id: i.id }, update: i.update } },
    );
    const entryOf = (i: PendingRecord): OutboxEntry => ({ deliveryId: i.id, attemptAt: i.attemptAt, events: i.events });
    const entries: OutboxEntry[] = writes.filter((i) => i.events.length).map(entryOf);
    // The events are stored before the attempts, so no recorded final attempt is left without its event.
    const staged = entries.length ? await this.outbox.stage(entries) : null;
    /** Inserts refused as duplicates, by index in `ops`: the delivery was stored before, and that record stands. */
    const duplicates = new Set<number>();
    try {
      if (ops.length) await this.raw.bulkWrite(ops, { ordered: false });
    } catch (err) {
      const dupOfInsert = (w: { index: number; code?: number }) => w.code === 11000 && 'insertOne' in ops[w.index]!;
      const errors = err instanceof MongoBulkWriteError ? (Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors]) : [];
      if (!errors.length || !errors.every(dupOfInsert)) {
        if (staged) this.outbox.unsettled(staged);
        throw err;
      }
      for (const w of errors) duplicates.add(w.index);
    }
    const refused = new Set(writes.filter((_, k) => duplicates.has(k)));
    if (staged) this.outbox.recorded(staged, refused.size ? writes.filter((i) => i.events.length && !refused.has(i)).map(entryOf) : entries);
    return items.map((i, k) => owned[k]! && !refused.has(i));
  }

  /**
   * Makes a finished delivery due again now as a new attempt series (same event, same webhook-id). A
   * delivery still pending is already being attempted, so it is left alone.
   */
  async redeliver(accountId: string, endpointId: string, eventId: string): Promise<RedeliverResult> {
    const _id = deliveryIdOf(eventId, endpointId);
    for (let tries = 0; tries < 3; tries++) {
      const current = await this.raw.findOne({ _id }, { projection: { _outbox: 0, body: 0 } });
      if (!current || current.accountId !== accountId || current.endpointId !== endpointId) return { outcome: 'not_found' };
      if (current.status === 'pending') return { outcome: 'in_progress' };
      if (current._outboxPending) return { outcome: 'finishing' };
      const now = new Date(this.now());
      // Compare-and-set: a finished delivery gains no attempts, so the series starts right after those seen;
      // of two redeliveries at once, one wins and the other finds it pending.
      const updated = await this.raw.findOneAndUpdate(
        { _id, lockedBy: null, status: current.status, _outboxPending: { $ne: true } },
        {
          $set: {
            status: 'pending',
            nextAttemptAt: now,
            lockedUntil: UNLOCKED,
            lockedBy: null,
            lockedInstance: null,
            seriesStart: current.attempts.length,
            updatedAt: now,
            finishedAt: null,
          },
          $inc: { redeliveries: 1 },
        },
        { returnDocument: 'after', projection: { _outbox: 0 } },
      );
      if (updated) return { outcome: 'scheduled', delivery: updated };
    }
    return { outcome: 'in_progress' };
  }

  /** One delivery of the account's endpoint with its body, or null (another account's answers null too). */
  async findForEndpoint(accountId: string, endpointId: string, eventId: string): Promise<DeliveryDoc | null> {
    if (!accountId) throw new Error('accountId is required');
    // Read by _id alone (one index probe), then checked.
    const found = await this.raw.findOne({ _id: deliveryIdOf(eventId, endpointId) }, { projection: { _outbox: 0 } });
    return found && found.accountId === accountId && found.endpointId === endpointId ? found : null;
  }

  /**
   * Makes a pending delivery's next attempt due now (its series goes on; nothing else changes). One that is
   * claimed is being attempted already and is answered as it is; one already due is left as it is.
   */
  async retryNow(accountId: string, endpointId: string, eventId: string, now: Date = new Date(this.now())): Promise<RetryNowResult> {
    const _id = deliveryIdOf(eventId, endpointId);
    for (let tries = 0; tries < 3; tries++) {
      const current = await this.raw.findOne({ _id }, { projection: { _outbox: 0, body: 0 } });
      if (!current || current.accountId !== accountId || current.endpointId !== endpointId) return { outcome: 'not_found' };
      if (current.status !== 'pending') return { outcome: 'not_pending' };
      if (current.lockedBy !== null || (current.nextAttemptAt && current.nextAttemptAt.getTime() <= now.getTime())) return { outcome: 'due', delivery: current };
      // Compare-and-set: a claim taken meanwhile (the retry came due) or a finished attempt wins.
      const updated = await this.raw.findOneAndUpdate(
        { _id, status: 'pending', lockedBy: null, nextAttemptAt: current.nextAttemptAt },
        { $set: { nextAttemptAt: now, updatedAt: now } },
        { returnDocument: 'after', projection: { _outbox: 0, body: 0 } },
      );
      if (updated) return { outcome: 'due', delivery: updated };
    }
    const last = await this.raw.findOne({ _id }, { projection: { _outbox: 0, body: 0 } });
    return last?.status === 'pending' ? { outcome: 'due', delivery: last } : { outcome: 'not_pending' };
  }

  /**
   * Makes the endpoint's messages from the event id `floorId` on (ids sort by event time) that finished without reaching it
   * due again, oldest first, at most `limit`, each as a new attempt series like `redeliver`. Pending ones (being
   * attempted, or replayed already) and delivered ones are left alone, so a repeated replay sends nothing twice.
   */
  async replay(accountId: string, endpointId: string, floorId: string, limit: number): Promise<ReplayResult> {
    const found = await this.raw
      .find(
        { accountId, endpointId, _id: { $gte: floorId }, status: { $in: [...REPLAYABLE_STATUSES] }, _outboxPending: { $ne: true } },
        // Only the count of attempts is needed, not what each sent and received.
        { projection: { status: 1, eventId: 1, 'attempts.at': 1 } },
      )
      .sort({ _id: 1 })
      .limit(limit + 1)
      .toArray();
    const batch = found.slice(0, limit);
    if (!batch.length) return { replayed: 0, lastEventId: null };
    const now = new Date(this.now());
    // Compare-and-set per message, as in redeliver: one that changed meanwhile is left to whoever changed it.
    const res = await this.raw.bulkWrite(
      batch.map((d) => ({
        updateOne: {
          filter: { _id: d._id, accountId, status: d.status, lockedBy: null, _outboxPending: { $ne: true } },
          update: {
            $set: {
              status: 'pending' as const,
              nextAttemptAt: now,
              lockedUntil: UNLOCKED,
              lockedBy: null,
              lockedInstance: null,
              seriesStart: d.attempts.length,
              updatedAt: now,
              finishedAt: null,
            },
            $inc: { redeliveries: 1 },
          },
        },
      })),
      { ordered: false },
    );
    return { replayed: res.modifiedCount, lastEventId: found.length > limit ? batch.at(-1)!.eventId : null };
  }

  /** Ends a delivery without an attempt (its endpoint is gone or disabled). */
  async cancel(id: string, owner: string): Promise<void> {
    const now = new Date(this.now());
    await this.raw.updateOne(
      { _id: id, lockedBy: owner, status: 'pending' },
      { $set: { status: 'cancelled', nextAttemptAt: null, lockedUntil: UNLOCKED, lockedBy: null, lockedInstance: null, updatedAt: now, finishedAt: now } },
    );
  }

  /** Gives a claim back unused (shutdown), so the attempt is due again at once. */
  /** The oldest delivery of an earlier event of the same subject still pending for the endpoint (ordered endpoints). */
  earlierPending(endpointId: string, subject: string, eventId: string): Promise<Pick<DeliveryDoc, '_id' | 'nextAttemptAt'> | null> {
    return this.raw.findOne({ endpointId, subject, status: 'pending', eventId: { $lt: eventId } }, { sort: { eventId: 1 }, projection: { _id: 1, nextAttemptAt: 1 } });
  }

  /** Makes the later events of a subject that waited (never attempted, unclaimed) due now: their predecessor is done. */
  async releaseSuccessors(endpointId: string, subject: string, eventId: string): Promise<number> {
    const now = new Date(this.now());
    const res = await this.raw.updateMany(
      { endpointId, subject, status: 'pending', eventId: { $gt: eventId }, lockedBy: null, 'attempts.0': { $exists: false }, nextAttemptAt: { $gt: now } },
      { $set: { nextAttemptAt: now, updatedAt: now } },
    );
    return res.modifiedCount;
  }

  /** Gives this owner's claim back with the next attempt due at `at` (its endpoint asked to wait), no attempt made. */
  async postpone(id: string, owner: string, at: Date): Promise<void> {
    await this.raw.updateOne(
      { _id: id, lockedBy: owner, status: 'pending' },
      { $set: { nextAttemptAt: at, lockedUntil: UNLOCKED, lockedBy: null, lockedInstance: null, updatedAt: new Date(this.now()) } },
    );
  }

  async release(id: string, owner: string): Promise<void> {
    await this.raw.updateOne({ _id: id, lockedBy: owner, status: 'pending' }, { $set: { lockedUntil: UNLOCKED, lockedBy: null, lockedInstance: null } });
  }

  async cancelForEndpoint(accountId: string, endpointId: string): Promise<number> {
    const now = new Date(this.now());
    const res = await this.raw.updateMany(
      { accountId, endpointId, status: 'pending' },
      { $set: { status: 'cancelled', nextAttemptAt: null, lockedUntil: UNLOCKED, lockedBy: null, lockedInstance: null, updatedAt: now, finishedAt: now } },
    );
    return res.modifiedCount;
  }

  /**
   * Per endpoint, the attempts made since `since`, how many the receiver answered 2xx, and the newest one it
   * did not. Only deliveries updated since then are read (the accountId, endpointId, updatedAt index); an
   * endpoint with no attempt in the window is absent from the answer.
   */
  async health(accountId: string, endpointIds: string[], since: Date): Promise<Map<string, EndpointHealth>> {
    if (!accountId) throw new Error('accountId is required');
    if (!endpointIds.length) return new Map();
    const ok = { $and: [{ $gte: ['$attempts.statusCode', 200] }, { $lt: ['$attempts.statusCode', 300] }] };
    const rows = await this.raw
      .aggregate<{ _id: string; attempts: number; succeeded: number; lastFailureAt: Date | null }>([
        { $match: { accountId, endpointId: endpointIds.length === 1 ? endpointIds[0] : { $in: endpointIds }, updatedAt: { $gte: since } } },
        { $project: { endpointId: 1, attempts: 1 } },
        { $unwind: '$attempts' },
        { $match: { 'attempts.at': { $gte: since } } },
        {
          $group: {
            _id: '$endpointId',
            attempts: { $sum: 1 },
            succeeded: { $sum: { $cond: [ok, 1, 0] } },
            lastFailureAt: { $max: { $cond: [ok, null, '$attempts.at'] } },
          },
        },
      ])
      .toArray();
    return new Map(rows.map((r) => [r._id, { attempts: r.attempts, succeeded: r.succeeded, lastFailureAt: r.lastFailureAt ?? null }]));
  }

  /**
   * Newest event first; `before` is a delivery id from the previous page. `from`/`to` bound the delivery id
   * (>= from, < to: event-time floors), so the time filters read through the (accountId, endpointId, _id) index.
   */
  async listForEndpoint(
    accountId: string,
    endpointId: string,
    opts: { limit: number; before?: string | undefined; status?: DeliveryStatus | undefined; eventType?: string | undefined; from?: string | undefined; to?: string | undefined },
  ): Promise<DeliveryDoc[]> {
    const filter: Filter<DeliveryDoc> = { accountId, endpointId };
    const upper = [opts.before, opts.to].filter((v): v is string => v !== undefined).sort()[0];
    if (upper !== undefined || opts.from !== undefined) filter._id = { ...(upper !== undefined ? { $lt: upper } : {}), ...(opts.from !== undefined ? { $gte: opts.from } : {}) };
    if (opts.status) filter.status = opts.status;
    if (opts.eventType) filter.eventType = opts.eventType;
    return (
      this.raw
        // The log's list shows each attempt's outcome; what was sent and received is in one delivery's detail.
        .find(filter, { projection: { _outbox: 0, body: 0, 'attempts.requestHeaders': 0, 'attempts.response': 0 } })
        .sort({ _id: -1 })
        .limit(opts.limit)
        .toArray()
    );
  }
}
