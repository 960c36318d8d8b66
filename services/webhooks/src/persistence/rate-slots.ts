import type { Collection, Db } from 'mongodb';

interface SlotDoc {
  _id: string;
  /** The earliest time the endpoint's next request may start. */
  next: Date;
}

const MAX_CAS_TRIES = 100;

/**
 * Per-endpoint request slots shared by every instance, for endpoints with a rate limit. Each request reserves
 * the next free start time with a compare-and-set on one document per endpoint and moves it on by
 * 1000 / limit ms, so the requests of all instances start at least that far apart: never more than `limit`
 * start within any second. A request whose slot lies ahead waits for it (its delivery stays pending).
 */
export class RateSlots {
  readonly raw: Collection<SlotDoc>;

  constructor(db: Db) {
    this.raw = db.collection<SlotDoc>('endpoint_rate_slots');
  }

  /** Reserves the next start time for a request to `endpointId` at most `perSecond` a second; answers it (≥ now). */
  async take(endpointId: string, perSecond: number, now: () => number = Date.now): Promise<Date> {
    const spacingMs = Math.ceil(1000 / perSecond);
    for (let i = 0; i < MAX_CAS_TRIES; i++) {
      const doc = await this.raw.findOne({ _id: endpointId });
      const slot = new Date(Math.max(doc?.next.getTime() ?? 0, now()));
      const next = new Date(slot.getTime() + spacingMs);
      if (!doc) {
        try {
          await this.raw.insertOne({ _id: endpointId, next });
          return slot;
        } catch (err) {
          if ((err as { code?: number }).code === 11000) continue; // another instance created it first
          throw err;
        }
      }
      const res = await this.raw.updateOne({ _id: endpointId, next: doc.next }, { $set: { next } });
      if (res.modifiedCount === 1) return slot;
    }
    throw new Error(`could not reserve a request slot for endpoint ${endpointId}`);
  }
}
