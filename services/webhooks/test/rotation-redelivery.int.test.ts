import { Webhook } from 'standardwebhooks';
import { deliverySchema, newId, webhookSecretRotatedSchema, webhookSchema, type EventOf } from '@dap/contracts';
import { http, waitFor, type ReceivedRequest } from '@dap/testing';
import { DELIVERY_OUTBOX, deliveryIdOf } from '../src/persistence/delivery.repository.ts';
import { deliveryStack, sleep, fastDeliveryConfig } from './harness.ts';

/**
 * Secret rotation (both signatures during the overlap, an hour of the service's test clock here), manual
 * redelivery, and the internal delivery.completed event written with each final state.
 */
const OVERLAP_MS = 3_600_000;
/** The one retry comes a minute (± 10 % jitter) after a failed attempt, when a test moves the clock past it. */
const RETRY_MS = 60_000;
const PAST_RETRY_MS = RETRY_MS * 1.1;

describe('secret rotation, redelivery and delivery.completed', () => {
  const config = fastDeliveryConfig(`0,${RETRY_MS}`, { WEBHOOK_SECRET_OVERLAP_MS: String(OVERLAP_MS) });
  /** Paths answering 500 until removed from this set. */
  const failing = new Set<string>(['/later']);
  const h = deliveryStack(
    config,
    (req) => {
      if (req.path === '/hang') return { status: 200, delayMs: 1_500 };
      if (req.path === '/gone') return { status: 410 };
      return { status: failing.has(req.path) ? 500 : 200 };
    },
    { watch: 'webhooks.deliveries' },
  );
  const completed = () => h.watcher.seen.filter((e): e is EventOf<'delivery.completed'> => e.type === 'delivery.completed');
  const verifies = (secret: string, r: ReceivedRequest) => {
    try {
      new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
      return true;
    } catch {
      return false;
    }
  };
  const signatures = (r: ReceivedRequest) => String(r.headers['webhook-signature']).split(' ');
  const deliveryOf = async (client: ReturnType<typeof h.client>, endpointId: string, eventId: string, status: string) =>
    waitFor(
      async () => {
        const res = await client.call('GET', `/webhooks/${endpointId}/deliveries?limit=100`);
        const d = res.body.data.find((x: { id: string }) => x.id === eventId);
        return d?.status === status ? d : null;
      },
      { what: `delivery ${eventId} ${status}` },
    );

  it('rotates the secret: the new one is shown once, and both sign until the overlap ends', async () => {
    const a = h.client();
    const ep = await h.register(a, '/rotate', ['report.*']);
    const asked = h.clock.now();
    const rotated = await a.call('POST', `/webhooks/${ep.id}/rotate-secret`);
    const answered = h.clock.now();
    expect(rotated.status).toBe(200);
    expect(rotated.headers.get('cache-control')).toBe('no-store');
    expect(webhookSecretRotatedSchema.strict().parse(rotated.body)).toEqual(rotated.body);
    const next: string = rotated.body.secret;
    expect(next).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(next).not.toBe(ep.secret);
    expect(rotated.body).toMatchObject({ id: ep.id, status: 'enabled', events: ['report.*'] });
    // The overlap runs from the rotation, on the clock the service and this test share.
    const expiresAt = Date.parse(rotated.body.previousSecretExpiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(asked + OVERLAP_MS);
    expect(expiresAt).toBeLessThanOrEqual(answered + OVERLAP_MS);

    // Never again in a response, never in clear at rest.
    const got = await a.call('GET', `/webhooks/${ep.id}`);
    expect(webhookSchema.strict().parse(got.body)).toEqual(got.body);
    expect(got.text).not.toContain(next.slice(6, 20));
    const stored = JSON.stringify(await h.svc.endpoints.coll.raw.findOne({ _id: ep.id as never }));
    expect(stored).not.toContain(next.slice(6));
    expect(stored).not.toContain(ep.secret.slice(6));

    const during = await h.events.publish('report.completed', a.accountId, { id: newId('rpt'), sourceId: 'src_r', rowCount: 1, durationMs: 2 });
    await waitFor(() => h.at('/rotate').length >= 1, { what: 'the delivery during the overlap' });
    const first = h.at('/rotate')[0]!;
    expect(first.headers['webhook-id']).toBe(during.id);
    expect(signatures(first)).toHaveLength(2);
    for (const sig of signatures(first)) expect(sig).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(verifies(next, first)).toBe(true);
    expect(verifies(ep.secret, first)).toBe(true);
    // Recorded before the clock jumps past its claim, so the jump cannot make it look abandoned.
    await deliveryOf(a, ep.id, during.id, 'succeeded');

    h.clock.advance(Date.parse(rotated.body.previousSecretExpiresAt) - h.clock.now() + 1);
    const after = await h.events.publish('report.completed', a.accountId, { id: newId('rpt'), sourceId: 'src_r', rowCount: 2, durationMs: 2 });
    await waitFor(() => h.at('/rotate').length >= 2, { what: 'the delivery after the overlap' });
    const second = h.at('/rotate')[1]!;
    expect(second.headers['webhook-id']).toBe(after.id);
    expect(signatures(second)).toHaveLength(1);
    expect(verifies(next, second)).toBe(true);
    expect(verifies(ep.secret, second)).toBe(false);
  });

  it('keeps only the two newest secrets when rotating again during an overlap', async () => {
    const a = h.client();
    const ep = await h.register(a, '/twice', ['webhook.test']);
    const s2 = (await a.call('POST', `/webhooks/${ep.id}/rotate-secret`)).body.secret as string;
    const s3 = (await a.call('POST', `/webhooks/${ep.id}/rotate-secret`)).body.secret as string;
    expect(new Set([ep.secret, s2, s3]).size).toBe(3);
    const test = await a.call('POST', `/webhooks/${ep.id}/test`);
    expect(test.status).toBe(202);
    await waitFor(() => h.at('/twice').length >= 1, { what: 'the test event' });
    const r = h.at('/twice')[0]!;
    expect(signatures(r)).toHaveLength(2);
    expect([verifies(s3, r), verifies(s2, r), verifies(ep.secret, r)]).toEqual([true, true, false]);
  });

  it('redelivers a delivered message with the same webhook-id and body as a new attempt series', async () => {
    const a = h.client();
    const ep = await h.register(a, '/again', ['model.ready']);
    const ev = await h.events.publish('model.ready', a.accountId, { id: newId('mdl'), name: 'm', type: 'linear' }, 'req_original');
    await deliveryOf(a, ep.id, ev.id, 'succeeded');
    expect(h.at('/again')).toHaveLength(1);

    const res = await a.call('POST', `/webhooks/${ep.id}/deliveries/${ev.id}/redeliver`);
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(`/v1/webhooks/${ep.id}/deliveries`);
    expect(deliverySchema.strict().parse(res.body)).toEqual(res.body);
    expect(res.body).toMatchObject({ id: ev.id, type: 'model.ready', status: 'pending' });
    expect(res.body.attempts).toHaveLength(1);

    await waitFor(() => h.at('/again').length >= 2, { what: 'the redelivery' });
    const [original, again] = h.at('/again') as [ReceivedRequest, ReceivedRequest];
    expect(again.headers['webhook-id']).toBe(ev.id);
    expect(again.body).toBe(original.body);
    expect(again.headers['x-request-id']).toBe('req_original');
    expect(verifies(ep.secret, again)).toBe(true);
    const d = await deliveryOf(a, ep.id, ev.id, 'succeeded');
    expect(d.attempts.map((x: { statusCode: number }) => x.statusCode)).toEqual([200, 200]);
    await h.elapse(PAST_RETRY_MS); // past any retry the schedule would make
    expect(h.at('/again')).toHaveLength(2);
  });

  it('redelivers a failed message after the endpoint recovers, and emits delivery.completed for each final state', async () => {
    const a = h.client();
    const ep = await h.register(a, '/later', ['source.failed']);
    const ev = await h.events.publish('source.failed', a.accountId, { id: newId('src'), name: 's', error: 'x' }, 'req_fail');
    await waitFor(() => h.svc.deliveries.raw.findOne({ _id: deliveryIdOf(ev.id, ep.id), status: 'pending', lockedBy: null, 'attempts.0': { $exists: true } }), {
      what: 'the first attempt recorded',
    });
    await h.elapse(PAST_RETRY_MS);
    await deliveryOf(a, ep.id, ev.id, 'failed');
    const failedEvent = await waitFor(() => completed().find((e) => e.data.eventId === ev.id), { what: 'delivery.completed (failed)' });
    expect(failedEvent).toMatchObject({
      version: 1,
      accountId: a.accountId,
      subject: ep.id,
      requestId: 'req_fail',
      data: { endpointId: ep.id, eventId: ev.id, outcome: 'failed', attempts: 2 },
    });

    failing.delete('/later');
    expect((await a.call('POST', `/webhooks/${ep.id}/deliveries/${ev.id}/redeliver`)).status).toBe(202);
    const d = await deliveryOf(a, ep.id, ev.id, 'succeeded');
    expect(d.attempts.map((x: { statusCode: number }) => x.statusCode)).toEqual([500, 500, 200]);
    const both = await waitFor(
      () => {
        const mine = completed().filter((e) => e.data.eventId === ev.id);
        return mine.length >= 2 ? mine : null;
      },
      { what: 'delivery.completed (succeeded)' },
    );
    expect(both[1]!.data).toEqual({ endpointId: ep.id, eventId: ev.id, outcome: 'succeeded', attempts: 1 });
    expect(both[1]!.id).not.toBe(both[0]!.id);
    expect(new Set(h.at('/later').map((r) => r.headers['webhook-id']))).toEqual(new Set([ev.id]));

    // The relay has published and deleted the outbox batches the final writes staged.
    await waitFor(async () => (await h.svc.mongo.db.collection(DELIVERY_OUTBOX).countDocuments({})) === 0, { what: 'the outbox drained' });
    const doc = await h.svc.deliveries.raw.findOne({ eventId: ev.id });
    expect(doc).toMatchObject({ status: 'succeeded' });
    expect(doc!._outbox).toBeUndefined();
    await sleep(200);
    expect(completed().filter((e) => e.data.eventId === ev.id)).toHaveLength(2);
  });

  it('emits exactly one delivery.completed per successful delivery, none while retries are pending', async () => {
    const a = h.client();
    const ep = await h.register(a, '/count', ['report.failed']);
    const sent = [];
    for (let i = 0; i < 5; i++) sent.push(await h.events.publish('report.failed', a.accountId, { id: newId('rpt'), sourceId: 's', error: 'e' }));
    await waitFor(() => completed().filter((e) => e.data.endpointId === ep.id).length >= 5, { what: 'five delivery.completed' });
    await sleep(300);
    const mine = completed().filter((e) => e.data.endpointId === ep.id);
    expect(mine.map((e) => e.data.eventId).sort()).toEqual(sent.map((s) => s.id).sort());
    expect(mine.every((e) => e.data.outcome === 'succeeded' && e.data.attempts === 1)).toBe(true);
  });

  it('answers 409 to redeliver a message still in flight, or to a disabled endpoint', async () => {
    const a = h.client();
    const hang = await h.register(a, '/hang', ['model.failed']);
    const ev = await h.events.publish('model.failed', a.accountId, { id: newId('mdl'), name: 'm', error: 'e' });
    await waitFor(() => h.at('/hang').length >= 1, { what: 'the hanging attempt' });
    const busy = await a.call('POST', `/webhooks/${hang.id}/deliveries/${ev.id}/redeliver`);
    expect(busy.status).toBe(409);
    expect(busy.body.code).toBe('webhook_delivery_in_progress');

    const gone = await h.register(a, '/gone', ['model.ready']);
    const ev2 = await h.events.publish('model.ready', a.accountId, { id: newId('mdl'), name: 'g', type: 'kmeans' });
    await waitFor(async () => (await a.call('GET', `/webhooks/${gone.id}`)).body.status === 'disabled', { what: 'the endpoint disabled' });
    const res = await a.call('POST', `/webhooks/${gone.id}/deliveries/${ev2.id}/redeliver`);
    expect(res.status).toBe(409);
    expect(h.at('/gone')).toHaveLength(1);
  });

  it('answers 404 for unknown, malformed, another endpoint’s and another account’s messages, and 401 without the signature', async () => {
    const a = h.client();
    const b = h.client();
    const ep = await h.register(a, '/mine', ['source.created']);
    const other = await h.register(a, '/other', ['report.completed']);
    const ev = await h.events.publish('source.created', a.accountId, { id: newId('src'), name: 'n', type: 'csv' });
    await deliveryOf(a, ep.id, ev.id, 'succeeded');

    // Another account's endpoint is unknown to the caller (webhook_not_found, never a hint that it exists).
    const cases: Array<[ReturnType<typeof h.client>, string, string]> = [
      [b, `/webhooks/${ep.id}/deliveries/${ev.id}/redeliver`, 'webhook_not_found'], // another account
      [a, `/webhooks/${other.id}/deliveries/${ev.id}/redeliver`, 'webhook_message_not_found'], // never sent to that endpoint
      [a, `/webhooks/${ep.id}/deliveries/${newId('evt')}/redeliver`, 'webhook_message_not_found'], // unknown message
      [a, `/webhooks/${ep.id}/deliveries/not-an-id/redeliver`, 'webhook_message_not_found'],
      [a, `/webhooks/whk_nope/deliveries/${ev.id}/redeliver`, 'webhook_not_found'],
      [a, `/webhooks/${newId('whk')}/deliveries/${ev.id}/redeliver`, 'webhook_not_found'],
      [b, `/webhooks/${ep.id}/rotate-secret`, 'webhook_not_found'],
      [a, `/webhooks/whk_nope/rotate-secret`, 'webhook_not_found'],
      [a, `/webhooks/${newId('whk')}/rotate-secret`, 'webhook_not_found'],
    ];
    for (const [who, path, code] of cases) {
      const res = await who.call('POST', path);
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 404, code });
    }
    for (const path of [`/webhooks/${ep.id}/deliveries/${ev.id}/redeliver`, `/webhooks/${ep.id}/rotate-secret`]) {
      expect((await http('POST', `${h.svc.url}/v1${path}`)).status).toBe(401);
    }
    // None of it changed anything: one delivery, the original secret still signs alone.
    await h.elapse(PAST_RETRY_MS); // past any retry the schedule would make
    expect(h.at('/mine')).toHaveLength(1);
    const test = await a.call('POST', `/webhooks/${ep.id}/test`);
    await waitFor(() => h.at('/mine').some((r) => r.headers['webhook-id'] === test.body.eventId), { what: 'the test event' });
    const r = h.at('/mine').find((x) => x.headers['webhook-id'] === test.body.eventId)!;
    expect(signatures(r)).toHaveLength(1);
    expect(verifies(ep.secret, r)).toBe(true);
  });
});
