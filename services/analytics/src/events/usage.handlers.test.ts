import { makeEvent, type UsageCalls } from '@dap/contracts';
import type { UsageStatsRepository } from '../persistence/usage-stats.repository.ts';
import type { UsageRepository } from '../persistence/usage.repository.ts';
import { usageHandler, usageInstantOf } from './usage.handlers.ts';

const usage = (windowEnd: string, requests = 3, rejected = 1, calls?: UsageCalls[]) =>
  makeEvent('usage.recorded', {
    accountId: 'acct_A',
    subject: 'acct_A',
    data: { windowStart: '2025-01-01T00:00:00.000Z', windowEnd, requests, rejected, ...(calls ? { calls } : {}) },
  });

function recorders() {
  const days: unknown[][] = [];
  const stats: unknown[][] = [];
  const repo = { add: async (...args: unknown[]) => void days.push(args) } as unknown as UsageRepository;
  const statsRepo = { add: async (...args: unknown[]) => void stats.push(args) } as unknown as UsageStatsRepository;
  return { days, stats, handle: usageHandler(repo, statsRepo) };
}

describe('usage.recorded handling', () => {
  it('counts a window at its end, falling back to occurredAt', () => {
    expect(usageInstantOf(usage('2025-01-01T23:59:59.900Z')).toISOString()).toBe('2025-01-01T23:59:59.900Z');
    const bad = usage('not a time');
    expect(usageInstantOf(bad).toISOString()).toBe(new Date(bad.occurredAt).toISOString());
  });

  it('adds the counts under the event id, and skips empty windows and other events', async () => {
    const { days, stats, handle } = recorders();
    const e = usage('2025-01-02T10:00:00.000Z', 7, 2);
    await handle(e);
    await handle(usage('2025-01-02T10:00:00.000Z', 0, 0));
    await handle(makeEvent('webhook.test', { accountId: 'acct_A', subject: 'whk_1', data: { endpointId: 'whk_1', message: 'x' } }));
    expect(days).toEqual([['acct_A', e.id, new Date('2025-01-02T10:00:00.000Z'), { requests: 7, rejected: 2 }]]);
    expect(stats).toEqual([]); // an event from before the breakdown carries no calls
  });

  it('adds the calls breakdown, also of a window with dashboard calls only (which count in no day total)', async () => {
    const { days, stats, handle } = recorders();
    const calls: UsageCalls[] = [{ caller: 'dashboard', operationId: 'getOverview', success: 4, clientErrors: 0, serverErrors: 0, rateLimited: 0 }];
    const e = usage('2025-01-02T10:00:00.000Z', 0, 0, calls);
    await handle(e);
    expect(days).toEqual([]);
    expect(stats).toEqual([['acct_A', e.id, new Date('2025-01-02T10:00:00.000Z'), calls]]);
  });
});
