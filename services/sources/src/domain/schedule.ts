import { CronExpressionParser } from 'cron-parser';
import { intervalMs, REMOTE_SOURCE_TYPES, type SourceType, type SyncSchedule } from '@dap/contracts';
import { backoffDelay, type BackoffPolicy } from '@dap/retry';
import { fieldInvalid } from './errors.ts';

/** How a failed run of a scheduled source is retried before its next regular run. */
export interface ScheduleRetry {
  backoff: BackoffPolicy;
  /** Retries in one failure streak before the source waits for its next regular run. */
  maxRetries: number;
}

/** A schedule's cron expression may name times that never come (30 February): it must have a next one. */
function cronNext(schedule: { cron: string; timezone?: string | undefined }, after: Date): Date {
  return CronExpressionParser.parse(schedule.cron, { currentDate: after, tz: schedule.timezone ?? 'UTC' })
    .next()
    .toDate();
}

/** The first regular run strictly after `after`. */
export function nextRegularRun(schedule: SyncSchedule, after: Date): Date {
  if ('every' in schedule) return new Date(after.getTime() + intervalMs(schedule.every)!);
  return cronNext(schedule, after);
}

const isRemote = (type: SourceType) => (REMOTE_SOURCE_TYPES as readonly string[]).includes(type);

/**
 * What the contract's shape check cannot see: the cron expression must parse (field ranges, names) and name
 * a time that comes, and only sources whose data lives elsewhere have anything to sync on a schedule.
 */
export function checkSchedule(type: SourceType, schedule: SyncSchedule, now: Date): void {
  if (!isRemote(type)) {
    const message = `a ${type} source has no origin to sync from; only ${REMOTE_SOURCE_TYPES.join(', ')} sources take a schedule`;
    throw fieldInvalid('schedule', message);
  }
  if ('every' in schedule) return;
  try {
    cronNext(schedule, now);
  } catch (err) {
    const message = `not a usable cron expression: ${(err as Error).message}`;
    throw fieldInvalid('schedule.cron', message);
  }
}

/** The schedule fields of a source after a run: its next regular run, and a retry when the run failed. */
export interface ScheduleState {
  nextRunAt: Date | null;
  retryAt: Date | null;
  retryAttempt: number;
}

/**
 * Where a scheduled source stands after a run that ended at `now`. A success clears any retry. A failure
 * retries after a backoff that grows with each attempt (@dap/retry), while the retry still comes before the
 * next regular run and the streak has retries left; otherwise the regular run is the next try. A regular run
 * already due (a sync on request ran in its place) moves to the next one after now.
 */
export function afterRun(
  state: { schedule: SyncSchedule; nextRunAt: Date | null; retryAttempt: number },
  ok: boolean,
  now: Date,
  retry: ScheduleRetry,
  random: () => number = Math.random,
): ScheduleState {
  const nextRunAt = state.nextRunAt && state.nextRunAt > now ? state.nextRunAt : nextRegularRun(state.schedule, now);
  if (ok) return { nextRunAt, retryAt: null, retryAttempt: 0 };
  const attempt = state.retryAttempt + 1;
  const retryAt = new Date(now.getTime() + backoffDelay(attempt - 1, retry.backoff, random));
  if (attempt > retry.maxRetries || retryAt >= nextRunAt) return { nextRunAt, retryAt: null, retryAttempt: 0 };
  return { nextRunAt, retryAt, retryAttempt: attempt };
}

/** The next time the sweep starts a sync of the source: a pending retry or its regular run. */
export function nextSyncAt(doc: { schedule?: SyncSchedule | null; nextRunAt?: Date | null; retryAt?: Date | null }): Date | null {
  if (!doc.schedule) return null;
  const times = [doc.nextRunAt, doc.retryAt].filter((d): d is Date => d != null).map((d) => new Date(d).getTime());
  return times.length ? new Date(Math.min(...times)) : null;
}
