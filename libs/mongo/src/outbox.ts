import { randomUUID } from 'node:crypto';
import type { AnyBulkWriteOperation, Collection, Document } from 'mongodb';
import type { DomainEvent } from '@dap/contracts';
import type { Logger } from '@dap/logger';
import { stampActiveTrace } from '@dap/tracing';
import { SerialPass } from './serial-pass.ts';

export interface EventPublisher {
  publish(events: DomainEvent[]): Promise<void>;
}

/** What a writer hands the relay after a state write that carried events (see TenantCollection). */
export interface WrittenEvents {
  collection: string;
  id: string;
  events: DomainEvent[];
  /** The write was a soft delete: the document goes once its events are out. */
  tombstone?: boolean;
}

interface Pending {
  events: DomainEvent[];
  tombstone: boolean;
}

/** One entry of a staged batch: the events of one document's write, and whatever `verify` needs to tie them to it. */
export interface StagedEntry {
  events: DomainEvent[];
}

/** A batch of events staged ahead of the multi-document write that causes them. */
export interface StagedBatch<E extends StagedEntry = StagedEntry> {
  _id: string;
  /** The process that staged it, and its instance id. */
  owner: string;
  instance: string;
  createdAt: Date;
  entries: E[];
}

/**
 * For writers whose state changes are bulk writes over many documents (webhooks' attempt records): an `_outbox`
 * on each document would cost a read and a write per document to relay; a staged batch costs one insert and
 * one delete. The events are not in the state's own atomic write, so they are tied to it instead:
 * 1. `stage(entries)` stores the batch before the state write;
 * 2. the caller makes the write;
 * 3. `recorded(id, entries)` publishes the events from memory and deletes the batch; `unsettled(id)` (the
 *    write failed, or its outcome is unknown) leaves it to the sweep.
 * A batch left behind (a crash between 1 and 3, a failed write) is swept: `verify` keeps the entries whose
 * write did happen, and only their events are published, so a write that never happened (and will be made
 * again) emits nothing, and one that did emits its events — again after a crash, with the same event ids.
 * A batch of this process still being written is never swept; one of this instance's dead predecessor is
 * swept at once; another instance's only once older than `staleMs`.
 */
export interface StagedOutboxOptions<E extends StagedEntry> {
  collection: Collection<StagedBatch<E>>;
  /** This instance's id (stable across its restarts). */
  instance: string;
  /** How old another instance's batch must be before it is swept here: past the point where its writer could still settle it. */
  staleMs: number;
  /** The entries whose state write is stored (a left-behind batch publishes only theirs). */
  verify: (entries: E[]) => Promise<E[]>;
  /** How often batches that nobody settled are looked for; default 60 s. */
  sweepMs?: number;
  /**
   * How long recorded batches wait for more before they are published (default 0: the next turn), so a busy
   * writer makes one producer call per many writes; they go at once when `LINGER_EVENTS` are ready.
   */
  lingerMs?: number;
}

const LINGER_EVENTS = 500;

export interface OutboxRelayOptions<E extends StagedEntry> {
  /** Collections whose documents carry events in `_outbox`. */
  collections: Collection<Document>[];
  publisher: EventPublisher;
  logger: Logger;
  intervalMs?: number;
  retryMs?: number;
  batchSize?: number;
  /**
   * Collections whose documents get no events while some are pending (logs, which get them only when inserted):
   * they are cleared by id alone in one write per document, without the emptiness condition's second write.
   */
  insertOnly?: string[];
  /** Collections that only earlier versions wrote events to: swept at start, not on every interval. */
  sweptAtStartOnly?: string[];
  /** A staged outbox besides the documents' (see StagedOutboxOptions). */
  staged?: StagedOutboxOptions<E>;
  /**
   * How long events handed over by writers wait for more before they are published (default 0: the next
   * turn); they go at once when `LINGER_EVENTS` are waiting. A writer of many small documents (one per
   * prediction) trades that much publish delay for one Kafka batch and one bulk clear per interval instead
   * of one per write, work that would otherwise compete with its requests.
   */
  lingerMs?: number;
}

/**
 * Publishes events from the outboxes, then removes them: events stored in documents' `_outbox`, and, where a
 * service has one, batches staged ahead of bulk writes (see StagedOutboxOptions).
 *
 * One guarantee: an event leaves its outbox only after Kafka acknowledged it. A crash between the write and
 * the publish loses nothing, and can publish an event twice (at least once), with the same event id, which
 * consumers de-duplicate. Two paths lead there:
 * - hand-off: a writer passes the events it has just stored (`written`, `recorded`); everything handed over
 *   while a pass runs goes out in the next pass as one Kafka batch, and the documents are cleared by id in one
 *   bulk write per collection. No query for pending documents.
 * - sweep: at start-up, every `intervalMs` and on `kick()`, a query for pending documents finds what a crashed
 *   writer (this process before a restart, or another instance) left behind; staged batches are swept every
 *   `staged.sweepMs`.
 * A failed publish keeps the handed-over events in memory and retries them every `retryMs`; they are in
 * MongoDB too, so the sweep would find them if this process died first.
 */
