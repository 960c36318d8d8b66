import { Webhook } from 'standardwebhooks';
import { newId, webhookSchema } from '@dap/contracts';
import { waitFor, type ReceivedRequest } from '@dap/testing';
import { deliveryStack, percentile, sleep, fastDeliveryConfig } from './harness.ts';

/**
 * Delivery end to end: events published on Kafka → consumer → stored deliveries → signed POSTs to a real
 * receiver. Retries are a minute apart, so they come when a test moves the service's clock; attempts time
 * out after 1 s.
 */
const SLOW_MS = 1_500;
const RETRY_MS = 60_000;
/** Past a retry with its ±10 % jitter. */
const PAST_RETRY_MS = RETRY_MS * 1.1;

describe('webhook delivery', () => {
  const config = fastDeliveryConfig(`0,${RETRY_MS},${RETRY_MS}`, { WEBHOOK_ENDPOINT_CONCURRENCY: '2' });
  /** Per path behaviour: status by attempt number (1-based), optional delay. */
  const behaviour: Record<string, (n: number) => { status: number; delayMs?: number }> = {
    '/flaky': (n) => ({ status: n === 1 ? 500 : 200 }),
    '/dead': () => ({ status: 500 }),
    '/slow': () => ({ status: 200, delayMs: SLOW_MS }),
    '/gone': () => ({ status: 410 }),
  };
  const h = deliveryStack(config, (req, n) => behaviour[req.path]?.(n) ?? { status: 200 });
  const typesAt = (path: string) => h.at(path).map((r) => JSON.parse(r.body).type as string);

  /** The endpoint's delivery once it waits for its next attempt, after `attempts` of them. */
  const waitingAfter = (endpointId: string, attempts: number) =>
    waitFor(() => h.svc.deliveries.raw.findOne({ endpointId, status: 'pending', lockedBy: null }).then((d) => (d && d.attempts.length === attempts ? d : null)), {
      what: `a delivery waiting after ${attempts} attempt(s)`,
    });

  const verify = (secret: string, r: ReceivedRequest) =>
    new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as { type: string; timestamp: string; data: Record<string, unknown> };

  it('delivers by filter, signed so standardwebhooks verifies it, and only to the event’s account', async () => {
    const a = h.client();
    const reports = await h.register(a, '/reports', ['report.*']);
    const all = await h.register(a, '/all');
    const other = h.client();
    await h.register(other, '/other');

    const src = await h.events.publish('source.created', a.accountId, { id: newId('src'), name: 'orders', type: 'csv' });
    const rpt = await h.events.publish('report.completed', a.accountId, { id: newId('rpt'), sourceId: src.data.id, rowCount: 3, durationMs: 12 }, 'req_trace-1');
    await h.events.publish('report.completed', newId('acct'), { id: newId('rpt'), sourceId: 'src_x', rowCount: 1, durationMs: 1 });

    await waitFor(() => h.at('/all').length >= 2 && h.at('/reports').length >= 1, { what: 'first deliveries' });
    await sleep(300);
    expect(typesAt('/reports')).toEqual(['report.completed']);
    expect(typesAt('/all').sort()).toEqual(['report.completed', 'source.created']);
    expect(h.at('/other')).toHaveLength(0);

    const got = h.at('/reports')[0]!;
    expect(verify(reports.secret, got)).toEqual({ type: 'report.completed', timestamp: rpt.occurredAt, data: rpt.data });
    expect(got.headers).toMatchObject({
      'webhook-id': rpt.id,
      'content-type': 'application/json',
      'x-request-id': 'req_trace-1',
    });
    expect(got.headers['user-agent']).toMatch(/^dap-webhooks\//);
    expect(Number(got.headers['webhook-timestamp'])).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(got.headers['webhook-signature']).toMatch(/^v1,/);
    // The same event to another endpoint is signed with that endpoint's secret only.
    const toAll = h.at('/all').find((r) => r.headers['webhook-id'] === rpt.id)!;
    expect(() => verify(reports.secret, toAll)).toThrow();
    expect(verify(all.secret, toAll).data).toEqual(rpt.data);
    expect(h.at('/all').find((r) => r.headers['webhook-id'] === src.id)!.headers['x-request-id']).toBeUndefined();
  });

  it('delivers an event published twice only once (deliveries are keyed by event and endpoint)', async () => {
    const a = h.client();
    const once = await h.register(a, '/once', ['source.deleted']);
    const ev = await h.events.publish('source.deleted', a.accountId, { id: newId('src') });
    const { publishedAt: _p, ...event } = ev;
    await h.events.republish(event);
    // Same topic and key, so once this later event arrives the duplicate has been consumed too.
    const later = await h.events.publish('source.deleted', a.accountId, { id: newId('src') });
    await waitFor(() => h.at('/once').some((r) => r.headers['webhook-id'] === later.id), { what: 'a later event' });
    await sleep(100);
    expect(h.at('/once').filter((r) => r.headers['webhook-id'] === ev.id)).toHaveLength(1);
    // An attempt is stored after its answer (in the next batch), so the log is read once it shows the later event.
    const log = await waitFor(
      async () => {
        const r = await a.call('GET', `/webhooks/${once.id}/deliveries`);
        return r.body.data.some((d: { id: string }) => d.id === later.id) ? r : null;
      },
      { what: 'the later event in the deliveries log' },
    );
    expect(log.body.data.filter((d: { id: string }) => d.id === ev.id)).toHaveLength(1);
  });

  it('measures event → delivery latency (published-at to received-at)', async () => {
    const a = h.client();
    await h.register(a, '/latency', ['report.completed']);
    const sent: Array<{ id: string; publishedAt: number }> = [];
    for (let i = 0; i < 40; i++) {
      sent.push(await h.events.publish('report.completed', a.accountId, { id: newId('rpt'), sourceId: 'src_l', rowCount: i, durationMs: 1 }));
      await sleep(10);
    }
    await waitFor(() => h.at('/latency').length >= 40, { what: '40 deliveries' });
    const latencies = sent.map((s) => h.at('/latency').find((r) => r.headers['webhook-id'] === s.id)!.at - s.publishedAt);
    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    // eslint-disable-next-line no-console -- the measured latency goes to the test log
    console.log(`event→delivery latency over ${latencies.length} events: p50 ${p50} ms, p99 ${p99} ms, max ${Math.max(...latencies)} ms`);
    expect(p50).toBeLessThan(250); // loose bound for a loaded CI machine; the figure above is the measurement
  });

  it('retries a failed attempt on the schedule with the same webhook-id, and logs every attempt', async () => {
    const c = h.client();
    const flaky = await h.register(c, '/flaky', ['model.ready']);
    const ev = await h.events.publish('model.ready', c.accountId, { id: newId('mdl'), name: 'churn', type: 'logistic' });
    const waiting = await waitingAfter(flaky.id, 1);
    // Due a minute (± 10 % jitter) after the failed attempt, and not sent before.
    const delay = waiting.nextAttemptAt!.getTime() - waiting.attempts[0]!.at.getTime();
    expect(delay).toBeGreaterThanOrEqual(RETRY_MS * 0.9);
    expect(delay).toBeLessThanOrEqual(RETRY_MS * 1.1);
    await h.elapse(delay - 5_000); // the clock also runs on meanwhile: a margin for a slow machine
    expect(h.at('/flaky')).toHaveLength(1);
    await h.elapse(5_000);
    expect(h.at('/flaky')).toHaveLength(2);
    const [first, second] = h.at('/flaky') as [ReceivedRequest, ReceivedRequest];
    expect(first.headers['webhook-id']).toBe(ev.id);
    expect(second.headers['webhook-id']).toBe(ev.id);
    expect(verify(flaky.secret, second).data).toEqual(ev.data);

    const log = await waitFor(
      async () => {
        const res = await c.call('GET', `/webhooks/${flaky.id}/deliveries`);
        return res.body.data[0]?.status === 'succeeded' ? res : null;
      },
      { what: 'the delivery log' },
    );
    expect(log.status).toBe(200);
    expect(log.body.data).toHaveLength(1);
    const d = log.body.data[0];
    expect(d).toMatchObject({ id: ev.id, type: 'model.ready', status: 'succeeded', nextAttemptAt: null });
    expect(d.attempts.map((x: { statusCode: number; error: string | null }) => [x.statusCode, x.error])).toEqual([
      [500, 'HTTP 500'],
      [200, null],
    ]);
    for (const x of d.attempts) {
      expect(typeof x.latencyMs).toBe('number');
      expect(Number.isNaN(Date.parse(x.at))).toBe(false);
    }
    expect(h.at('/flaky')).toHaveLength(2);
  });

  it('marks a delivery failed after the last attempt', async () => {
    const c = h.client();
    const dead = await h.register(c, '/dead', ['model.failed']);
    await h.events.publish('model.failed', c.accountId, { id: newId('mdl'), name: 'x', error: 'bad data' });
    await waitingAfter(dead.id, 1);
    await h.elapse(PAST_RETRY_MS);
    await waitingAfter(dead.id, 2);
    await h.elapse(PAST_RETRY_MS);
    const log = await waitFor(
      async () => {
        const res = await c.call('GET', `/webhooks/${dead.id}/deliveries`);
        return res.body.data[0]?.status === 'failed' ? res : null;
      },
      { what: 'a failed delivery' },
    );
    expect(log.body.data[0].attempts.map((x: { statusCode: number }) => x.statusCode)).toEqual([500, 500, 500]);
    expect(log.body.data[0].nextAttemptAt).toBeNull();
    await h.elapse(PAST_RETRY_MS); // moving the clock sent each retry above; after the last it sends nothing
    expect(h.at('/dead')).toHaveLength(3);
    expect(new Set(h.at('/dead').map((r) => r.headers['webhook-id'])).size).toBe(1);
  });

  it('keeps a healthy endpoint fast while another endpoint of the same account hangs', async () => {
    const d = h.client();
    const slow = await h.register(d, '/slow', ['prediction.completed']);
    await h.register(d, '/fast', ['prediction.completed']);
    const sent = [];
    for (let i = 0; i < 6; i++) sent.push(await h.events.publish('prediction.completed', d.accountId, { id: newId('prd'), modelId: 'mdl_x', count: 1, latencyMs: 1 }));
    await waitFor(() => h.at('/fast').length >= 6, { what: 'fast deliveries', timeoutMs: 5_000 });
    const latencies = sent.map((s) => h.at('/fast').find((r) => r.headers['webhook-id'] === s.id)!.at - s.publishedAt);
    expect(Math.max(...latencies)).toBeLessThan(900); // well under one 1 s timeout of the hanging endpoint
    expect(h.at('/slow').length).toBeLessThanOrEqual(2); // its own concurrency limit
    const log = await waitFor(
      async () => {
        const res = await d.call('GET', `/webhooks/${slow.id}/deliveries?limit=100`);
        return res.body.data.some((x: { attempts: unknown[] }) => x.attempts.length > 0) ? res : null;
      },
      { what: 'a timed-out attempt' },
    );
    const attempt = log.body.data.flatMap((x: { attempts: unknown[] }) => x.attempts)[0];
    expect(attempt).toMatchObject({ statusCode: null, error: 'timed out after 1000 ms' });
  });

  it('disables an endpoint that answers 410 and tells the account’s other endpoints', async () => {
    const e = h.client();
    const gone = await h.register(e, '/gone', ['model.*']);
    const watch = await h.register(e, '/watch', ['endpoint.disabled']);
    await h.events.publish('model.ready', e.accountId, { id: newId('mdl'), name: 'm', type: 'kmeans' });
    await waitFor(() => h.at('/watch').length >= 1, { what: 'endpoint.disabled' });
    const notice = verify(watch.secret, h.at('/watch')[0]!);
    expect(notice.type).toBe('endpoint.disabled');
    expect(notice.data).toEqual({ endpointId: gone.id, reason: 'the endpoint answered 410 Gone' });

    const got = await e.call('GET', `/webhooks/${gone.id}`);
    expect(got.body).toMatchObject({ status: 'disabled', disabledReason: 'the endpoint answered 410 Gone' });
    const log = await e.call('GET', `/webhooks/${gone.id}/deliveries`);
    expect(log.body.data[0]).toMatchObject({ status: 'failed', nextAttemptAt: null });
    expect(log.body.data[0].attempts.map((x: { statusCode: number }) => x.statusCode)).toEqual([410]);

    const test = await e.call('POST', `/webhooks/${gone.id}/test`);
    expect(test.status).toBe(409);
    await h.events.publish('model.ready', e.accountId, { id: newId('mdl'), name: 'm2', type: 'kmeans' });
    const sync = await e.call('POST', `/webhooks/${watch.id}/test`);
    await waitFor(() => h.at('/watch').some((r) => r.headers['webhook-id'] === sync.body.eventId), { what: 'sync test event' });
    await sleep(200);
    expect(h.at('/gone')).toHaveLength(1);
    expect(test.body.detail).toMatch(/enable it \(POST \/v1\/webhooks\/\{id\}\/enable\)/);

    // The receiver is fixed: enabling the endpoint again sends it new events (and changes nothing a second time).
    behaviour['/gone'] = () => ({ status: 200 });
    expect((await h.client().call('POST', `/webhooks/${gone.id}/enable`)).status).toBe(404);
    const enabled = await e.call('POST', `/webhooks/${gone.id}/enable`);
    expect([enabled.status, enabled.body.status, enabled.body.disabledReason]).toEqual([200, 'enabled', null]);
    expect(webhookSchema.parse(enabled.body).id).toBe(gone.id);
    const again = await e.call('POST', `/webhooks/${gone.id}/enable`);
    expect([again.status, again.body.status, again.body.updatedAt]).toEqual([200, 'enabled', enabled.body.updatedAt]);
    const after = await h.events.publish('model.ready', e.accountId, { id: newId('mdl'), name: 'm3', type: 'kmeans' });
    await waitFor(() => h.at('/gone').some((r) => r.headers['webhook-id'] === after.id), { what: 'an event after enabling' });
    expect(
      verify(
        gone.secret,
        h.at('/gone').find((r) => r.headers['webhook-id'] === after.id)!,
      ).type,
    ).toBe('model.ready');
  });

  it('sends a test event to the one endpoint through the normal path, and pages the deliveries log', async () => {
    const f = h.client();
    const t1 = await h.register(f, '/t1', ['report.completed']);
    const t2 = await h.register(f, '/t2');
    const res = await f.call('POST', `/webhooks/${t1.id}/test`, undefined, { 'x-request-id': 'req_test-42' });
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(`/v1/webhooks/${t1.id}/deliveries`);
    expect(res.body).toEqual({ eventId: expect.stringMatching(/^evt_/), webhookId: t1.id, type: 'webhook.test' });
    await waitFor(() => h.at('/t1').length >= 1, { what: 'the test event' });
    const got = h.at('/t1')[0]!;
    expect(got.headers['webhook-id']).toBe(res.body.eventId);
    expect(got.headers['x-request-id']).toBe('req_test-42');
    expect(verify(t1.secret, got)).toMatchObject({ type: 'webhook.test', data: { endpointId: t1.id } });

    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await f.call('POST', `/webhooks/${t2.id}/test`)).body.eventId);
    await waitFor(() => h.at('/t2').length >= 3, { what: 'three test events' });
    await sleep(200);
    expect(
      h
        .at('/t2')
        .map((r) => r.headers['webhook-id'])
        .sort(),
    ).toEqual([...ids].sort()); // t1's test never reached t2
    expect(h.at('/t1')).toHaveLength(1);

    // Attempts are stored in batches after their answers: page only once all three are in the log.
    await waitFor(
      async () => {
        const r = await f.call('GET', `/webhooks/${t2.id}/deliveries?limit=10`);
        return r.body.data.length === 3 && r.body.data.every((x: { status: string }) => x.status === 'succeeded') ? r : null;
      },
      { what: 'all three test events in the log' },
    );
    const page1 = await f.call('GET', `/webhooks/${t2.id}/deliveries?limit=2`);
    expect(page1.body.data.map((x: { id: string }) => x.id)).toEqual([ids[2], ids[1]]);
    expect(page1.body.hasMore).toBe(true);
    const page2 = await f.call('GET', `/webhooks/${t2.id}/deliveries?limit=2&cursor=${page1.body.nextCursor}`);
    expect(page2.body).toMatchObject({ hasMore: false, nextCursor: null });
    expect(page2.body.data.map((x: { id: string }) => x.id)).toEqual([ids[0]]);
    expect(page2.body.data[0].attempts[0]).toMatchObject({ statusCode: 200, error: null });
  });
});
