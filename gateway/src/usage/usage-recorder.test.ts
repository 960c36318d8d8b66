import type { DomainEvent, EventOf } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { outcomeOf, UsageRecorder, usageCallOf, type UsageCall } from './usage-recorder.ts';

const logger = createLogger({ name: 'usage-test', level: 'silent' });

function recorder(maxLines = 100, fail = false) {
  const published: EventOf<'usage.recorded'>[] = [];
  const overflows = { n: 0 };
  let clock = Date.parse('2026-11-20T10:00:00.000Z');
  let failing = fail;
  const r = new UsageRecorder({
    logger,
    intervalMs: 10_000,
    maxLines,
    now: () => new Date(clock),
    onOverflow: () => void overflows.n++,
    publish: async (events: DomainEvent[]) => {
      if (failing) throw new Error('kafka down');
      published.push(...(events as EventOf<'usage.recorded'>[]));
    },
  });
  return { r, published, overflows, tick: (ms: number) => void (clock += ms), heal: () => void (failing = false) };
}

const keyCall = (accountId: string, keyId: string, operationId: string, status: number): UsageCall => ({
  accountId,
  caller: 'key',
  keyId,
  keyHint: `dap_sk_…${keyId.slice(-4)}`,
  operationId,
  status,
});
const dashCall = (accountId: string, operationId: string, status: number): UsageCall => ({ accountId, caller: 'dashboard', operationId, status });

const total = (c: { success: number; clientErrors: number; serverErrors: number; rateLimited: number }) => c.success + c.clientErrors + c.serverErrors + c.rateLimited;

