import type { Limiter, LimitDecision, SlidingWindowLimiter } from './sliding-window.limiter.ts';

/** An instance never holds more than this share of a bucket's limit unused (so Starter's 100 is never leased). */
const MAX_LEASE_SHARE = 0.01;
const MAX_LEASE = 500;

interface Lease {
  limit: number;
  /** Admitted entries not yet used by a request. */
  unused: string[];
  /** On this limiter's clock: the permits may be used before then, and never after. */
  expiresAt: number;
  /** Room left in the window when the lease was granted, besides the lease itself. */
  remainingBeside: number;
  resetMs: number;
  grantedAt: number;
  granted: number;
}

interface Bucket {
  lease: Lease | null;
  /** The lease being asked for, shared by every request of the bucket that arrives meanwhile. */
  asking: Promise<LimitDecision> | null;
  waiting: number;
  /**
   * How many permits the next lease asks for (at least one per request waiting): doubled when a lease runs out
   * within a hold of being asked for, cut to its use when one lapses.
   */
  want: number;
  /** The last lease was used up, and when it was asked for. */
  usedUp: boolean;
  lastAskAt: number;
}

/**
 * Keeps the Redis round trip off most requests of a busy bucket without ever admitting more than the exact
 * window would. The instance reserves several requests at once in the shared window (a lease) and admits
 * its next requests from it, for at most `holdMs`. Each reserved entry is stored as if made at the end of
 * the hold, so it stays counted for a full window after whichever moment it is used; what is not used in
 * time is handed back. A quiet bucket asks for one permit per request, exactly as the plain window does; a
 * busy one asks for more, up to 1 % of its limit, so other instances lose at most that much room, for at most
 * `holdMs`. docs/architecture.md explains the choice.
 */
export class LeasingLimiter implements Limiter {
  private readonly window: SlidingWindowLimiter;
  private readonly holdMs: number;
  private readonly clock: () => number;
  private readonly buckets = new Map<string, Bucket>();
  private readonly onReleaseError: (err: unknown) => void;

  /** `clock` decides when a lease lapses: a monotonic one by default, or the test clock the window is given. */
  constructor(window: SlidingWindowLimiter, opts: { holdMs: number; clock?: () => number; onReleaseError?: (err: unknown) => void }) {
    this.window = window;
    this.holdMs = opts.holdMs;
    this.clock = opts.clock ?? (() => performance.now());
    this.onReleaseError = opts.onReleaseError ?? (() => {});
  }

  async check(key: string, limit: number): Promise<LimitDecision> {
    for (;;) {
      const bucket = this.bucketOf(key);
      const lease = this.liveLease(key, bucket, limit);
      if (lease?.unused.length) {
        lease.unused.pop();
        const remaining = lease.remainingBeside + lease.unused.length;
        return { allowed: true, limit, remaining, resetMs: Math.max(0, lease.resetMs - (this.clock() - lease.grantedAt)), source: 'redis' };
      }
      if (!bucket.asking) return this.ask(key, bucket, limit);
      // Another request of the bucket is asking: share its answer, then take from the lease it brought.
      bucket.waiting++;
      let decision: LimitDecision;
      try {
        decision = await bucket.asking;
      } finally {
        bucket.waiting--;
      }
      if (!decision.allowed) return decision;
    }
  }

  /** What the window holds, less this instance's unused permits (they are not requests yet). */
  async peek(key: string, limit: number): Promise<LimitDecision> {
    const d = await this.window.peek(key, limit);
    const bucket = this.buckets.get(key);
    const unused = bucket ? (this.liveLease(key, bucket, limit)?.unused.length ?? 0) : 0;
    const remaining = Math.min(limit, d.remaining + unused);
    return { ...d, allowed: remaining > 0, remaining };
  }

  /** Hands back the unused permits of lapsed leases and forgets idle buckets; run every `holdMs`. */
  async sweep(): Promise<void> {
    const releases: Promise<void>[] = [];
    for (const [key, bucket] of this.buckets) {
      // A bucket is forgotten a sweep after its last lease, so a steady one keeps the size it has learnt.
      if (!bucket.lease && !bucket.asking) this.buckets.delete(key);
      else if (bucket.lease && this.clock() >= bucket.lease.expiresAt) releases.push(this.retire(key, bucket));
    }
    await Promise.all(releases);
  }

  /** At shutdown, before Redis closes: every unused permit goes back, so no other instance waits on them. */
  async stop(): Promise<void> {
    const releases: Promise<void>[] = [];
    for (const [key, bucket] of this.buckets) if (bucket.lease) releases.push(this.retire(key, bucket));
    await Promise.all(releases);
  }

  private bucketOf(key: string): Bucket {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = { lease: null, asking: null, waiting: 0, want: 1, usedUp: false, lastAskAt: -Infinity };
      this.buckets.set(key, bucket);
    }
    return bucket;
  }

  /** The bucket's lease while it may still be used; a lapsed one, or one for another limit, is retired. */
  private liveLease(key: string, bucket: Bucket, limit: number): Lease | null {
    const lease = bucket.lease;
    if (!lease) return null;
    if (lease.limit === limit && this.clock() < lease.expiresAt) return lease;
    void this.retire(key, bucket);
    return null;
  }

  /** Drops the bucket's lease at once, sizes the next one from its use, and hands back what it left. */
  private retire(key: string, bucket: Bucket): Promise<void> {
    const lease = bucket.lease;
    if (!lease) return Promise.resolve();
    bucket.lease = null;
    bucket.usedUp = !lease.unused.length;
    if (bucket.usedUp) return Promise.resolve();
    bucket.want = Math.max(1, lease.granted - lease.unused.length);
    return this.window.release(key, lease.unused).catch(this.onReleaseError);
  }

  private ask(key: string, bucket: Bucket, limit: number): Promise<LimitDecision> {
    if (bucket.lease) void this.retire(key, bucket); // used up, or lapsed
    const startedAt = this.clock();
    // Used up within a hold: the bucket is busier than its lease was large. A quiet one stays at one permit.
    if (bucket.usedUp && startedAt - bucket.lastAskAt < this.holdMs) bucket.want *= 2;
    bucket.want = this.holdMs > 0 ? Math.min(Math.max(bucket.want, bucket.waiting + 1), maxLease(limit)) : 1;
    bucket.usedUp = false;
    bucket.lastAskAt = startedAt;
    const want = bucket.want;
    // One permit is this request's own, used at once: it needs no hold, and counts exactly as without leases.
    const hold = want > 1 ? this.holdMs : 0;
    const asking = (async (): Promise<LimitDecision> => {
      // The lease lapses `hold` after the question left, and Redis stores its entries `hold` after its own
      // moment of granting them, which is later: every permit is used before the moment its entry stands at.
      const r = await this.window.reserve(key, limit, want, hold);
      if (!r.granted) return { allowed: false, limit, remaining: 0, resetMs: r.resetMs, source: 'redis' };
      const unused = r.members.slice(1); // the first one is this request's
      bucket.lease = { limit, unused, expiresAt: startedAt + hold, remainingBeside: r.remaining, resetMs: r.resetMs, grantedAt: this.clock(), granted: r.granted };
      return { allowed: true, limit, remaining: r.remaining + unused.length, resetMs: r.resetMs, source: 'redis' };
    })();
    bucket.asking = asking;
    const clear = () => {
      if (bucket.asking === asking) bucket.asking = null;
    };
    asking.then(clear, clear);
    return asking;
  }
}

function maxLease(limit: number): number {
  return Math.max(1, Math.min(MAX_LEASE, Math.floor(limit * MAX_LEASE_SHARE)));
}
