import type { Document } from 'mongodb';
import type { DomainEvent } from '@dap/contracts';
import type { Logger } from '@dap/logger';
import type { TenantCollection, TenantDoc } from '@dap/mongo';

/** One document per predict request, successful or not; the successful ones carry `prediction.completed`. */
export interface PredictionLogDoc extends TenantDoc {
  _id: string;
  modelId: string;
  modelVersion: number;
  ok: boolean;
  /** Inputs in the request (0 when the body itself was invalid). */
  count: number;
  /** Model-call time; for a failed request, the time spent before it failed. */
  latencyMs: number;
  errorCode: string | null;
  at: Date;
}

export interface WindowCounts {
  count: number;
  errors: number;
  inputs: number;
}

export const PREDICTION_LOG_COLLECTION = 'prediction_log';

export class PredictionLogRepository {
  private readonly coll: TenantCollection<PredictionLogDoc>;

  constructor(coll: TenantCollection<PredictionLogDoc>) {
    this.coll = coll;
  }

  /** The metrics query's index, the relay's pending index, and a TTL that bounds the log's size. */
  async ensureIndexes(retentionDays: number, logger: Logger): Promise<void> {
    const specs: [Document, Document][] = [
      [{ accountId: 1, modelId: 1, at: -1 }, { name: 'account_model_at' }],
      [{ at: 1 }, { name: 'ttl_at', expireAfterSeconds: retentionDays * 86_400 }],
      [{ _outboxPending: 1 }, { name: 'outbox_pending', partialFilterExpression: { _outboxPending: true } }],
    ];
    for (const [keys, options] of specs) {
      try {
        await this.coll.raw.createIndex(keys, options);
      } catch (err) {
        logger.warn({ err, index: options.name }, 'could not create a prediction-log index; continuing without it');
      }
    }
  }

  async record(accountId: string, entry: Omit<PredictionLogDoc, 'accountId'>, events: DomainEvent[] = []): Promise<void> {
    await this.coll.insert(accountId, entry, events);
  }

  /** Request, error and input counts since `since`, exact (a $group on the server). */
  async counts(accountId: string, modelId: string, since: Date): Promise<WindowCounts> {
    const groups = await this.coll.raw
      .aggregate<{ _id: boolean; n: number; inputs: number }>([
        { $match: this.windowFilter(accountId, modelId, since) },
        { $group: { _id: '$ok', n: { $sum: 1 }, inputs: { $sum: '$count' } } },
      ])
      .toArray();
    const ok = groups.find((g) => g._id === true);
    const failed = groups.find((g) => g._id === false);
    return { count: (ok?.n ?? 0) + (failed?.n ?? 0), errors: failed?.n ?? 0, inputs: ok?.inputs ?? 0 };
  }

  /** Latencies and times of the newest successful requests since `since`, newest first, at most `cap`. */
  async latencies(accountId: string, modelId: string, since: Date, cap: number): Promise<{ at: Date; latencyMs: number }[]> {
    return this.coll.raw
      .find<{ at: Date; latencyMs: number }>({ ...this.windowFilter(accountId, modelId, since), ok: true }, { projection: { _id: 0, at: 1, latencyMs: 1 } })
      .sort({ at: -1 })
      .limit(cap)
      .toArray();
  }

  private windowFilter(accountId: string, modelId: string, since: Date): Document {
    if (!accountId) throw new Error('accountId is required');
    return { accountId, modelId, deletedAt: null, at: { $gte: since } };
  }
}