describe('UsageRecorder', () => {
  it('classifies outcomes: 2xx/3xx success, 429 apart from the other 4xx, 5xx', () => {
    expect([200, 204, 304, 400, 404, 429, 500, 503].map(outcomeOf)).toEqual([
      'success',
      'success',
      'success',
      'clientErrors',
      'clientErrors',
      'rateLimited',
      'serverErrors',
      'serverErrors',
    ]);
  });

  it('maps a key principal to its key and a session to the dashboard, never to a key', () => {
    const op = { operationId: 'listSources' } as never;
    expect(usageCallOf({ kind: 'key', accountId: 'acct_A', plan: 'starter', scopes: [], keyId: 'key_1', keyHint: 'dap_sk_…abcd' }, op, 200)).toEqual({
      accountId: 'acct_A',
      caller: 'key',
      keyId: 'key_1',
      keyHint: 'dap_sk_…abcd',
      operationId: 'listSources',
      status: 200,
    });
    expect(usageCallOf({ kind: 'session', accountId: 'acct_A', plan: 'starter', scopes: [], sessionId: 's', userId: 'u' }, op, 404)).toEqual({
      accountId: 'acct_A',
      caller: 'dashboard',
      operationId: 'listSources',
      status: 404,
    });
  });

  it('counts per account, key or dashboard, operation and outcome; one event per account; the day totals leave the dashboard out', async () => {
    const { r, published, tick } = recorder();
    for (const s of [200, 200, 404, 429, 500]) r.record(keyCall('acct_A', 'key_1', 'listSources', s));
    r.record(keyCall('acct_A', 'key_2', 'listSources', 201));
    r.record(keyCall('acct_A', 'key_1', 'getOverview', 200));
    r.record(dashCall('acct_A', 'listSources', 200));
    r.record(dashCall('acct_A', 'listSources', 429));
    r.record(keyCall('acct_B', 'key_9', 'listSources', 400));
    tick(10_000);
    await r.flush();

    expect(published).toHaveLength(2);
    const a = published.find((e) => e.accountId === 'acct_A')!;
    const b = published.find((e) => e.accountId === 'acct_B')!;
    expect(a.data).toMatchObject({ windowStart: '2026-11-20T10:00:00.000Z', windowEnd: '2026-11-20T10:00:10.000Z', requests: 7, rejected: 1 });
    expect(a.data.calls).toEqual(
      expect.arrayContaining([
        { caller: 'key', keyId: 'key_1', keyHint: 'dap_sk_…ey_1', operationId: 'listSources', success: 2, clientErrors: 1, serverErrors: 1, rateLimited: 1 },
        { caller: 'key', keyId: 'key_2', keyHint: 'dap_sk_…ey_2', operationId: 'listSources', success: 1, clientErrors: 0, serverErrors: 0, rateLimited: 0 },
        { caller: 'key', keyId: 'key_1', keyHint: 'dap_sk_…ey_1', operationId: 'getOverview', success: 1, clientErrors: 0, serverErrors: 0, rateLimited: 0 },
        { caller: 'dashboard', operationId: 'listSources', success: 1, clientErrors: 0, serverErrors: 0, rateLimited: 1 },
      ]),
    );
    expect(a.data.calls).toHaveLength(4);
    // Another account's calls never ride in this account's event.
    expect(b.data).toMatchObject({
      requests: 1,
      rejected: 0,
      calls: [{ caller: 'key', keyId: 'key_9', operationId: 'listSources', success: 0, clientErrors: 1, serverErrors: 0, rateLimited: 0 }],
    });
    expect(JSON.stringify(a)).not.toContain('key_9');

    // The next window starts where this one ended, and an empty window publishes nothing.
    await r.flush();
    expect(published).toHaveLength(2);
    r.record(keyCall('acct_A', 'key_1', 'listSources', 200));
    tick(5_000);
    await r.flush();
    expect(published[2]!.data).toMatchObject({ windowStart: '2026-11-20T10:00:10.000Z', windowEnd: '2026-11-20T10:00:15.000Z', requests: 1 });
  });

  it('holds at most maxLines distinct lines and counts the rest on the account’s `other` line, losing none', async () => {
    const { r, published, overflows } = recorder(3);
    for (let i = 0; i < 3; i++) r.record(keyCall('acct_A', `key_${i}`, 'listSources', 200));
    expect(r.size).toBe(3);
    // Past the cap: new lines fold into `other`, existing ones still count on their own.
    for (let i = 3; i < 50; i++) r.record(keyCall('acct_A', `key_${i}`, 'listSources', i % 2 ? 500 : 200));
    r.record(keyCall('acct_A', 'key_0', 'listSources', 404));
    r.record(dashCall('acct_B', 'getAccount', 200));
    expect(r.size).toBe(5); // 3 lines + acct_A's other + acct_B's other
    expect([r.overflowed, overflows.n]).toEqual([48, 48]);
    await r.flush();
    const a = published.find((e) => e.accountId === 'acct_A')!;
    expect(a.data.calls!.find((c) => c.keyId === 'key_0')).toMatchObject({ success: 1, clientErrors: 1 });
    expect(a.data.calls!.find((c) => c.caller === 'other')).toEqual({ caller: 'other', operationId: 'other', success: 23, clientErrors: 0, serverErrors: 24, rateLimited: 0 });
    expect(a.data.calls!.reduce((n, c) => n + total(c), 0)).toBe(51);
    // The day totals count the keys' calls only; overflow calls are not known to be a key's.
    expect(a.data.requests).toBe(4);
    expect(published.find((e) => e.accountId === 'acct_B')!.data.calls).toEqual([
      { caller: 'other', operationId: 'other', success: 1, clientErrors: 0, serverErrors: 0, rateLimited: 0 },
    ]);
  });

  it('keeps the counts of a failed publish for the next flush, within the cap', async () => {
    const { r, published, heal } = recorder(2, true);
    r.record(keyCall('acct_A', 'key_1', 'listSources', 200));
    r.record(keyCall('acct_A', 'key_2', 'listSources', 200));
    await r.flush();
    expect(published).toHaveLength(0);
    expect(r.size).toBe(2);
    r.record(keyCall('acct_A', 'key_1', 'listSources', 500));
    r.record(keyCall('acct_A', 'key_3', 'listSources', 200));
    heal();
    await r.flush();
    const calls = published[0]!.data.calls!;
    expect(calls.find((c) => c.keyId === 'key_1')).toMatchObject({ success: 1, serverErrors: 1 });
    expect(calls.reduce((n, c) => n + total(c), 0)).toBe(4);
  });
});
