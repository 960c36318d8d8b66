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
  /** Set when the caller waits for the entry to be stored; otherwise it is retried until it is. */
  waiter: { resolve: () => void; reject: (err: unknown) => void } | null;
}

/**
 * When a request is answered relative to its log entry's insert:
 * - `after_answer`: at once; the entry is inserted right after (grouped with others, retried until stored,
 *   written out at shutdown). A crash (SIGKILL, OOM) loses the entries not yet stored then: those answered
 *   during the insert in flight, or queued while MongoDB is unreachable.
 * - `before_answer`: once the entry and its `prediction.completed` are stored, so no crash loses one; a failed
 *   insert fails the request. Costs the request a MongoDB round trip.
 */
export const PREDICTION_LOG_WRITES = ['after_answer', 'before_answer'] as const;
export type PredictionLogWrite = (typeof PREDICTION_LOG_WRITES)[number];

export interface LogBatching {
  write: PredictionLogWrite;
  /** Entries written in one insert at most. */
  maxBatch: number;
  /** Entries waiting for their insert at most; past it `record` refuses at once (503 service_busy). */
  maxQueued: number;
  /** After a failed insert, the wait before the entries that are not waited for are tried again. */
  retryMs: number;
}

const DUPLICATE_KEY = 11000;

export class PredictionLogRepository {
  private readonly coll: TenantCollection<PredictionLogDoc>;
  private readonly batching: LogBatching;
  private readonly logger: Logger | null;
  private queue: QueuedEntry[] = [];
  /** The drain loop runs (cleared by the loop itself as it ends, so a record right after starts a new one). */
  private running = false;
  private draining: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    coll: TenantCollection<PredictionLogDoc>,
    batching: LogBatching = { write: 'before_answer', maxBatch: 500, maxQueued: 10_000, retryMs: 1_000 },
    logger: Logger | null = null,
  ) {
    this.coll = coll;
    this.batching = batching;
    this.logger = logger;
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
   * Logs one entry with its events. With `before_answer` it resolves once the entry is stored; with
   * `after_answer` at once, the insert following. Inserts are grouped either way: the first entry goes at
   * once, and every entry arriving while an insert is in flight goes in the next one, so under load one round
   * trip stores many requests' entries and no entry waits for a timer. Too many entries waiting: a 503.
   */
  record(accountId: string, entry: Omit<PredictionLogDoc, 'accountId'>, events: DomainEvent[] = []): Promise<void> {
    if (!accountId) throw new Error('accountId is required');
    if (this.queue.length >= this.batching.maxQueued) {
      return Promise.reject(new DomainError('service_busy', 'too many predictions are waiting to be logged on this instance; retry shortly', { retryAfterSeconds: 1 }));
    }
    stampActiveTrace(events); // here, in the request's context: the batch is written outside it
    if (this.batching.write === 'after_answer') {
      this.queue.push({ accountId, doc: entry, events, waiter: null });
      this.drainSoon();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ accountId, doc: entry, events, waiter: { resolve, reject } });
      this.drainSoon();
    });
  }

  /**
   * Resolves once every entry recorded so far is stored (or, for a waited-for one, failed), or after
   * `timeoutMs` (MongoDB unreachable); true when everything was written.
   */
  async flush(timeoutMs = 5_000): Promise<boolean> {
    if (!this.running) return true;
    let timer: NodeJS.Timeout | undefined;
    const drained = (async () => {
      while (this.running) await this.draining;
      return true;
    })();
    const done = await Promise.race([drained, new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)))]);
    clearTimeout(timer);
    return done;
  }

  /**
   * At shutdown, once no request can record any more: writes out what is queued, retrying for up to
   * `timeoutMs`; what still cannot be stored then is logged as lost.
   */
  async close(timeoutMs: number): Promise<void> {
    const done = await this.flush(timeoutMs);
    this.stopped = true;
    if (!done && this.queue.length) this.logger?.error({ lost: this.queue.length }, 'prediction-log entries could not be stored before shutdown');
  }

  private drainSoon(): void {
    if (this.running) return;
    this.running = true;
    this.draining = this.drain();
  }

  /** Writes what is queued, a batch per round trip, until nothing is. */
  private async drain(): Promise<void> {
    // `running` is cleared in the same synchronous step as the last check of the queue (no await between).
    try {
      while (this.queue.length && !this.stopped) {
        const batch = this.queue.splice(0, this.batching.maxBatch);
        let outcome: (unknown | null)[];
        try {
          outcome = await this.coll.insertEach(batch);
        } catch (err) {
          // Outcome unknown: a waiting request fails; the others are tried again (a duplicate then means stored).
          for (const q of batch) q.waiter?.reject(err);
          const again = batch.filter((q) => !q.waiter);
          if (again.length) {
            this.logger?.warn({ err, entries: again.length }, 'could not store prediction-log entries; retrying');
            this.queue.unshift(...again);
            await new Promise((r) => setTimeout(r, this.batching.retryMs).unref());
          }
          continue;
        }
        batch.forEach((q, i) => {
          const err = outcome[i];
          if (err === null || (!q.waiter && (err as { code?: unknown }).code === DUPLICATE_KEY)) return q.waiter?.resolve();
          if (q.waiter) return q.waiter.reject(err);
          this.logger?.error({ err, predictionId: q.doc._id }, 'a prediction-log entry was refused by MongoDB; it is dropped');
        });
      }
    } finally {
      this.running = false;
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