export class OutboxRelay<E extends StagedEntry = StagedEntry> {
  private readonly collections = new Map<string, Collection<Document>>();
  private readonly publisher: EventPublisher;
  private readonly logger: Logger;
  private readonly intervalMs: number;
  private readonly retryMs: number;
  private readonly batchSize: number;
  private readonly insertOnly: ReadonlySet<string>;
  private readonly atStartOnly: ReadonlySet<string>;
  private readonly staged: StagedOutboxOptions<E> | undefined;
  private readonly lingerMs: number;
  /** Events handed over and not yet taken by a pass (what the linger threshold counts). */
  private handedEvents = 0;
  /** Unique to this process: its staged batches are its own to settle. */
  readonly owner = `obp_${randomUUID()}`;
  /** collection → document id → events handed over and not yet published. */
  private handed = new Map<string, Map<string, Pending>>();
  /** Staged batches this process is writing (not the sweep's to touch). */
  private readonly open = new Set<string>();
  /** Staged batches recorded, waiting to be published and deleted. */
  private ready: Array<{ id: string; events: DomainEvent[] }> = [];
  private readyEvents = 0;
  /** Staged batches published; their deletion is pending or failed and is tried again. */
  private readonly toDelete = new Set<string>();
  private sweepWanted = false;
  private stagedSweepWanted = false;
  private sweptAtStart = false;
  private timer: NodeJS.Timeout | null = null;
  private stagedTimer: NodeJS.Timeout | null = null;
  private lingerTimer: NodeJS.Timeout | null = null;
  private scheduled = false;
  private stopped = false;
  private readonly passes: SerialPass;

  constructor(opts: OutboxRelayOptions<E>) {
    for (const c of opts.collections) this.collections.set(c.collectionName, c);
    this.publisher = opts.publisher;
    this.logger = opts.logger;
    this.intervalMs = opts.intervalMs ?? 1_000;
    this.retryMs = opts.retryMs ?? Math.min(this.intervalMs, 1_000);
    this.batchSize = opts.batchSize ?? 500;
    this.insertOnly = new Set(opts.insertOnly ?? []);
    this.atStartOnly = new Set(opts.sweptAtStartOnly ?? []);
    this.staged = opts.staged;
    this.lingerMs = opts.lingerMs ?? 0;
    this.passes = new SerialPass({ pass: () => this.pass(), onError: (err) => this.logger.warn({ err }, 'outbox pass failed; will retry'), retryMs: this.retryMs });
  }

  /** The staged collection's index (nothing to do without one). */
  async ensureIndexes(): Promise<void> {
    await this.staged?.collection.createIndex({ createdAt: 1 });
  }

  start(): void {
    this.stopped = false;
    const tick = () => {
      this.kick();
      if (!this.stopped) this.timer = setTimeout(tick, this.intervalMs);
    };
    tick();
    const staged = this.staged;
    if (!staged) return;
    const stagedTick = () => {
      this.stagedSweepWanted = true;
      this.schedule();
      if (!this.stopped) this.stagedTimer = setTimeout(stagedTick, staged.sweepMs ?? 60_000);
    };
    stagedTick();
  }

  /**
   * The collections this relay sweeps on every interval that have no index led by the pending flag: each sweep
   * of such a collection reads all of it. Their repositories declare OUTBOX_PENDING_INDEX.
   */
  async unindexedSweeps(): Promise<string[]> {
    const missing: string[] = [];
    for (const coll of this.collections.values()) {
      if (this.atStartOnly.has(coll.collectionName)) continue;
      const indexes = await coll
        .listIndexes()
        .toArray()
        .catch(() => []);
      if (!indexes.some((ix) => Object.keys((ix as { key?: object }).key ?? {})[0] === '_outboxPending')) missing.push(coll.collectionName);
    }
    return missing;
  }

  /** Asks for a sweep: a query for every pending document. */
  kick(): void {
    this.sweepWanted = true;
    this.schedule();
  }

  /** Hands over the events a write has just stored; they are published in the next pass. */
  written(w: WrittenEvents): void {
    if (!w.events.length) return;
    if (!this.collections.has(w.collection)) {
      this.logger.warn({ collection: w.collection }, 'events handed to a relay that does not serve their collection; sweeping instead');
      return this.kick();
    }
    let docs = this.handed.get(w.collection);
    if (!docs) this.handed.set(w.collection, (docs = new Map()));
    const entry = docs.get(w.id);
    if (entry) {
      entry.events.push(...w.events);
      entry.tombstone ||= w.tombstone === true;
    } else {
      docs.set(w.id, { events: [...w.events], tombstone: w.tombstone === true });
    }
    this.handedEvents += w.events.length;
    this.lingerThenSchedule(this.lingerMs, this.handedEvents + this.readyEvents);
  }

