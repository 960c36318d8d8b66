import type { DomainEvent, EventOf } from '@dap/contracts';
import type { UsageRepository } from '../persistence/usage.repository.ts';

/** The instant a usage window's counts belong to: its end (the requests happened just before it). */
export function usageInstantOf(event: EventOf<'usage.recorded'>): Date {
  for (const t of [event.data.windowEnd, event.occurredAt]) {
    const ms = Date.parse(t);
    if (!Number.isNaN(ms)) return new Date(ms);
  }
  return new Date();
}

/** Counts each `usage.recorded` into its account's hour, once per event id; other gateway events are ignored. */
export function usageHandler(usage: UsageRepository): (event: DomainEvent) => Promise<void> {
  return async (event) => {
    if (event.type !== 'usage.recorded') return;
    if (event.data.requests === 0 && event.data.rejected === 0) return;
    await usage.add(event.accountId, event.id, usageInstantOf(event), { requests: event.data.requests, rejected: event.data.rejected });
  };
}
