import type { Collection, Db, Document } from 'mongodb';
import type { DomainEvent } from '@dap/contracts';

/** One document per event, keyed by the event id, so a redelivered event is stored once. */
export interface ActivityDoc {
  _id: string;
  accountId: string;
  type: string;
  subject: string;
  occurredAt: Date;
  /** A delivery's final outcome (delivery.completed only). */
  outcome?: 'succeeded' | 'failed';
}

/** Counted, but not listed as recent activity: one per webhook message would drown everything else. */
export const UNLISTED_TYPES: readonly DomainEvent['type'][] = Object.freeze(['delivery.completed']);

export class ActivityRepository {
  readonly raw: Collection<Document>;

  constructor(db: Db) {
    this.raw = db.collection('activity');
  }

  async ensureIndexes(): Promise<void> {
    await this.raw.createIndex({ accountId: 1, occurredAt: -1 });
    await this.raw.createIndex({ accountId: 1, type: 1, outcome: 1 });
  }

  /** Returns true when the event was new. */
  async record(event: DomainEvent): Promise<boolean> {
    const parsed = Date.parse(event.occurredAt);
    const doc: Omit<ActivityDoc, '_id'> = {
      accountId: event.accountId,
      type: event.type,
      subject: event.subject,
      occurredAt: new Date(Number.isNaN(parsed) ? Date.now() : parsed),
    };
    if (event.type === 'delivery.completed') doc.outcome = event.data.outcome;
    const res = await this.raw.updateOne({ _id: event.id as never }, { $setOnInsert: doc }, { upsert: true });
    return res.upsertedCount === 1;
  }

  async recent(accountId: string, limit: number): Promise<ActivityDoc[]> {
    if (!accountId) throw new Error('accountId is required');
    return (await this.raw
      .find({ accountId, type: { $nin: [...UNLISTED_TYPES] } })
      .sort({ occurredAt: -1, _id: -1 })
      .limit(limit)
      .toArray()) as unknown as ActivityDoc[];
  }

  countOfType(accountId: string, type: DomainEvent['type']): Promise<number> {
    if (!accountId) throw new Error('accountId is required');
    return this.raw.countDocuments({ accountId, type });
  }

  /** Webhook deliveries that reached a final state, by outcome (each delivery.completed is stored once). */
  async deliveries(accountId: string): Promise<{ succeeded: number; failed: number }> {
    if (!accountId) throw new Error('accountId is required');
    const [succeeded, failed] = await Promise.all((['succeeded', 'failed'] as const).map((outcome) => this.raw.countDocuments({ accountId, type: 'delivery.completed', outcome })));
    return { succeeded: succeeded ?? 0, failed: failed ?? 0 };
  }

  /** Distinct subjects (resource ids) with an event of this type. */
  async subjectsOfType(accountId: string, type: DomainEvent['type']): Promise<Set<string>> {
    if (!accountId) throw new Error('accountId is required');
    const docs = await this.raw.find({ accountId, type }, { projection: { subject: 1 } }).toArray();
    return new Set(docs.map((d) => String(d.subject)));
  }
}
