import { randomUUID } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import type { DomainEvent } from '@dap/contracts';
import type { Logger } from '@dap/logger';
import { SerialPass, type EventPublisher } from '@dap/mongo';
import type { AttemptDoc, DeliveryDoc } from './delivery.repository.ts';

/** The events a final attempt of one delivery produces (its delivery.completed). */
export interface OutboxEntry {
  deliveryId: string;
  /** The attempt's time: the entry counts only once the delivery stores an attempt made at this time. */
  attemptAt: Date;
  events: DomainEvent[];
}

/** One batch of record writes' events, staged before the writes. */
export interface OutboxDoc {
  _id: string;
  /** The process that staged it, and its instance id. */
  owner: string;
  instance: string;
  createdAt: Date;
  entries: OutboxEntry[];
}

export interface DeliveryOutboxOptions {
  db: Db;
  deliveries: Collection<DeliveryDoc>;
  publisher: EventPublisher;
  logger: Logger;
  /** This instance's id (stable across its restarts). */
  instance: string;
  /**
   * How old another instance's batch must be before it is verified and published here: past the claim lease,
   * so its writer is dead or stalled beyond the point where its claims could still count.
   */
  staleMs: number;
  /** How often staged batches that nobody settled are looked for (default 60 s). */
  sweepMs?: number;
  /** Batches published (and deleted) per pass (default 100). */
  batchSize?: number;
  /**
   * How long recorded events wait for more before a pass publishes them (default 50 ms), so a busy service
   * makes one producer call per many record writes; a pass starts at once when `LINGER_EVENTS` are ready.
   */
  lingerMs?: number;
}

const RETRY_MS = 1_000;
const LINGER_EVENTS = 500;

/**
 * The outbox of delivery.completed events: one document per batch of record writes, instead of an `_outbox`
 * field on every delivery that a relay reads back and clears. Relaying costs one write per batch to stage and
 * one to delete, not a read and a write per delivery; on the local wire-compatible server every by-id
 * operation costs index look-ups that dominate its CPU, and these were two fifths of it.
 *
 * The event is not in the same atomic write as the final state (the outbox of docs/architecture.md, "Events"); it is tied to it instead:
 * 1. `stage` stores the events of a batch's final attempts, before the attempts are recorded;
 * 2. the caller records the attempts (one bulk write);
 * 3. `recorded` publishes those events from memory and deletes the batch; `unsettled` (the record write
 *    failed, or its outcome is unknown) leaves the batch to the sweep.
 * A crash between 1 and 3, or a failed write, leaves the batch stored. The sweep (at start, then on a timer)
 * verifies each entry against its delivery: the entry is published only if the delivery stores the attempt
 * it was staged with, so an attempt that was never recorded (and will be made again) emits nothing, and one
 * that was recorded emits its event exactly once — a publish repeated after a crash carries the same event
 * id, which consumers de-duplicate. A batch of this process still being written is never swept; one of this
 * instance's dead predecessor is swept at once; any other only once older than `staleMs`.
 */
export class DeliveryOutbox {
  readonly coll: Collection<OutboxDoc>;
  private readonly o: DeliveryOutboxOptions;
  /** Unique to this process. */
  readonly owner = `obp_${randomUUID()}`;
  private readonly batchSize: number;
  /** Staged by this process and not settled yet: not the sweep's to touch. */
  private readonly open = new Set<string>();
  /** Recorded, waiting to be published and deleted. */
  private ready: Array<{ id: string; events: DomainEvent[] }> = [];
  /** Published; their deletion failed and is tried again. */
  private readonly toDelete = new Set<string>();
  private sweepDue = false;
  private legacyDue = false;
  private readyEvents = 0;
  private timer: NodeJS.Timeout | null = null;
  private lingerTimer: NodeJS.Timeout | null = null;
  private readonly passes: SerialPass;
  private stopped = true;

  constructor(opts: DeliveryOutboxOptions) {
    this.o = opts;
    this.coll = opts.db.collection<OutboxDoc>('delivery_outbox');
    this.batchSize = opts.batchSize ?? 100;
    this.passes = new SerialPass({
      pass: () => this.pass(),
      onError: (err) => this.o.logger.warn({ err }, 'delivery outbox pass failed; retrying shortly'),
      retryMs: RETRY_MS,
    });
  }

  async init(): Promise<void> {
    await this.coll.createIndex({ createdAt: 1 });
  }

  /** Stores a batch's events ahead of its record write; answers the batch id to settle. */
  async stage(entries: OutboxEntry[]): Promise<string> {
    const _id = `obx_${randomUUID()}`;
    this.open.add(_id);
    try {
      await this.coll.insertOne({ _id, owner: this.owner, instance: this.o.instance, createdAt: new Date(), entries });
    } catch (err) {
      // Maybe stored after all: then the sweep finds it and verifies it like any other.
      this.open.delete(_id);
      throw err;
    }
    return _id;
  }

