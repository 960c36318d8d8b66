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
