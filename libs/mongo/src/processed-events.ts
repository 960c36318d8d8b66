import type { Collection, Db, Document } from 'mongodb';

/**
 * Remembers which event ids a consumer has applied, so a redelivered event has no second effect.
 * Record the id in the same write as the effect where possible; otherwise apply, then record.
 */
export class ProcessedEvents {
  private readonly coll: Collection<Document>;

  constructor(db: Db, name = 'processed_events') {
    this.coll = db.collection(name);
  }

  async seen(eventId: string): Promise<boolean> {
    return (await this.coll.countDocuments({ _id: eventId as unknown as Document['_id'] }, { limit: 1 })) > 0;
  }

  async mark(eventId: string): Promise<void> {
    await this.coll.updateOne({ _id: eventId as unknown as Document['_id'] }, { $setOnInsert: { at: new Date() } }, { upsert: true });
  }
}
