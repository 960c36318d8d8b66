/**
 * `schedule[i]` is the delay before attempt i + 1, so the schedule's length is the number of attempts.
 * Delays get ±10% jitter so endpoints that failed together are not retried in lockstep.
 */
export const JITTER = 0.1;

export function withJitter(delayMs: number, random: () => number = Math.random): number {
  if (delayMs <= 0) return 0;
  return Math.max(0, Math.round(delayMs * (1 + (random() * 2 - 1) * JITTER)));
}

/** Delay before the next attempt after `attemptsMade` failed attempts, or null when none is left. */
export function nextDelayMs(schedule: readonly number[], attemptsMade: number, random: () => number = Math.random): number | null {
  if (attemptsMade < 1 || attemptsMade >= schedule.length) return null;
  return withJitter(schedule[attemptsMade]!, random);
}

/** Answers that may carry a `Retry-After` the dispatcher honours (RFC 9110 §10.2.3). */
export const PUSHBACK_STATUSES: readonly number[] = [429, 503];

/**
 * A `Retry-After` value in ms from `now`: delta-seconds or an HTTP date (a date in the past is 0). Null when
 * absent or malformed, so a receiver's typo falls back to the regular schedule.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | null {
  if (value == null) return null;
  const v = value.trim();
  if (/^\d{1,10}$/.test(v)) return Number(v) * 1000;
  // An HTTP date always names its weekday and GMT; a bare number or word is not one.
  if (!/GMT$/.test(v)) return null;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * When a failed attempt's next one may go: the regular delay, or the receiver's Retry-After (bounded by
 * `maxMs`) when that is later. Answers the bounded push-back too, to record on the attempt.
 */
export function retryDelayWithPushback(regularMs: number, retryAfterMs: number | null, maxMs: number): { delayMs: number; retryAfterMs: number | null } {
  if (retryAfterMs === null) return { delayMs: regularMs, retryAfterMs: null };
  const bounded = Math.min(retryAfterMs, maxMs);
  return { delayMs: Math.max(regularMs, bounded), retryAfterMs: bounded };
}
