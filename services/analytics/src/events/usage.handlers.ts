import type { DomainEvent, EventOf } from '@dap/contracts';
import type { UsageStatsRepository } from '../persistence/usage-stats.repository.ts';
import type { UsageRepository } from '../persistence/usage.repository.ts';

/** The instant a usage window's counts belong to: its end (the requests happened just before it). */
export function usageInstantOf(event: EventOf<'usage.recorded'>): Date {
  for (const t of [event.data.windowEnd, event.occurredAt]) {
    const ms = Date.parse(t);
    if (!Number.isNaN(ms)) return new Date(ms);
  }
  return new Date();
}

/**
 * Counts each `usage.recorded` into its account's hour (the API keys' totals per day) and, when it carries
 * its calls by caller and operation, into the per-minute and per-hour breakdowns; once per event id each.
 * Other gateway events are ignored.
 */
export function usageHandler(usage: UsageRepository, stats: UsageStatsRepository): (event: DomainEvent) => Promise<void> {
  return async (event) => {
    if (event.type !== 'usage.recorded') return;
    const at = usageInstantOf(event);
    if (event.data.requests > 0 || event.data.rejected > 0) {
      await usage.add(event.accountId, event.id, at, { requests: event.data.requests, rejected: event.data.rejected });
    }
    if (event.data.calls?.length) await stats.add(event.accountId, event.id, at, event.data.calls);
  };
}
