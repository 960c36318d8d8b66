import type { Document } from 'mongodb';
import type { DomainEvent } from '@dap/contracts';
import { DomainError } from '@dap/errors';
import type { Logger } from '@dap/logger';
import type { TenantCollection, TenantDoc } from '@dap/mongo';
import { stampActiveTrace } from '@dap/tracing';

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
  /**
   * Trained models: a few of the request's inputs for input drift, each as its values in the model's
   * feature order (arrays, since feature names need not be valid MongoDB field names).
   */
  sample?: unknown[][];
  /**
   * A copy of a live request run on the candidate version (never answered to the caller), compared with
   * production's answer. Serving counts leave these out; the metrics' `shadow` section reads them.
   */
  shadow?: ShadowComparison;
}

export interface ShadowComparison {
  liveVersion: number;
  livePredictionId: string;
  liveLatencyMs: number;
  /** Inputs compared (0 when the copy failed). */
  compared: number;
  /** Classifiers and k-means: inputs answered the same; null for regressors. */
  agreed: number | null;
  /** Regressors: Σ |shadow − live|; null otherwise. */
  absDiffSum: number | null;
}

export interface ShadowRow {
  ok: boolean;
  count: number;
  latencyMs: number;
  shadow: ShadowComparison;
}

export interface WindowCounts {
  count: number;
  errors: number;
  inputs: number;
}

export const PREDICTION_LOG_COLLECTION = 'prediction_log';

interface QueuedEntry {
  accountId: string;
  doc: Omit<PredictionLogDoc, 'accountId'>;
  events: DomainEvent[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface LogBatching {
  /** Entries written in one insert at most. */
  maxBatch: number;
  /** Entries waiting for their insert at most; past it `record` refuses at once (503) instead of queueing. */
  maxQueued: number;
}

export class PredictionLogRepository {
  private readonly coll: TenantCollection<PredictionLogDoc>;
  private readonly batching: LogBatching;
  private queue: QueuedEntry[] = [];
  private draining = false;

  constructor(coll: TenantCollection<PredictionLogDoc>, batching: LogBatching = { maxBatch: 500, maxQueued: 10_000 }) {
    this.coll = coll;
    this.batching = batching;
  }

  /** The metrics query's index, the relay's pending index, and a TTL that bounds the log's size. */
  async ensureIndexes(retentionDays: number, logger: Logger): Promise<void> {
    const specs: [Document, Document][] = [
      [{ accountId: 1, modelId: 1, modelVersion: 1, at: -1 }, { name: 'account_model_version_at' }],
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

  /**
   * Stores one entry (with its events) and resolves once it is stored, so a request is answered only after
   * its log and its `prediction.completed` are durable. Inserts are grouped: the first entry goes at once,
   * and every entry arriving while an insert is in flight goes in the next one, so under load one round trip
   * stores many requests' entries and no entry waits for a timer.
   */
  record(accountId: string, entry: Omit<PredictionLogDoc, 'accountId'>, events: DomainEvent[] = []): Promise<void> {
    if (!accountId) throw new Error('accountId is required');
    if (this.queue.length >= this.batching.maxQueued) {
      return Promise.reject(new DomainError('service_busy', 'too many predictions are waiting to be logged on this instance; retry shortly', { retryAfterSeconds: 1 }));
    }
    stampActiveTrace(events); // here, in the request's context: the batch is written outside it
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ accountId, doc: entry, events, resolve, reject });
      if (!this.draining) void this.drain();
    });
  }

  /** Writes what is queued, a batch per round trip, until nothing is. */
  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queue.length) {
        const batch = this.queue.splice(0, this.batching.maxBatch);
        let outcome: (unknown | null)[];
        try {
          outcome = await this.coll.insertEach(batch);
        } catch (err) {
          for (const q of batch) q.reject(err);
          continue;
        }
        batch.forEach((q, i) => (outcome[i] === null ? q.resolve() : q.reject(outcome[i])));
      }
    } finally {
      this.draining = false;
    }
  }

  /** Request, error and input counts since `since`, exact (a $group on the server). */
  async counts(accountId: string, modelId: string, version: number, since: Date): Promise<WindowCounts> {
    const groups = await this.coll.raw
      .aggregate<{ _id: boolean; n: number; inputs: number }>([
        { $match: this.windowFilter(accountId, modelId, version, since) },
        { $group: { _id: '$ok', n: { $sum: 1 }, inputs: { $sum: '$count' } } },
      ])
      .toArray();
    const ok = groups.find((g) => g._id === true);
    const failed = groups.find((g) => g._id === false);
    return { count: (ok?.n ?? 0) + (failed?.n ?? 0), errors: failed?.n ?? 0, inputs: ok?.inputs ?? 0 };
  }

  /** Latencies and times of the newest successful requests since `since`, newest first, at most `cap`. */
  async latencies(accountId: string, modelId: string, version: number, since: Date, cap: number): Promise<{ at: Date; latencyMs: number }[]> {
    return this.coll.raw
      .find<{ at: Date; latencyMs: number }>({ ...this.windowFilter(accountId, modelId, version, since), ok: true }, { projection: { _id: 0, at: 1, latencyMs: 1 } })
      .sort({ at: -1 })
      .limit(cap)
      .toArray();
  }

  /**
   * Logged input samples since `since`, newest requests first, at most `maxInputs` inputs; `sampled` when
   * older ones were left out.
   */
  async samples(accountId: string, modelId: string, version: number, since: Date, maxInputs: number): Promise<{ inputs: unknown[][]; sampled: boolean }> {
    const cursor = this.coll.raw
      .find<{ sample: unknown[][] }>({ ...this.windowFilter(accountId, modelId, version, since), ok: true, sample: { $exists: true } }, { projection: { _id: 0, sample: 1 } })
      .sort({ at: -1 })
      .limit(maxInputs + 1);
    const inputs: unknown[][] = [];
    try {
      for await (const doc of cursor) {
        for (const input of doc.sample ?? []) {
          if (inputs.length >= maxInputs) return { inputs, sampled: true };
          inputs.push(input);
        }
      }
    } finally {
      await cursor.close();
    }
    return { inputs, sampled: false };
  }

  /** A version's shadow copies since `since`, newest first, at most `cap`. */
  async shadowRows(accountId: string, modelId: string, version: number, since: Date, cap: number): Promise<ShadowRow[]> {
    if (!accountId) throw new Error('accountId is required');
    return this.coll.raw
      .find<ShadowRow>(
        { accountId, modelId, modelVersion: version, deletedAt: null, at: { $gte: since }, shadow: { $exists: true } },
        { projection: { _id: 0, ok: 1, count: 1, latencyMs: 1, shadow: 1 } },
      )
      .sort({ at: -1 })
      .limit(cap)
      .toArray();
  }

  /** One version's live requests: each version is measured on its own, shadow copies apart. */
  private windowFilter(accountId: string, modelId: string, version: number, since: Date): Document {
    if (!accountId) throw new Error('accountId is required');
    return { accountId, modelId, modelVersion: version, deletedAt: null, at: { $gte: since }, shadow: { $exists: false } };
  }
}
