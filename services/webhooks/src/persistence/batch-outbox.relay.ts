import type { Collection, Document } from 'mongodb';
import type { DomainEvent } from '@dap/contracts';
import type { Logger } from '@dap/logger';
import type { EventPublisher } from '@dap/mongo';

/**
 * The outbox relay of @dap/mongo, batched for a high-volume collection. Every delivery writes a
 * delivery.completed, so the relay must not cost round trips per document:
 * - a writer names the documents it just gave events (`kick(ids)`); a pass reads those by id, publishes all
 *   their events in one producer call and clears them with one by-id update;
 * - a failed pass keeps its ids and is tried again after a pause;
 * - a sweep at start, on a slow timer and at flush finds whatever a crashed process left pending, with the
 *   `_outboxPending` query, which is indexed on MongoDB but a collection scan on the local wire-compatible
 *   server, hence rare.
 * It relies on the writers' rule that an event is only added to a document whose outbox is empty (see
 * DeliveryDoc._outbox), so clearing what was read loses nothing. Same guarantees as the shared relay: a
 * crash between the write and the publish loses nothing, and a publish repeated after a crash is
 * de-duplicated by event id downstream.
 */
export class BatchOutboxRelay {
  private readonly coll: Collection<Document>;
  private readonly publisher: EventPublisher;
  private readonly logger: Logger;
  private readonly sweepMs: number;
  private readonly batchSize: number;
  private hinted = new Set<Document['_id']>();
  private sweepDue = false;
  private timer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(opts: { collection: Collection<Document>; publisher: EventPublisher; logger: Logger; sweepMs?: number; batchSize?: number }) {
    this.coll = opts.collection;
    this.publisher = opts.publisher;
    this.logger = opts.logger;
    this.sweepMs = opts.sweepMs ?? 60_000;
    this.batchSize = opts.batchSize ?? 500;
  }

  /** Sweeps now (what a previous process left) and then on the timer. */
  start(): void {
    this.stopped = false;
    const tick = () => {
      this.sweepDue = true;
      this.run();
      if (!this.stopped) this.timer = setTimeout(tick, this.sweepMs);
    };
    tick();
  }

  /** Publishes the outbox of these documents now, or right after the current pass. */
  kick(ids: Iterable<Document['_id']> = []): void {
    for (const id of ids) this.hinted.add(id);
    this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.running;
  }

  /** Publishes everything pending now (shutdown and tests). */
  async flush(): Promise<void> {
    await this.running;
    this.sweepDue = true;
    await this.pass();
  }

  private run(): void {
    if (this.stopped || this.running || this.retryTimer) return;
    if (!this.hinted.size && !this.sweepDue) return;
    let failed = false;
    this.running = this.pass()
      .catch((err) => {
        failed = true;
        this.logger.warn({ err }, 'outbox pass failed; retrying shortly');
      })
      .finally(() => {
        this.running = null;
        if (!failed) return this.run(); // whatever was hinted meanwhile
        this.retryTimer = setTimeout(() => {
          this.retryTimer = null;
          this.run();
        }, 1_000);
      });
  }

  private async pass(): Promise<void> {
    while (this.hinted.size) {
      const ids = [...this.hinted].slice(0, this.batchSize);
      const docs = await this.coll.find({ _id: { $in: ids } }, { projection: { _outbox: 1, _outboxPending: 1 } }).toArray();
      await this.publishAndClear(docs.filter((d) => d._outboxPending));
      for (const id of ids) this.hinted.delete(id); // only once published: a failed pass keeps them
    }
    if (!this.sweepDue) return;
    this.sweepDue = false;
    for (;;) {
      const docs = await this.coll.find({ _outboxPending: true }, { projection: { _outbox: 1 } }).limit(this.batchSize).toArray();
      await this.publishAndClear(docs);
      if (docs.length < this.batchSize) return;
    }
  }

  private async publishAndClear(docs: Document[]): Promise<void> {
    if (!docs.length) return;
    const events = docs.flatMap((d) => (d._outbox ?? []) as DomainEvent[]);
    if (events.length) await this.publisher.publish(events);
    await this.coll.updateMany({ _id: { $in: docs.map((d) => d._id) } }, { $set: { _outbox: [], _outboxPending: false } });
  }
}