  /** The batch's attempts are recorded: publish its events now. */
  recorded(id: string, entries: OutboxEntry[]): void {
    this.open.delete(id);
    const events = entries.flatMap((e) => e.events);
    this.ready.push({ id, events });
    this.readyEvents += events.length;
    const linger = this.o.lingerMs ?? 50;
    if (this.readyEvents >= LINGER_EVENTS || linger <= 0) this.run();
    else if (!this.lingerTimer && !this.stopped) {
      this.lingerTimer = setTimeout(() => {
        this.lingerTimer = null;
        this.run();
      }, linger);
    }
  }

  /** The record write failed or may not have happened: the sweep verifies the batch once it is stale. */
  unsettled(id: string): void {
    this.open.delete(id);
  }

  /** Sweeps now (what a previous process left, and events stored on deliveries by older versions), then on the timer. */
  start(): void {
    this.stopped = false;
    this.legacyDue = true;
    const tick = () => {
      this.sweepDue = true;
      this.run();
      if (!this.stopped) this.timer = setTimeout(tick, this.o.sweepMs ?? 60_000);
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    this.lingerTimer = null;
    await this.passes.stop();
  }

  /** Publishes what is ready, and sweeps (shutdown and tests). */
  async flush(): Promise<void> {
    this.sweepDue = true;
    await this.passes.flush();
  }

  private run(): void {
    if (this.stopped) return;
    if (!this.ready.length && !this.toDelete.size && !this.sweepDue && !this.legacyDue) return;
    this.passes.request();
  }

  private async pass(): Promise<void> {
    while (this.ready.length || this.toDelete.size) {
      const batch = this.ready.splice(0, this.batchSize);
      const events = batch.flatMap((b) => b.events);
      this.readyEvents -= events.length;
      try {
        if (events.length) await this.o.publisher.publish(events);
      } catch (err) {
        // Published on the next pass; nothing is deleted before it is published.
        this.ready.unshift(...batch);
        this.readyEvents += events.length;
        throw err;
      }
      for (const b of batch) this.toDelete.add(b.id);
      await this.deletePublished();
    }
    if (this.sweepDue) {
      this.sweepDue = false;
      await this.sweep();
    }
    if (this.legacyDue) {
      await this.sweepLegacy();
      this.legacyDue = false;
    }
  }

  private async deletePublished(): Promise<void> {
    const ids = [...this.toDelete].slice(0, 1_000);
    if (!ids.length) return;
    await this.coll.deleteMany({ _id: { $in: ids } });
    for (const id of ids) this.toDelete.delete(id);
  }

  /** Batches nobody will settle: verified against their deliveries, published as far as recorded, deleted. */
  private async sweep(): Promise<void> {
    const cutoff = Date.now() - this.o.staleMs;
    // The collection holds only batches in flight (a few), so reading it whole is cheap on any server.
    const docs = await this.coll
      .find({})
      .sort({ createdAt: 1 })
      .limit(this.batchSize * 10)
      .toArray();
    const ready = new Set(this.ready.map((r) => r.id));
    const orphans = docs.filter(
      (d) =>
        !this.open.has(d._id) && !this.toDelete.has(d._id) && !ready.has(d._id) && ((d.instance === this.o.instance && d.owner !== this.owner) || d.createdAt.getTime() <= cutoff),
    );
    for (let i = 0; i < orphans.length; i += this.batchSize) {
      const batch = orphans.slice(i, i + this.batchSize);
      const entries = batch.flatMap((d) => d.entries);
      const stored = await this.o.deliveries.find({ _id: { $in: [...new Set(entries.map((e) => e.deliveryId))] } }, { projection: { attempts: 1 } }).toArray();
      const attemptsOf = new Map(stored.map((d) => [d._id, d.attempts as AttemptDoc[]]));
      const verified = entries.filter((e) => (attemptsOf.get(e.deliveryId) ?? []).some((a) => a.at.getTime() === e.attemptAt.getTime()));
      const events = verified.flatMap((e) => e.events);
      if (events.length) await this.o.publisher.publish(events);
      if (entries.length > verified.length) {
        this.o.logger.info({ dropped: entries.length - verified.length }, 'delivery outbox: events of attempts that were never recorded dropped');
      }
      for (const d of batch) this.toDelete.add(d._id);
      await this.deletePublished();
    }
  }

  /** Events an older version stored on the deliveries themselves (`_outbox`), published and cleared. */
  private async sweepLegacy(): Promise<void> {
    for (;;) {
      const docs = await this.o.deliveries
        .find({ _outboxPending: true }, { projection: { _outbox: 1 } })
        .limit(this.batchSize * 5)
        .toArray();
      if (!docs.length) return;
      const events = docs.flatMap((d) => d._outbox ?? []);
      if (events.length) await this.o.publisher.publish(events);
      await this.o.deliveries.updateMany({ _id: { $in: docs.map((d) => d._id) } }, { $set: { _outbox: [], _outboxPending: false } });
      if (docs.length < this.batchSize * 5) return;
    }
  }
}
