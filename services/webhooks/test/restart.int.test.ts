import { Webhook } from 'standardwebhooks';
import { newId } from '@dap/contracts';
import { waitFor, type ReceivedRequest } from '@dap/testing';
import { deliveryBody } from '../src/domain/signing.ts';
import { deliveryIdOf } from '../src/persistence/delivery.repository.ts';
import { deliveryStack, fastDeliveryConfig } from './harness.ts';

/** Retries a minute apart (±10 % jitter): they come only when a test moves the service's clock past one. */
const RETRY_MS = 60_000;
const PAST_RETRY_MS = RETRY_MS * 1.1;

/**
 * Durability: retries live in MongoDB, so stopping the service mid-retry loses nothing; deleting an
 * endpoint cancels what waits for it; days of failure (compressed to 1.5 minutes of the test clock here)
 * disable an endpoint.
 */
describe('webhook delivery across restarts', () => {
  const config = fastDeliveryConfig(`0,${RETRY_MS},${RETRY_MS},${RETRY_MS}`, { WEBHOOK_DISABLE_AFTER_MS: '90000' });
  const failFirst = new Set<string>(['/restart', '/kept']);
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
    const kept = await h.register(a, '/kept', ['source.*']);
    await h.events.publish('source.ready', a.accountId, { id: newId('src'), name: 's', type: 'csv', rowCount: 1, schema: [] });
    const pending = await pendingAfter(doomed.id, 1);
    await pendingAfter(kept.id, 1);
    expect((await a.call('DELETE', `/webhooks/${doomed.id}`)).status).toBe(204);
    const doc = await h.svc.deliveries.raw.findOne({ _id: pending._id });
    expect(doc).toMatchObject({ status: 'cancelled', nextAttemptAt: null });
    await h.elapse(PAST_RETRY_MS);
    expect(h.at('/kept')).toHaveLength(2); // the endpoint kept got its retry
    expect(h.at('/doomed')).toHaveLength(1); // the deleted one did not
  });

  it('disables an endpoint that keeps failing past the limit and emits endpoint.disabled', async () => {
    const a = h.client();
    const failing = await h.register(a, '/failing', ['model.ready']);
    const watch = await h.register(a, '/watch-disabled', ['endpoint.disabled']);
    await h.events.publish('model.ready', a.accountId, { id: newId('mdl'), name: 'm', type: 'linear' });
    await pendingAfter(failing.id, 1);
    await h.elapse(PAST_RETRY_MS);
    await pendingAfter(failing.id, 2);
    // Failing for 1 minute, under the limit: still enabled, and nothing was announced.
    expect((await a.call('GET', `/webhooks/${failing.id}`)).body).toMatchObject({ status: 'enabled', disabledReason: null });
    expect(h.at('/watch-disabled')).toHaveLength(0);
    await h.elapse(PAST_RETRY_MS);
    await waitFor(() => h.at('/watch-disabled').length >= 1, { what: 'endpoint.disabled' });
    const notice = new Webhook(watch.secret).verify(h.at('/watch-disabled')[0]!.body, h.at('/watch-disabled')[0]!.headers as Record<string, string>) as {
      type: string;
      data: unknown;
    };
    expect(notice).toMatchObject({ type: 'endpoint.disabled', data: { endpointId: failing.id, reason: 'every attempt failed for 1.5 minutes' } });
    expect(h.at('/failing')).toHaveLength(3); // attempt 1 opened the failure run, attempt 3 (2 minutes later) passed the limit
    const got = await a.call('GET', `/webhooks/${failing.id}`);
    expect(got.body).toMatchObject({ status: 'disabled', disabledReason: 'every attempt failed for 1.5 minutes' });
    const log = await a.call('GET', `/webhooks/${failing.id}/deliveries`);
    expect(log.body.data[0]).toMatchObject({ status: 'cancelled', nextAttemptAt: null });
    expect(log.body.data[0].attempts).toHaveLength(3);
  });

  it('takes over a claim left by a crashed instance once it expires', async () => {
    const a = h.client();
    const ep = await h.register(a, '/orphan', ['source.*']);
    const eventId = newId('evt');
    const body = deliveryBody({ type: 'source.deleted', occurredAt: new Date().toISOString(), data: { id: 'src_gone' } });
    const now = h.clock.now();
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
      lockedUntil: new Date(now + 10_000), // a dead instance's claim, 10 s from lapsing
      lockedBy: 'dsp_crashed',
      createdAt: new Date(now - 5_000),
      updatedAt: new Date(now - 5_000),
      finishedAt: null,
    });
    await h.svc.dispatcher.runDue();
    expect(h.at('/orphan')).toHaveLength(0); // not while the claim holds
    await h.elapse(10_000);
    expect(h.at('/orphan')).toHaveLength(1); // once it has lapsed
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
    h.clock.advance(PAST_RETRY_MS); // the retry falls due while nothing runs
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
