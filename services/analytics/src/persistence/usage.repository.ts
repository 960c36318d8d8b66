import type { Collection, Db, Document } from 'mongodb';

/**
 * API requests per account per UTC hour, from the gateway's `usage.recorded` events.
 *
 * Idempotency and crash safety: each hour's document carries the ids of the events already counted in it,
 * and an event is applied by ONE conditional update — "where this id is not in `events`: $inc the counts and
 * $push the id". The increment and its dedupe mark are a single-document write, atomic on any MongoDB
 * (mongo-java-server included), so a crash leaves either both or neither: a redelivered event finds its id
 * and changes nothing, and an event lost before the write is redelivered (its offset was not committed).
 *
 * Why hours, not days: the dedupe set then holds every id of the bucket (exact, no window to guess) and
 * stays small — the gateway flushes every 10 s, so about 360 ids per gateway instance per hour.
 */
export interface UsageHourDoc {
  _id: string;
  accountId: string;
  /** The start of the UTC hour. */
  hour: Date;
  requests: number;
  rejected: number;
  /** Ids of the events counted here. */
  events: string[];
}

export interface DayUsage {
  date: string;
  requests: number;
  rejected: number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Buckets are kept this long (a TTL index removes them); the overview shows 30 days. */
export const USAGE_RETENTION_DAYS = 40;

export const hourStartOf = (at: Date) => new Date(Math.floor(at.getTime() / HOUR_MS) * HOUR_MS);
export const utcDateOf = (at: Date) => at.toISOString().slice(0, 10);

/** `days` consecutive UTC dates ending with the day of `now`, oldest first, each with its totals (zeros when none). */
export function dailySeries(hours: readonly Pick<UsageHourDoc, 'hour' | 'requests' | 'rejected'>[], now: Date, days: number): DayUsage[] {
  const totals = new Map<string, { requests: number; rejected: number }>();
  for (const h of hours) {
    const date = utcDateOf(h.hour);
    const t = totals.get(date) ?? { requests: 0, rejected: 0 };
    t.requests += h.requests;
    t.rejected += h.rejected;
    totals.set(date, t);
  }
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const out: DayUsage[] = [];
  for (let i = days - 1; i >= 0; i--) {
    const date = utcDateOf(new Date(today - i * DAY_MS));
    out.push({ date, ...(totals.get(date) ?? { requests: 0, rejected: 0 }) });
  }
  return out;
}

/** The first instant of the oldest day in a `days`-day series ending today. */
export function seriesStart(now: Date, days: number): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (days - 1) * DAY_MS);
}

export class UsageRepository {
  readonly raw: Collection<Document>;

  constructor(db: Db) {
    this.raw = db.collection('usage_hours');
  }

  async ensureIndexes(): Promise<void> {
    await this.raw.createIndex({ accountId: 1, hour: 1 });
    await this.raw.createIndex({ hour: 1 }, { expireAfterSeconds: USAGE_RETENTION_DAYS * 24 * 3600 });
  }

  /**
   * Adds one event's counts to the hour holding `at`, once. Returns false when the event was counted before
   * (a redelivery) or is older than the retention (it would only be removed again).
   */
  async add(accountId: string, eventId: string, at: Date, counts: { requests: number; rejected: number }): Promise<boolean> {
    if (!accountId) throw new Error('accountId is required');
    const hour = hourStartOf(at);
    if (hour.getTime() < Date.now() - USAGE_RETENTION_DAYS * DAY_MS) return false;
    const _id = `${accountId}:${hour.toISOString().slice(0, 13)}` as never;
    // Creating the bucket is idempotent on its own and changes no count, so it may precede the counting write.
    await this.raw.updateOne({ _id }, { $setOnInsert: { accountId, hour, requests: 0, rejected: 0, events: [] } }, { upsert: true });
    const res = await this.raw.updateOne({ _id, events: { $ne: eventId } }, {
      $inc: { requests: counts.requests, rejected: counts.rejected },
      $push: { events: eventId },
    } as Document);
    return res.matchedCount === 1;
  }

  /** Requests per UTC day over the `days` days ending today, oldest first, zeros included. */
  async perDay(accountId: string, days: number, now = new Date()): Promise<DayUsage[]> {
    if (!accountId) throw new Error('accountId is required');
    const hours = await this.raw.find({ accountId, hour: { $gte: seriesStart(now, days) } }, { projection: { hour: 1, requests: 1, rejected: 1 } }).toArray();
    return dailySeries(hours as unknown as UsageHourDoc[], now, days);
  }
}