  /** Stores a batch's events ahead of its state write; answers the batch id to settle. */
  async stage(entries: E[]): Promise<string> {
    const staged = this.stagedOptions();
    const _id = `obx_${randomUUID()}`;
    for (const e of entries) stampActiveTrace(e.events);
    this.open.add(_id);
    try {
      await staged.collection.insertOne({ _id, owner: this.owner, instance: staged.instance, createdAt: new Date(), entries });
    } catch (err) {
      // Maybe stored after all: then the sweep finds it and verifies it like any other.
      this.open.delete(_id);
      throw err;
    }
    return _id;
  }

  /** The staged batch's write is done: its events are published in a coming pass (after `lingerMs`). */
  recorded(id: string, entries: E[]): void {
    const linger = this.stagedOptions().lingerMs ?? 0;
    this.open.delete(id);
    const events = entries.flatMap((e) => e.events);
    this.ready.push({ id, events });
    this.readyEvents += events.length;
    this.lingerThenSchedule(linger, this.readyEvents);
  }

  /** A pass now when nothing should wait or enough is waiting; otherwise one after `linger` (one timer for all). */
  private lingerThenSchedule(linger: number, waiting: number): void {
    if (waiting >= LINGER_EVENTS || linger <= 0) return this.schedule();
    if (!this.lingerTimer && !this.stopped) {
      this.lingerTimer = setTimeout(() => {
        this.lingerTimer = null;
        this.schedule();
      }, linger);
    }
  }

