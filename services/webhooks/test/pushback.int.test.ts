import { newId } from '@dap/contracts';
import { connectMongo } from '@dap/mongo';
import { waitFor } from '@dap/testing';
import { RateSlots } from '../src/persistence/rate-slots.ts';
import { deliveryStack, fastDeliveryConfig } from './harness.ts';

/**
 * Receivers that push back: Retry-After on 429/503, and a per-endpoint rate limit. The retry schedule is
 * compressed to 0, 200, 400 ms, so a Retry-After of 60 s (on the service's test clock) is far later.
 */
describe('webhook push-back and rate limits', () => {
  const config = fastDeliveryConfig('0,200,400', { WEBHOOK_ENDPOINT_CONCURRENCY: '4' });
  const h = deliveryStack(config, (req, n) => (req.path === '/busy' && n === 1 ? { status: 429, headers: { 'retry-after': '60' } } : { status: 200 }));
  const register = async (client: ReturnType<typeof h.client>, path: string, fields: Record<string, unknown> = {}) => (await h.register(client, path, fields)).id;

  it('waits as long as a 429 Retry-After asks, rather than the 200 ms the schedule says, and shows it on the attempt', async () => {
    const client = h.client();
    const id = await register(client, '/busy');
    await h.events.publish('source.created', client.accountId, { id: newId('src'), name: 'a', type: 'csv' });
    await waitFor(() => h.svc.deliveries.raw.findOne({ endpointId: id, status: 'pending', lockedBy: null, 'attempts.0': { $exists: true } }), {
      what: 'the first attempt recorded',
    });
    await h.elapse(1_000); // past the schedule's 200 ms (and its 400 ms)
    expect(h.at('/busy')).toHaveLength(1);
    await h.elapse(59_000); // 60 s since the 429
    expect(h.at('/busy')).toHaveLength(2);
    const log = await waitFor(
      async () => {
        const res = await client.call('GET', `/webhooks/${id}/deliveries`);
        return res.body.data[0]?.status === 'succeeded' ? res.body.data[0] : null;
      },
      { what: 'the delivery recorded' },
    );
    expect(log.attempts.map((a: { statusCode: number; retryAfterMs: number | null }) => [a.statusCode, a.retryAfterMs])).toEqual([
      [429, 60_000],
      [200, null],
    ]);
  });

  it('never starts more than rateLimitPerSecond requests in a second for a burst, and loses none', async () => {
    const client = h.client();
    const limited = await register(client, '/limited', { rateLimitPerSecond: 2 });
    await register(client, '/unlimited'); // the positive control: the same burst, no limit
    const got = await client.call('GET', `/webhooks/${limited}`);
    expect(got.body).toMatchObject({ rateLimitPerSecond: 2, pausedUntil: null });
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push((await h.events.publish('source.created', client.accountId, { id: newId('src'), name: `s${i}`, type: 'csv' })).id);
    await waitFor(() => h.at('/limited').length >= 10 && h.at('/unlimited').length >= 10, { what: 'every delivery', timeoutMs: 20_000 });
    await h.svc.dispatcher.runDue(); // any attempt still under way is recorded
    const limitedAt = h.at('/limited').map((r) => r.at);
    const unlimitedAt = h.at('/unlimited').map((r) => r.at);
    // Request i and i + 2 start at least 1 s apart at the sender. The receiver runs in this process beside the
    // service on busy shared cores, so a request's arrival can lag its start (up to 220 ms seen under a full
    // test run): 400 ms are allowed per window, and the 10 starts (0, 500, … 4,500 ms) must still span 4 s.
    for (let i = 0; i + 2 < limitedAt.length; i++) expect(limitedAt[i + 2]! - limitedAt[i]!).toBeGreaterThanOrEqual(600);
    expect(limitedAt[9]! - limitedAt[0]!).toBeGreaterThanOrEqual(4_000);
    // Without a limit the same burst goes faster: its first six arrive before the limited ones' (2.5 s apart),
    // even on a loaded machine (1.2 s seen).
    expect(unlimitedAt[5]! - unlimitedAt[0]!).toBeLessThan(limitedAt[5]! - limitedAt[0]!);
    expect(new Set(h.at('/limited').map((r) => r.headers['webhook-id'])).size).toBe(10);
    expect([...new Set(h.at('/limited').map((r) => r.headers['webhook-id'] as string))].sort()).toEqual([...ids].sort());
  });

  it('changes the rate limit with PATCH, and refuses a bad one with a 400 naming the field', async () => {
    const client = h.client();
    const id = await register(client, '/patched');
    const ok = await client.call('PATCH', `/webhooks/${id}`, { rateLimitPerSecond: 2 });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ id, rateLimitPerSecond: 2 });
    const lifted = await client.call('PATCH', `/webhooks/${id}`, { rateLimitPerSecond: null });
    expect(lifted.body.rateLimitPerSecond).toBeNull();
    const bad = await client.call('PATCH', `/webhooks/${id}`, { rateLimitPerSecond: 0 });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('rateLimitPerSecond');
    const other = h.client();
    expect((await other.call('PATCH', `/webhooks/${id}`, { rateLimitPerSecond: 3 })).status).toBe(404); // another tenant's
    expect((await client.call('GET', `/webhooks/${id}`)).body.rateLimitPerSecond).toBeNull();
  });

  it('spaces the slots two instances take for one endpoint by 1000 / limit ms', async () => {
    const mongo = await connectMongo(config.MONGO_URL, config.MONGO_DB);
    try {
      const a = new RateSlots(mongo.db);
      const b = new RateSlots(mongo.db);
      const endpoint = newId('whk');
      const slots = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).take(endpoint, 10)));
      const times = slots.map((s) => s.getTime()).sort((x, y) => x - y);
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(100);
    } finally {
      await mongo.close();
    }
  });
});
