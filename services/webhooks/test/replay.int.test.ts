import { Webhook } from 'standardwebhooks';
import { deliverySchema, makeEvent, newId, webhookReplaySchema } from '@dap/contracts';
import { http, waitFor } from '@dap/testing';
import { skippedDelivery } from '../src/persistence/delivery.repository.ts';
import { callerHeaders, deliveryStack, sleep, fastDeliveryConfig } from './harness.ts';

/**
 * Events that come while an endpoint is disabled are recorded as skipped (not lost to it), and a replay after
 * enabling sends what did not reach it: skipped, cancelled and failed messages since a time, once each.
 */
describe('skipped messages and replay', () => {
  const config = fastDeliveryConfig('0,100');
  const failing = new Set<string>(['/broken']);
  const h = deliveryStack(config, (req) => ({ status: failing.has(req.path) ? 500 : 200 }));
  const disable = async (accountId: string, id: string) => {
    const notice = makeEvent('endpoint.disabled', { accountId, subject: id, data: { endpointId: id, reason: 'the endpoint answered 410 Gone' } });
    expect((await h.svc.endpoints.disable(accountId, id, 'the endpoint answered 410 Gone', notice))?.status).toBe('disabled');
  };
  const log = async (client: ReturnType<typeof h.client>, id: string) => {
    const res = await client.call('GET', `/webhooks/${id}/deliveries?limit=100`);
    expect(res.status).toBe(200);
    return res.body.data as Array<{ id: string; status: string; attempts: Array<{ statusCode: number | null }>; nextAttemptAt: string | null }>;
  };

  it('records events for a disabled endpoint as skipped, and replays those since a time once it is enabled, once each', async () => {
    const a = h.client();
    const ep = await h.register(a, '/was-off', ['model.*']);
    await h.register(a, '/control', ['model.*']); // the positive control: an enabled endpoint of the same account
    await disable(a.accountId, ep.id);

    const mdl = (name: string) => ({ id: newId('mdl'), name, type: 'kmeans' as const });
    const before = await h.events.publish('model.ready', a.accountId, mdl('before'));
    await waitFor(() => h.at('/control').some((r) => r.headers['webhook-id'] === before.id), { what: 'the first event at the control' });
    await sleep(5);
    const since = new Date();
    const missed = [await h.events.publish('model.ready', a.accountId, mdl('m1')), await h.events.publish('model.ready', a.accountId, mdl('m2'))];
    // The enabled endpoint got every event (so they were consumed); the disabled one got none of them.
    await waitFor(() => missed.every((m) => h.at('/control').some((r) => r.headers['webhook-id'] === m.id)), { what: 'the events at the control' });
    const skipped = await waitFor(
      async () => {
        const rows = await log(a, ep.id);
        return rows.length === 3 ? rows : null;
      },
      { what: 'three skipped messages in the log' },
    );
    for (const row of skipped) {
      expect(deliverySchema.strict().parse(row)).toEqual(row);
      expect(row).toMatchObject({ status: 'skipped', attempts: [], nextAttemptAt: null });
    }
    expect(new Set(skipped.map((r) => r.id))).toEqual(new Set([before.id, ...missed.map((m) => m.id)]));
    expect(h.at('/was-off')).toHaveLength(0);

    // Not while it is disabled.
    const refused = await a.call('POST', `/webhooks/${ep.id}/replay`, { since: since.toISOString() });
    expect([refused.status, refused.body.code]).toEqual([409, 'webhook_disabled']);
    expect((await a.call('POST', `/webhooks/${ep.id}/enable`)).status).toBe(200);

    const res = await a.call('POST', `/webhooks/${ep.id}/replay`, { since: since.toISOString() });
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(`/v1/webhooks/${ep.id}/deliveries`);
    expect(webhookReplaySchema.strict().parse(res.body)).toEqual({ webhookId: ep.id, since: since.toISOString(), replayed: 2, hasMore: false, nextSince: null });
    await waitFor(() => h.at('/was-off').length >= 2, { what: 'the replayed messages' });
    const got = h.at('/was-off');
    expect(new Set(got.map((r) => r.headers['webhook-id']))).toEqual(new Set(missed.map((m) => m.id)));
    for (const r of got) expect(new Webhook(ep.secret).verify(r.body, r.headers as Record<string, string>)).toMatchObject({ type: 'model.ready' });

    // Repeating the call sends nothing twice; the message from before `since` stays skipped.
    await waitFor(async () => (await log(a, ep.id)).filter((r) => r.status === 'succeeded').length === 2, { what: 'both replays recorded' });
    const again = await a.call('POST', `/webhooks/${ep.id}/replay`, { since: since.toISOString() });
    expect([again.status, again.body.replayed, again.body.hasMore]).toEqual([202, 0, false]);
    await h.svc.dispatcher.runDue(); // anything the call made due is sent and recorded by now
    expect(h.at('/was-off')).toHaveLength(2);
    const rows = await log(a, ep.id);
    expect(rows.find((r) => r.id === before.id)).toMatchObject({ status: 'skipped', attempts: [] });
    for (const m of missed) expect(rows.find((r) => r.id === m.id)?.attempts.map((x) => x.statusCode)).toEqual([200]);
    expect(h.at('/control')).toHaveLength(3);
  });

  it('replays a failed message once the receiver is fixed, and leaves delivered ones alone', async () => {
    const a = h.client();
    const since = new Date(Date.now() - 1000);
    const ep = await h.register(a, '/broken', ['report.failed']);
    const ev = await h.events.publish('report.failed', a.accountId, { id: newId('rpt'), sourceId: 's', error: 'e' });
    await waitFor(async () => (await log(a, ep.id))[0]?.status === 'failed', { what: 'the message failed' });
    expect(h.at('/broken')).toHaveLength(2);
    failing.delete('/broken');
    const res = await a.call('POST', `/webhooks/${ep.id}/replay`, { since: since.toISOString() });
    expect([res.status, res.body.replayed]).toEqual([202, 1]);
    await waitFor(async () => (await log(a, ep.id))[0]?.status === 'succeeded', { what: 'the replay delivered' });
    expect((await log(a, ep.id))[0]!.attempts.map((x) => x.statusCode)).toEqual([500, 500, 200]);
    expect(h.at('/broken').map((r) => r.headers['webhook-id'])).toEqual([ev.id, ev.id, ev.id]);
  });

  it('goes through at most the limit per call, oldest first, and says where to go on', async () => {
    const accountId = newId('acct');
    const endpointId = newId('whk');
    const ids = [newId('evt'), newId('evt'), newId('evt')];
    const docs = ids.map((eventId) => skippedDelivery({ accountId, endpointId, eventId, eventType: 'model.ready', requestId: null, body: '{}' }));
    // Another endpoint's and another account's messages are never touched.
    const foreign = [
      skippedDelivery({ accountId, endpointId: newId('whk'), eventId: newId('evt'), eventType: 'model.ready', requestId: null, body: '{}' }),
      skippedDelivery({ accountId: newId('acct'), endpointId, eventId: newId('evt'), eventType: 'model.ready', requestId: null, body: '{}' }),
    ];
    await h.svc.deliveries.insertMany([...docs, ...foreign]);
    // Claimed by nobody's dispatcher: these endpoints do not exist, so a claim would cancel them; the status is what counts.
    const first = await h.svc.deliveries.replay(accountId, endpointId, 'evt_00000000000000000000000000', 2);
    expect(first).toEqual({ replayed: 2, lastEventId: ids[1] });
    const second = await h.svc.deliveries.replay(accountId, endpointId, ids[1]!, 2);
    expect(second).toEqual({ replayed: 1, lastEventId: null });
    const stored = await h.svc.deliveries.raw.find({ _id: { $in: [...docs, ...foreign].map((d) => d._id) } }).toArray();
    const statusOf = (id: string) => stored.find((d) => d._id === id)?.status;
    expect(foreign.map((d) => statusOf(d._id))).toEqual(['skipped', 'skipped']);
    expect(docs.map((d) => statusOf(d._id)).every((s) => s !== 'skipped')).toBe(true);
  });

  it('answers 400 to a bad since, and 404 for another account’s or an unknown endpoint', async () => {
    const a = h.client();
    const b = h.client();
    const ep = await h.register(a, '/mine', ['source.created']);
    for (const body of [{}, { since: 'yesterday' }, { since: '2026-01-01' }, { since: new Date(Date.now() + 60_000).toISOString() }, { since: '2026-01-01T00:00:00Z', extra: 1 }]) {
      const res = await a.call('POST', `/webhooks/${ep.id}/replay`, body);
      expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
    }
    const ok = { since: '2026-01-01T00:00:00Z' };
    for (const [who, id] of [
      [b, ep.id],
      [a, newId('whk')],
      [a, 'whk_nope'],
    ] as const) {
      const res = await who.call('POST', `/webhooks/${id}/replay`, ok);
      expect({ id, status: res.status }).toEqual({ id, status: 404 });
    }
    expect((await http('POST', `${h.svc.url}/v1/webhooks/${ep.id}/replay`, { body: ok })).status).toBe(401);
    const mine = await http('POST', `${h.svc.url}/v1/webhooks/${ep.id}/replay`, { body: ok, headers: callerHeaders(a.accountId) });
    expect([mine.status, mine.body.replayed]).toEqual([202, 0]);
  });
});
