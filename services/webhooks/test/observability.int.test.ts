import { randomInt } from 'node:crypto';
import { idFloor, webhookListSchema, webhookSchema } from '@dap/contracts';
import type { RunningWebhooks } from '../src/index.ts';
import type { AttemptDoc, DeliveryDoc } from '../src/persistence/delivery.repository.ts';
import { UNLOCKED, deliveryIdOf } from '../src/persistence/delivery.repository.ts';
import { clientFor, dropTestDatabase, silent, startWebhooks, testConfig } from './harness.ts';

/**
 * What the dashboard observes of an endpoint: its health in the DTO (the attempts of the last 24 h, how many
 * got a 2xx, the newest failure) and its delivery log's filters.
 */
describe('endpoint health and delivery log filters', () => {
  const config = testConfig();
  let svc: RunningWebhooks;
  const alice = clientFor(() => svc);
  const bob = clientFor(() => svc);
  const HOUR = 3_600_000;
  const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  /** An event id made at `at` (its ULID's time), as the services make them. */
  const eventIdAt = (at: Date) => idFloor('evt', at).slice(0, -16) + Array.from({ length: 16 }, () => CROCKFORD[randomInt(32)]).join('');

  beforeAll(async () => {
    svc = await startWebhooks(config, { logger: silent });
  });
  afterAll(async () => {
    await svc?.stop();
    await dropTestDatabase(config);
  });

  const register = async (client: ReturnType<typeof clientFor>, path: string) => {
    const res = await client.call('POST', '/webhooks', { url: `https://hooks.example.com${path}` });
    expect(res.status).toBe(201);
    // A new endpoint has had no attempt.
    expect(res.body.health).toEqual({ attempts24h: 0, succeeded24h: 0, lastFailureAt: null, failingSince: null });
    return res.body.id as string;
  };
  const attempt = (at: Date, statusCode: number | null): AttemptDoc => ({ at, statusCode, latencyMs: 12, error: statusCode && statusCode < 300 ? null : 'failed' });
  /** A finished delivery as the dispatcher records it: updatedAt is its last attempt's time. */
  const delivery = (accountId: string, endpointId: string, attempts: AttemptDoc[], eventType = 'source.ready', eventAt = attempts[0]!.at): DeliveryDoc => {
    const eventId = eventIdAt(eventAt);
    const last = attempts[attempts.length - 1]!.at;
    const ok = (attempts[attempts.length - 1]!.statusCode ?? 0) < 300 && attempts[attempts.length - 1]!.statusCode !== null;
    return {
      _id: deliveryIdOf(eventId, endpointId),
      accountId,
      endpointId,
      eventId,
      eventType,
      requestId: null,
      body: '{}',
      status: ok ? 'succeeded' : 'failed',
      attempts,
      nextAttemptAt: null,
      lockedUntil: UNLOCKED,
      lockedBy: null,
      createdAt: attempts[0]!.at,
      updatedAt: last,
      finishedAt: last,
    };
  };

  it('counts the attempts of the last 24 h per endpoint with exact numbers, in the list and on each endpoint, and no other tenant’s', async () => {
    const now = Date.now();
    const ago = (ms: number) => new Date(now - ms);
    const busy = await register(alice, '/busy');
    const quiet = await register(alice, '/quiet');
    const healthy = await register(alice, '/healthy');
    const bobs = await register(bob, '/bob');
    await svc.deliveries.raw.insertMany([
      delivery(alice.accountId, busy, [attempt(ago(HOUR), 200)]),
      // A retry series across the window's start: the attempt 25 h ago is outside it.
      delivery(alice.accountId, busy, [attempt(ago(25 * HOUR), 500), attempt(ago(3 * HOUR), 503), attempt(ago(2 * HOUR), 204)]),
      delivery(alice.accountId, busy, [attempt(ago(20 * HOUR), 302)]), // a redirect is not a success
      delivery(alice.accountId, busy, [attempt(ago(30 * 60_000), null)]), // no answer (timeout): the newest failure
      delivery(alice.accountId, busy, [attempt(ago(30 * HOUR), 500)]), // wholly outside the window
      delivery(alice.accountId, quiet, [attempt(ago(26 * HOUR), 500), attempt(ago(25 * HOUR), 410)]),
      delivery(alice.accountId, healthy, [attempt(ago(5 * HOUR), 200)]),
      delivery(alice.accountId, healthy, [attempt(ago(4 * HOUR), 201)]),
      delivery(bob.accountId, bobs, [attempt(ago(HOUR), 500)]),
      // Another account's record naming alice's endpoint (it cannot happen, but must not count if it did).
      delivery(bob.accountId, busy, [attempt(ago(10 * 60_000), 500), attempt(ago(5 * 60_000), 500)]),
    ]);

    // The dispatcher marks the run of failures that began with the timeout half an hour ago.
    await svc.endpoints.markFailing(alice.accountId, busy, ago(30 * 60_000));

    const expected = {
      [busy]: { attempts24h: 5, succeeded24h: 2, lastFailureAt: ago(30 * 60_000).toISOString(), failingSince: ago(30 * 60_000).toISOString() },
      [quiet]: { attempts24h: 0, succeeded24h: 0, lastFailureAt: null, failingSince: null },
      [healthy]: { attempts24h: 2, succeeded24h: 2, lastFailureAt: null, failingSince: null },
    };
    const list = await alice.call('GET', '/webhooks');
    expect(list.status).toBe(200);
    expect(webhookListSchema.parse(list.body)).toBeTruthy();
    expect(Object.fromEntries(list.body.data.map((w: { id: string; health: unknown }) => [w.id, w.health]))).toEqual(expected);

    for (const id of [busy, quiet, healthy]) {
      const one = await alice.call('GET', `/webhooks/${id}`);
      expect(webhookSchema.strict().parse(one.body)).toEqual(one.body);
      expect({ id, health: one.body.health }).toEqual({ id, health: expected[id] });
    }
    // PATCH answers with the same health.
    const patched = await alice.call('PATCH', `/webhooks/${busy}`, { description: 'busy one' });
    expect(patched.body.health).toEqual(expected[busy]);

    const bobList = await bob.call('GET', '/webhooks');
    expect(bobList.body.data.map((w: { id: string; health: unknown }) => [w.id, w.health])).toEqual([
      [bobs, { attempts24h: 1, succeeded24h: 0, lastFailureAt: ago(HOUR).toISOString(), failingSince: null }],
    ]);
  });

  it('has the index the window query reads through (accountId, endpointId, updatedAt)', async () => {
    const indexes = await svc.deliveries.raw.indexes();
    expect(indexes.map((i) => i.key)).toContainEqual({ accountId: 1, endpointId: 1, updatedAt: -1 });
  });

  it('filters the delivery log by status, event type and event time, pages the filtered log, and names a bad filter field in a 400', async () => {
    const id = await register(alice, '/filtered');
    const t0 = Date.parse('2026-03-01T10:00:00Z');
    const at = (min: number) => new Date(t0 + min * 60_000);
    const docs = [
      delivery(alice.accountId, id, [attempt(at(0), 200)], 'source.ready'),
      delivery(alice.accountId, id, [attempt(at(10), 500)], 'report.completed'),
      delivery(alice.accountId, id, [attempt(at(20), 200)], 'report.completed'),
      delivery(alice.accountId, id, [attempt(at(30), 500)], 'source.ready'),
      delivery(alice.accountId, id, [attempt(at(40), 500)], 'report.completed'),
    ];
    await svc.deliveries.raw.insertMany(docs);
    const ids = (path: string) =>
      alice.call('GET', `/webhooks/${id}/deliveries${path}`).then((r) => ({ status: r.status, ids: r.body.data?.map((d: { id: string }) => d.id), body: r.body }));
    const ev = (i: number) => docs[i]!.eventId;

    expect((await ids('')).ids).toEqual([ev(4), ev(3), ev(2), ev(1), ev(0)]); // the positive control: no filter
    expect((await ids('?status=failed')).ids).toEqual([ev(4), ev(3), ev(1)]);
    expect((await ids('?eventType=report.completed')).ids).toEqual([ev(4), ev(2), ev(1)]);
    expect((await ids('?status=failed&eventType=report.completed')).ids).toEqual([ev(4), ev(1)]);
    expect((await ids(`?since=${at(10).toISOString()}&until=${at(30).toISOString()}`)).ids).toEqual([ev(2), ev(1)]);
    expect((await ids(`?since=${encodeURIComponent('2026-03-01T11:20:00+01:00')}`)).ids).toEqual([ev(4), ev(3), ev(2)]);

    // Paging through a filtered log: each page holds only matches, and the cursor goes on after the last.
    const first = await ids('?status=failed&limit=2');
    expect(first.ids).toEqual([ev(4), ev(3)]);
    expect(first.body.hasMore).toBe(true);
    const second = await ids(`?status=failed&limit=2&cursor=${first.body.nextCursor}`);
    expect(second.ids).toEqual([ev(1)]);
    expect(second.body).toMatchObject({ hasMore: false, nextCursor: null });
    // A cursor beyond `until`: the lower of the two bounds wins.
    expect((await ids(`?until=${at(15).toISOString()}&cursor=${first.body.nextCursor}`)).ids).toEqual([ev(1), ev(0)]);

    // Another account sees nothing of it, filters or not.
    expect((await bob.call('GET', `/webhooks/${id}/deliveries?status=failed`)).status).toBe(404);

    for (const [query, field] of [
      ['status=broken', 'status'],
      ['eventType=foo.bar', 'eventType'],
      ['since=yesterday', 'since'],
      ['until=2026-13-01T00:00:00Z', 'until'],
      [`since=${at(30).toISOString()}&until=${at(10).toISOString()}`, 'until'],
      ['colour=red', 'colour'],
    ] as const) {
      const res = await alice.call('GET', `/webhooks/${id}/deliveries?${query}`);
      expect({ query, status: res.status, code: res.body.code, paths: res.body.errors?.map((e: { path: string }) => e.path) }).toEqual({
        query,
        status: 400,
        code: 'validation_failed',
        paths: [field],
      });
    }
  });
});
