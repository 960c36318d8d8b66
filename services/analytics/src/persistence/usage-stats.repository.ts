import type { AnyBulkWriteOperation, Collection, Db, Document } from 'mongodb';
import type { UsageCaller, UsageCalls } from '@dap/contracts';

/**
 * Calls per account, caller (API key, dashboard or overflow), operation and outcome, in two resolutions:
 * per-minute buckets kept 2 days (the 1-hour window) and per-hour buckets kept 35 days (the 24-hour and
 * 30-day windows). A TTL index on each removes old buckets.
 *
 * One document per (account, bucket, caller, key, operation). Idempotency works as in usage.repository.ts:
 * each document carries the ids of the events counted in it, and an event is applied by one conditional
 * update ("where this id is not in `events`: $inc and $push the id"), so a redelivered event changes nothing
 * and a crash leaves each document with both the counts and the mark, or neither. The id lists stay small:
 * the gateway flushes every 10 s, so about 6 ids per gateway per minute document and 360 per hour document.
 */
export interface UsageStatDoc {
  _id: string;
  accountId: string;
  /** The start of the bucket (UTC). */
  at: Date;
  caller: UsageCaller;
  keyId: string | null;
  keyHint: string | null;
  operationId: string;
  success: number;
  clientErrors: number;
  serverErrors: number;
  rateLimited: number;
  events: string[];
}

export type UsageResolution = 'minute' | 'hour';

export const USAGE_RESOLUTIONS: Record<UsageResolution, { collection: string; bucketMs: number; retentionSeconds: number }> = {
  minute: { collection: 'usage_minutes', bucketMs: 60_000, retentionSeconds: 2 * 86_400 },
  hour: { collection: 'usage_hourly', bucketMs: 3_600_000, retentionSeconds: 35 * 86_400 },
};

export const OUTCOMES = ['success', 'clientErrors', 'serverErrors', 'rateLimited'] as const;
export type OutcomeCounts = Record<(typeof OUTCOMES)[number], number>;

/** One bucket's counts of one group, as the aggregation answers them. */
export interface UsageStatRow extends OutcomeCounts {
  at: Date;
  /** groupBy key: the caller, key id and hint; groupBy operation: the operation id. */
  caller: UsageCaller | null;
  keyId: string | null;
  keyHint: string | null;
  operationId: string | null;
}

export const bucketStartOf = (at: Date, bucketMs: number) => new Date(Math.floor(at.getTime() / bucketMs) * bucketMs);

/** The lines of one event with the same (caller, key, operation) summed: each document takes an event once. */
export function mergeCalls(calls: readonly UsageCalls[]): UsageCalls[] {
  const byLine = new Map<string, UsageCalls>();
  for (const c of calls) {
    const id = `${c.caller}\u0000${c.keyId ?? ''}\u0000${c.operationId}`;
    const seen = byLine.get(id);
    if (!seen) byLine.set(id, { ...c });
    else for (const k of OUTCOMES) seen[k] += c[k];
  }
  return [...byLine.values()].filter((c) => OUTCOMES.some((k) => c[k] > 0));
}

export class UsageStatsRepository {
  private readonly collections: Record<UsageResolution, Collection<Document>>;

  constructor(db: Db) {
    this.collections = { minute: db.collection(USAGE_RESOLUTIONS.minute.collection), hour: db.collection(USAGE_RESOLUTIONS.hour.collection) };
  }

  raw(resolution: UsageResolution): Collection<Document> {
    return this.collections[resolution];
  }

  async ensureIndexes(): Promise<void> {
    for (const r of Object.keys(USAGE_RESOLUTIONS) as UsageResolution[]) {
      await this.collections[r].createIndex({ accountId: 1, at: 1 });
      await this.collections[r].createIndex({ at: 1 }, { expireAfterSeconds: USAGE_RESOLUTIONS[r].retentionSeconds });
    }
  }

  /** Adds one event's calls to the minute and the hour holding `at`, once per document; a bucket past its retention is skipped. */
  async add(accountId: string, eventId: string, at: Date, calls: readonly UsageCalls[], now = new Date()): Promise<void> {
    if (!accountId) throw new Error('accountId is required');
    const lines = mergeCalls(calls);
    if (!lines.length) return;
    for (const r of Object.keys(USAGE_RESOLUTIONS) as UsageResolution[]) {
      const { bucketMs, retentionSeconds } = USAGE_RESOLUTIONS[r];
      const bucket = bucketStartOf(at, bucketMs);
      if (bucket.getTime() < now.getTime() - retentionSeconds * 1000) continue;
      const ops: AnyBulkWriteOperation<Document>[] = [];
      for (const c of lines) {
        const keyId = c.caller === 'key' ? (c.keyId ?? null) : null;
        const _id = `${accountId}:${bucket.toISOString()}:${c.caller}:${keyId ?? ''}:${c.operationId}` as never;
        // Creating the bucket changes no count, so it may precede the counting write (ordered).
        ops.push({
          updateOne: {
            filter: { _id },
            update: {
              $setOnInsert: {
                accountId,
                at: bucket,
                caller: c.caller,
                keyId,
                keyHint: null,
                operationId: c.operationId,
                success: 0,
                clientErrors: 0,
                serverErrors: 0,
                rateLimited: 0,
                events: [],
              },
            },
            upsert: true,
          },
        });
        ops.push({
          updateOne: {
            filter: { _id, events: { $ne: eventId } },
            update: {
              $inc: { success: c.success, clientErrors: c.clientErrors, serverErrors: c.serverErrors, rateLimited: c.rateLimited },
              $push: { events: eventId },
              ...(c.caller === 'key' && c.keyHint ? { $set: { keyHint: c.keyHint } } : {}),
            } as Document,
          },
        });
      }
      await this.collections[r].bulkWrite(ops, { ordered: true });
    }
  }

  /** The account's counts since `from`, summed per bucket and group (the key, or the operation). */
  async rows(accountId: string, resolution: UsageResolution, from: Date, groupBy: 'key' | 'operation'): Promise<UsageStatRow[]> {
    if (!accountId) throw new Error('accountId is required');
    const groupId = groupBy === 'key' ? { at: '$at', caller: '$caller', keyId: '$keyId' } : { at: '$at', operationId: '$operationId' };
    const docs = await this.collections[resolution]
      .aggregate([
        { $match: { accountId, at: { $gte: from } } },
        {
          $group: {
            _id: groupId,
            keyHint: { $max: '$keyHint' },
            success: { $sum: '$success' },
            clientErrors: { $sum: '$clientErrors' },
            serverErrors: { $sum: '$serverErrors' },
            rateLimited: { $sum: '$rateLimited' },
          },
        },
      ])
      .toArray();
    return docs.map((d) => {
      const id = d._id as { at: Date; caller?: UsageCaller; keyId?: string | null; operationId?: string };
      return {
        at: new Date(id.at),
        caller: groupBy === 'key' ? (id.caller ?? null) : null,
        keyId: groupBy === 'key' ? (id.keyId ?? null) : null,
        keyHint: groupBy === 'key' ? ((d.keyHint as string | null) ?? null) : null,
        operationId: groupBy === 'operation' ? (id.operationId ?? null) : null,
        success: Number(d.success),
        clientErrors: Number(d.clientErrors),
        serverErrors: Number(d.serverErrors),
        rateLimited: Number(d.rateLimited),
      };
    });
  }
}
