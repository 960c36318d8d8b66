import type { Collection, Document } from 'mongodb';
import type { DomainEvent } from '@dap/contracts';
import type { Logger } from '@dap/logger';

export interface EventPublisher {
  publish(events: DomainEvent[]): Promise<void>;
}

/**
 * Publishes events stored in documents' `_outbox`, then removes them. A crash between the state write and
 * the publish loses nothing: the next pass (at start-up or on the timer) finds them again. Consumers
 * de-duplicate by event id, so a publish repeated after a crash is harmless.
 */
export class OutboxRelay {
  private readonly collections: Collection<Document>[];
  private readonly publisher: EventPublisher;
  private readonly logger: Logger;
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(opts: { collections: Collection<Document>[]; publisher: EventPublisher; logger: Logger; intervalMs?: number }) {
    this.collections = opts.collections;
    this.publisher = opts.publisher;
    this.logger = opts.logger;
    this.intervalMs = opts.intervalMs ?? 1_000;
  }

  start(): void {
    this.stopped = false;
    const tick = () => {
      this.kick();
      if (!this.stopped) this.timer = setTimeout(tick, this.intervalMs);
    };
    tick();
  }

  /** Runs a pass now (or right after the current one): called after every write that carries events. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .catch((err) => this.logger.warn({ err }, 'outbox pass failed; will retry'))
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** Publishes everything pending now; resolves when done (tests and shutdown use it). */
  async flush(): Promise<void> {
    await this.running;
    await this.drain();
  }

  private async drain(): Promise<void> {
    for (const coll of this.collections) {
      for (;;) {
        const docs = await coll.find({ _outboxPending: true }, { projection: { _outbox: 1, deletedAt: 1 } }).limit(100).toArray();
        if (!docs.length) break;
        for (const doc of docs) {
          const events = (doc._outbox ?? []) as DomainEvent[];
          if (events.length) await this.publisher.publish(events);
          const ids = events.map((e) => e.id);
          await coll.updateOne({ _id: doc._id }, { $pull: { _outbox: { id: { $in: ids } } } } as Document);
          await coll.updateOne({ _id: doc._id, _outbox: { $size: 0 } }, { $set: { _outboxPending: false } });
          if (doc.deletedAt) await coll.deleteOne({ _id: doc._id, _outboxPending: false, deletedAt: { $ne: null } });
        }
        if (docs.length < 100) break;
      }
    }
  }
}
