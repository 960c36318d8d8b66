import { newId } from '@dap/contracts';
import { waitFor } from '@dap/testing';
import { deliveryStack, fastDeliveryConfig } from './harness.ts';

/** Content filters end to end: registration checks, events delivered or held back and counted. */
describe('webhook content filters', () => {
  const config = fastDeliveryConfig('0,200');
  const h = deliveryStack(config);
  const big = {
    and: [
      { path: '$.type', op: 'eq', value: 'report.completed' },
      { path: '$.data.rowCount', op: 'gt', value: 1000 },
    ],
  };

  it('refuses a bad filter at registration and on PATCH with a 400 naming the field and the fault', async () => {
    const client = h.client();
    const bad = await client.call('POST', '/webhooks', { url: `${h.receiver.url}/x`, filter: { and: [{ path: 'data.rowCount', op: 'gt', value: 1 }] } });
    expect(bad.status).toBe(400);
    const errors = bad.body.errors as Array<{ path: string; message: string }>;
    expect(errors).toEqual([expect.objectContaining({ path: expect.stringMatching(/filter\.and\.0\.path$/), message: expect.stringContaining('must be a JSONPath') })]);
    const ok = await client.call('POST', '/webhooks', { url: `${h.receiver.url}/x`, filter: big });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ filter: big, stats: { filtered: 0 } });
    const patched = await client.call('PATCH', `/webhooks/${ok.body.id}`, { filter: { path: '$.data.rowCount', op: 'between', value: 1 } });
    expect(patched.status).toBe(400);
    expect(patched.body.errors).toEqual([expect.objectContaining({ path: expect.stringMatching(/filter\.op$/), message: expect.stringContaining('must be one of eq, ne, gt') })]);
    expect((await client.call('GET', `/webhooks/${ok.body.id}`)).body.filter).toEqual(big);
  });

  it('delivers matching events, holds back and counts the others, and leaves an unfiltered endpoint alone', async () => {
    const client = h.client();
    const filtered = (await client.call('POST', '/webhooks', { url: `${h.receiver.url}/big`, filter: big })).body.id as string;
    await client.call('POST', '/webhooks', { url: `${h.receiver.url}/all` }); // the positive control
    const report = (rowCount: number) => h.events.publish('report.completed', client.accountId, { id: newId('rpt'), sourceId: newId('src'), rowCount, durationMs: 5 });
    const large = await report(5000);
    await report(10);
    await h.events.publish('source.created', client.accountId, { id: newId('src'), name: 's', type: 'csv' });
    await waitFor(() => h.at('/all').length >= 3, { what: 'the unfiltered deliveries' });
    await waitFor(() => h.at('/big').length >= 1, { what: 'the matching delivery' });
    // The control got every event, so each was decided for /big too: what was started is sent and recorded now.
    await h.svc.dispatcher.runDue();
    expect(h.at('/big').map((r) => r.headers['webhook-id'])).toEqual([large.id]);
    const got = await client.call('GET', `/webhooks/${filtered}`);
    expect(got.body.stats).toEqual({ filtered: 2 });
    const log = await client.call('GET', `/webhooks/${filtered}/deliveries`);
    expect(log.body.data.map((d: { id: string }) => d.id)).toEqual([large.id]);
    // Lifting the filter sends what comes next.
    await client.call('PATCH', `/webhooks/${filtered}`, { filter: null });
    const small = await report(1);
    await waitFor(() => h.at('/big').length >= 2, { what: 'the delivery after lifting the filter' });
    expect(h.at('/big').at(-1)!.headers['webhook-id']).toBe(small.id);
  });
});