  /** The staged batch's write failed or may not have happened: the sweep verifies the batch once it is stale. */
  unsettled(id: string): void {
    this.open.delete(id);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of [this.timer, this.stagedTimer, this.lingerTimer]) if (t) clearTimeout(t);
    this.lingerTimer = null;
    await this.passes.stop();
  }

  /** Publishes everything handed over and everything pending in MongoDB; resolves when done (tests, shutdown). */
  async flush(): Promise<void> {
    this.sweepWanted = true;
    this.stagedSweepWanted = this.staged !== undefined;
    await this.passes.flush();
  }

  private stagedOptions(): StagedOutboxOptions<E> {
    if (!this.staged) throw new Error('this outbox relay has no staged outbox');
    return this.staged;
  }

  /** Every write of one event-loop turn shares a pass; a pass already running takes them in its next round. */
  private schedule(): void {
    if (this.stopped || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.passes.request();
    });
  }

  private async pass(): Promise<void> {
    await this.publishHanded();
    await this.sweepIfWanted('sweepWanted', () => this.sweep());
    await this.sweepIfWanted('stagedSweepWanted', () => this.sweepStaged());
  }

  /** Runs a sweep that was asked for; one that fails stays asked for. */
  private async sweepIfWanted(wanted: 'sweepWanted' | 'stagedSweepWanted', sweep: () => Promise<void>): Promise<void> {
    if (!this[wanted]) return;
    this[wanted] = false;
    try {
      await sweep();
    } catch (err) {
      this[wanted] = true;
      throw err;
    }
  }

  /** Publishes what writers handed over (documents' events and recorded staged batches), then clears it. */
  private async publishHanded(): Promise<void> {
    while (this.handed.size || this.ready.length || this.toDelete.size) {
      const handed = this.handed;
      this.handed = new Map();
      this.handedEvents = 0;
      const batches = this.ready.splice(0, this.batchSize);
      const stagedEvents = batches.flatMap((b) => b.events);
      this.readyEvents -= stagedEvents.length;
      try {
        const events = [...handed.values()].flatMap((docs) => [...docs.values()].flatMap((d) => d.events)).concat(stagedEvents);
        if (events.length) await this.publisher.publish(events);
      } catch (err) {
        this.putBack(handed, batches, stagedEvents.length);
        throw err;
      }
      for (const [collection, docs] of handed) {
        await this.clear(
          this.collections.get(collection)!,
          [...docs].map(([id, d]) => ({ id, eventIds: d.events.map((e) => e.id), tombstone: d.tombstone })),
        );
      }
      for (const b of batches) this.toDelete.add(b.id);
      await this.deletePublished();
    }
  }

  /** Back in the queue, in front of anything handed over since, so the order of events is kept. */
  private putBack(handed: Map<string, Map<string, Pending>>, batches: Array<{ id: string; events: DomainEvent[] }>, stagedEvents: number): void {
    for (const [collection, docs] of this.handed) {
      const merged = handed.get(collection) ?? new Map<string, Pending>();
      for (const [id, d] of docs) {
        const before = merged.get(id);
        if (before) {
          before.events.push(...d.events);
          before.tombstone ||= d.tombstone;
        } else merged.set(id, d);
      }
      handed.set(collection, merged);
    }
    this.handed = handed;
    this.handedEvents = 0;
    for (const docs of handed.values()) for (const d of docs.values()) this.handedEvents += d.events.length;
    this.ready.unshift(...batches);
    this.readyEvents += stagedEvents;
  }

  /** Publishes what pending documents hold, a batch at a time, until none is left. */
  private async sweep(): Promise<void> {
    const atStart = !this.sweptAtStart;
    for (const coll of this.collections.values()) {
      if (!atStart && this.atStartOnly.has(coll.collectionName)) continue;
      for (;;) {
        const found = await coll
          .find({ _outboxPending: true }, { projection: { _outbox: 1, deletedAt: 1 } })
          .limit(this.batchSize)
          .toArray();
        if (!found.length) break;
        // Documents written since this pass began are handed over and go out in the next pass.
        const handed = this.handed.get(coll.collectionName);
        const docs = handed ? found.filter((d) => !handed.has(d._id as unknown as string)) : found;
        const events = docs.flatMap((d) => (d._outbox ?? []) as DomainEvent[]);
        if (events.length) await this.publisher.publish(events);
        await this.clear(
          coll,
          docs.map((d) => ({ id: d._id as unknown as string, eventIds: ((d._outbox ?? []) as DomainEvent[]).map((e) => e.id), tombstone: d.deletedAt != null })),
        );
        if (found.length < this.batchSize || docs.length === 0) break;
      }
    }
    this.sweptAtStart = true;
  }

  /** Staged batches nobody will settle: verified, published as far as their writes are stored, deleted. */
  private async sweepStaged(): Promise<void> {
    const staged = this.stagedOptions();
    const cutoff = Date.now() - staged.staleMs;
    // The collection holds only batches in flight (a few), so reading it whole is cheap on any server.
    const docs = (await staged.collection
      .find({})
      .sort({ createdAt: 1 })
      .limit(this.batchSize * 10)
      .toArray()) as StagedBatch<E>[];
    const ready = new Set(this.ready.map((r) => r.id));
    const orphans = docs.filter(
      (d) =>
        !this.open.has(d._id) && !this.toDelete.has(d._id) && !ready.has(d._id) && ((d.instance === staged.instance && d.owner !== this.owner) || d.createdAt.getTime() <= cutoff),
    );
    for (let i = 0; i < orphans.length; i += this.batchSize) {
      const batch = orphans.slice(i, i + this.batchSize);
      const entries = batch.flatMap((d) => d.entries);
      const verified = await staged.verify(entries);
      const events = verified.flatMap((e) => e.events);
      if (events.length) await this.publisher.publish(events);
      if (entries.length > verified.length) {
        this.logger.info({ dropped: entries.length - verified.length }, 'outbox: staged events of writes that never happened dropped');
      }
      for (const d of batch) this.toDelete.add(d._id);
      await this.deletePublished();
    }
  }

  private async deletePublished(): Promise<void> {
    const ids = [...this.toDelete].slice(0, 1_000);
    if (!ids.length) return;
    await this.stagedOptions().collection.deleteMany({ _id: { $in: ids } } as Document);
    for (const id of ids) this.toDelete.delete(id);
  }

  /**
   * Removes published events from their documents (one bulk write): a document is no longer pending once its
   * outbox is empty, which a write that added events in the meantime prevents. Published tombstones go.
   */
  private async clear(coll: Collection<Document>, docs: { id: string; eventIds: string[]; tombstone: boolean }[]): Promise<void> {
    if (!docs.length) return;
    const ops: AnyBulkWriteOperation<Document>[] = [];
    const insertOnly = this.insertOnly.has(coll.collectionName);
    for (const d of docs) {
      if (insertOnly) {
        ops.push({ updateOne: { filter: { _id: d.id } as Document, update: { $set: { _outbox: [], _outboxPending: false } } } });
        continue;
      }
      ops.push(
        { updateOne: { filter: { _id: d.id } as Document, update: { $pull: { _outbox: { id: { $in: d.eventIds } } } } as Document } },
        { updateOne: { filter: { _id: d.id, _outbox: { $size: 0 } } as Document, update: { $set: { _outboxPending: false } } } },
      );
    }
    await coll.bulkWrite(ops, { ordered: true });
    const tombstones = docs.filter((d) => d.tombstone).map((d) => d.id);
    if (tombstones.length) await coll.deleteMany({ _id: { $in: tombstones }, _outboxPending: false, deletedAt: { $ne: null } } as Document);
  }
}
