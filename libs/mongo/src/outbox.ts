import type { AnyBulkWriteOperation, Collection, Document } from 'mongodb';
import type { DomainEvent } from '@dap/contracts';
import type { Logger } from '@dap/logger';
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

/**
 * Publishes events stored in documents' `_outbox`, then removes them from the documents.
 *
 * Two paths, one guarantee (an event leaves the outbox only after Kafka acknowledged it; consumers
 * de-duplicate by event id, so publishing twice after a crash is harmless):
 * - hand-off: a writer passes the events it has just stored (`written`); every write handed over while a pass
 *   runs goes out in the next pass as one Kafka batch, and the documents are cleared by id in one bulk write
 *   per collection. No query for pending documents, which on a MongoDB-wire server without index support
 *   (the local stack's) is a scan of the whole collection.
 * - sweep: at start-up, every `intervalMs` and on `kick()`, a query for pending documents finds what a crashed
 *   writer (this process before a restart, or another instance) left behind.
 * A failed publish keeps the handed-over events in memory and retries them every `retryMs`; they are in
 * MongoDB too, so the sweep would find them if this process died first.
 */
export class OutboxRelay {
  private readonly collections = new Map<string, Collection<Document>>();
  private readonly publisher: EventPublisher;
  private readonly logger: Logger;
  private readonly intervalMs: number;
  private readonly retryMs: number;
  private readonly batchSize: number;
  private readonly insertOnly: ReadonlySet<string>;
  /** collection → document id → events handed over and not yet published. */
  private handed = new Map<string, Map<string, Pending>>();
  private sweepWanted = false;
  private timer: NodeJS.Timeout | null = null;
  private scheduled = false;
  private stopped = false;
  private readonly passes: SerialPass;

  constructor(opts: {
    collections: Collection<Document>[];
    publisher: EventPublisher;
    logger: Logger;
    intervalMs?: number;
    retryMs?: number;
    batchSize?: number;
    /**
     * Collections whose documents get events only when inserted (logs): nothing can add events while they are
     * published, so they are cleared by id alone, without the emptiness condition (which the local stack's
     * MongoDB-wire server answers by scanning the collection under its write lock).
     */
    insertOnly?: string[];
  }) {
    for (const c of opts.collections) this.collections.set(c.collectionName, c);
    this.publisher = opts.publisher;
    this.logger = opts.logger;
    this.intervalMs = opts.intervalMs ?? 1_000;
    this.retryMs = opts.retryMs ?? Math.min(this.intervalMs, 1_000);
    this.batchSize = opts.batchSize ?? 500;
    this.insertOnly = new Set(opts.insertOnly ?? []);
    this.passes = new SerialPass({ pass: () => this.pass(), onError: (err) => this.logger.warn({ err }, 'outbox pass failed; will retry'), retryMs: this.retryMs });
  }

  start(): void {
    this.stopped = false;
    const tick = () => {
      this.kick();
      if (!this.stopped) this.timer = setTimeout(tick, this.intervalMs);
    };
    tick();
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
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.passes.stop();
  }

  /** Publishes everything handed over and everything pending in MongoDB; resolves when done (tests, shutdown). */
  async flush(): Promise<void> {
    this.sweepWanted = true;
    await this.passes.flush();
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
    if (this.sweepWanted) {
      this.sweepWanted = false;
      try {
        await this.sweep();
      } catch (err) {
        this.sweepWanted = true;
        throw err;
      }
    }
  }

  private async publishHanded(): Promise<void> {
    if (!this.handed.size) return;
    const handed = this.handed;
    this.handed = new Map();
    try {
      const events = [...handed.values()].flatMap((docs) => [...docs.values()].flatMap((d) => d.events));
      await this.publisher.publish(events);
    } catch (err) {
      // Back in the queue, in front of anything handed over since, so the order of events is kept.
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
      throw err;
    }
    for (const [collection, docs] of handed) {
      await this.clear(
        this.collections.get(collection)!,
        [...docs].map(([id, d]) => ({ id, eventIds: d.events.map((e) => e.id), tombstone: d.tombstone })),
      );
    }
  }

  /** Publishes what pending documents hold, a batch at a time, until none is left. */
  private async sweep(): Promise<void> {
    for (const coll of this.collections.values()) {
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
