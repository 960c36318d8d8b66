/**
 * The one backoff formula: exponential from `baseMs`, capped at `capMs`, times a jitter factor drawn from
 * [jitter[0], jitter[1]) so that many clients that failed together do not retry together.
 */
export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
  /** Jitter factor range; [1, 1] means none. */
  jitter?: readonly [number, number];
}

/** The delay before retry number `attempt` (0 for the first retry). */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const [lo, hi] = policy.jitter ?? [1, 1];
  const exponential = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, attempt));
  return Math.round(exponential * (lo + (hi - lo) * random()));
}

/** Resolves after the backoff for `attempt`. */
export function backoff(attempt: number, policy: BackoffPolicy, random?: () => number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, backoffDelay(attempt, policy, random)));
}
