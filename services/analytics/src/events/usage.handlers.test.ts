import { makeEvent } from '@dap/contracts';
import type { UsageRepository } from '../persistence/usage.repository.ts';
import { usageHandler, usageInstantOf } from './usage.handlers.ts';

const usage = (windowEnd: string, requests = 3, rejected = 1) =>
  makeEvent('usage.recorded', { accountId: 'acct_A', subject: 'acct_A', data: { windowStart: '2025-01-01T00:00:00.000Z', windowEnd, requests, rejected } });

describe('usage.recorded handling', () => {
  it('counts a window at its end, falling back to occurredAt', () => {
    expect(usageInstantOf(usage('2025-01-01T23:59:59.900Z')).toISOString()).toBe('2025-01-01T23:59:59.900Z');
    const bad = usage('not a time');
    expect(usageInstantOf(bad).toISOString()).toBe(new Date(bad.occurredAt).toISOString());
  });

  it('adds the counts under the event id, and skips empty windows and other events', async () => {
    const calls: unknown[][] = [];
    const repo = { add: async (...args: unknown[]) => void calls.push(args) } as unknown as UsageRepository;
    const handle = usageHandler(repo);
    const e = usage('2025-01-02T10:00:00.000Z', 7, 2);
    await handle(e);
    await handle(usage('2025-01-02T10:00:00.000Z', 0, 0));
    await handle(makeEvent('webhook.test', { accountId: 'acct_A', subject: 'whk_1', data: { endpointId: 'whk_1', message: 'x' } }));
    expect(calls).toEqual([['acct_A', e.id, new Date('2025-01-02T10:00:00.000Z'), { requests: 7, rejected: 2 }]]);
  });
});
