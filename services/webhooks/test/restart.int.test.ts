import { Webhook } from 'standardwebhooks';
import { newId } from '@dap/contracts';
import { waitFor, type ReceivedRequest } from '@dap/testing';
import { deliveryBody } from '../src/domain/signing.ts';
import { deliveryIdOf } from '../src/persistence/delivery.repository.ts';
import { deliveryStack, sleep, fastDeliveryConfig } from './harness.ts';

/**
 * Durability: retries live in MongoDB, so stopping the service mid-retry loses nothing; deleting an
 * endpoint cancels what waits for it; days of failure (compressed to 1 s here) disable an endpoint.
 */
describe('webhook delivery across restarts', () => {
  const config = fastDeliveryConfig('0,1500,1500', { WEBHOOK_DISABLE_AFTER_MS: '1000' });
  const failFirst = new Set<string>(['/restart']);
  const h = deliveryStack(config, (req, n) => {
    if (req.path === '/doomed' || req.path === '/failing') return { status: 503 };
    if (failFirst.has(req.path) && n === 1) return { status: 500 };
    return { status: 200 };
  });

  const pendingAfter = (endpointId: string, attempts: number) =>
    waitFor(
      () =>
        h.svc.deliveries.raw
          .findOne({ endpointId, status: 'pending', 'attempts.0': { $exists: true }, lockedBy: null })
          .then((d) => (d && d.attempts.length === attempts ? d : null)),
      {
        what: `a pending delivery after ${attempts} attempt(s)`,
      },
    );

  it('cancels pending deliveries when their endpoint is deleted', async () => {
    const a = h.client();
    const doomed = await h.register(a, '/doomed', ['source.*']);
    await h.events.publish('source.ready', a.accountId, { id: newId('src'), name: 's', type: 'csv', rowCount: 1, schema: [] });
    const pending = await pendingAfter(doomed.id, 1);
    expect((await a.call('DELETE', `/webhooks/${doomed.id}`)).status).toBe(204);
    const doc = await h.svc.deliveries.raw.findOne({ _id: pending._id });
    expect(doc).toMatchObject({ status: 'cancelled', nextAttemptAt: null });
    await sleep(2_000); // past the 1.5 s retry that would have come
    expect(h.at('/doomed')).toHaveLength(1);
  });

  it('disables an endpoint that keeps failing past the limit and emits endpoint.disabled', async () => {
    const a = h.client();
    const failing = await h.register(a, '/failing', ['model.ready']);
    const watch = await h.register(a, '/watch-disabled', ['endpoint.disabled']);
    await h.events.publish('model.ready', a.accountId, { id: newId('mdl'), name: 'm', type: 'linear' });
    await waitFor(() => h.at('/watch-disabled').length >= 1, { what: 'endpoint.disabled', timeoutMs: 10_000 });
    const notice = new Webhook(watch.secret).verify(h.at('/watch-disabled')[0]!.body, h.at('/watch-disabled')[0]!.headers as Record<string, string>) as {
      type: string;
      data: unknown;
    };
    expect(notice).toMatchObject({ type: 'endpoint.disabled', data: { endpointId: failing.id, reason: 'every attempt failed for 1 second' } });
    expect(h.at('/failing')).toHaveLength(2); // attempt 1 opened the failure run, attempt 2 (1.5 s later) passed the limit
    const got = await a.call('GET', `/webhooks/${failing.id}`);
    expect(got.body).toMatchObject({ status: 'disabled', disabledReason: 'every attempt failed for 1 second' });
    const log = await a.call('GET', `/webhooks/${failing.id}/deliveries`);
    expect(log.body.data[0]).toMatchObject({ status: 'cancelled', nextAttemptAt: null });
    expect(log.body.data[0].attempts).toHaveLength(2);
  });

  it('takes over a claim left by a crashed instance once it expires', async () => {
    const a = h.client();
    const ep = await h.register(a, '/orphan', ['source.*']);
    const eventId = newId('evt');
    const body = deliveryBody({ type: 'source.deleted', occurredAt: new Date().toISOString(), data: { id: 'src_gone' } });
    const now = Date.now();
    await h.svc.deliveries.raw.insertOne({
      _id: deliveryIdOf(eventId, ep.id),
      accountId: a.accountId,
      endpointId: ep.id,
      eventId,
      eventType: 'source.deleted',
      requestId: null,
      body,
      status: 'pending',
      attempts: [],
      nextAttemptAt: new Date(now - 5_000),
      lockedUntil: new Date(now + 600), // a dead instance's claim, about to lapse
      lockedBy: 'dsp_crashed',
      createdAt: new Date(now - 5_000),
      updatedAt: new Date(now - 5_000),
      finishedAt: null,
    });
    await sleep(300);
    expect(h.at('/orphan')).toHaveLength(0); // not while the claim holds
    await waitFor(() => h.at('/orphan').length >= 1, { what: 'the orphaned delivery' });
    const r = h.at('/orphan')[0]!;
    expect(r.headers['webhook-id']).toBe(eventId);
    expect(new Webhook(ep.secret).verify(r.body, r.headers as Record<string, string>)).toEqual(JSON.parse(body));
  });

  it('still delivers an event whose retry was due while the service was down, and events published meanwhile', async () => {
    const a = h.client();
    const ep = await h.register(a, '/restart', ['report.*']);
    const first = await h.events.publish('report.failed', a.accountId, { id: newId('rpt'), sourceId: 'src_r', error: 'boom' });
    await pendingAfter(ep.id, 1);
    expect(h.at('/restart')).toHaveLength(1);

    await h.svc.stop();
    const whileDown = await h.events.publish('report.completed', a.accountId, { id: newId('rpt'), sourceId: 'src_r', rowCount: 2, durationMs: 3 });
    await sleep(1_600); // the retry falls due while nothing runs
    expect(h.at('/restart')).toHaveLength(1);

    await h.restart();
    await waitFor(() => h.at('/restart').length >= 3, { what: 'the retry and the new event', timeoutMs: 20_000 });
    const byId = (id: string) => h.at('/restart').filter((r) => r.headers['webhook-id'] === id);
    expect(byId(first.id)).toHaveLength(2);
    expect(byId(whileDown.id)).toHaveLength(1);
    for (const r of h.at('/restart') as ReceivedRequest[]) {
      expect(() => new Webhook(ep.secret).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
    }
    const log = await waitFor(
      async () => {
        const res = await a.call('GET', `/webhooks/${ep.id}/deliveries`);
        return res.body.data.length === 2 && res.body.data.every((d: { status: string }) => d.status === 'succeeded') ? res : null;
      },
      { what: 'both deliveries succeeded' },
    );
    const retried = log.body.data.find((d: { id: string }) => d.id === first.id);
    expect(retried.attempts.map((x: { statusCode: number }) => x.statusCode)).toEqual([500, 200]);
  });
});
