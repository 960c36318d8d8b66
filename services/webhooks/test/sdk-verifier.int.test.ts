import { writeFileSync } from 'node:fs';
import { newId } from '@dap/contracts';
import { verifyWebhook, WebhookVerificationError } from '@dap/sdk/webhooks';
import { waitFor, type ReceivedRequest } from '@dap/testing';
import { deliveryStack, testConfig } from './harness.ts';

/**
 * Deliveries from the real service verify with the SDK's receiver-side verifier, typed by the event
 * catalog, across a secret rotation. With CAPTURE_DELIVERIES=<file>, the captured requests are written out:
 * that is how libs/sdk/src/fixtures/captured-deliveries.json was made.
 */
describe('the SDK webhook verifier on deliveries from the service', () => {
  const config = testConfig({ WEBHOOK_POLL_MS: '200', WEBHOOK_SECRET_OVERLAP_MS: '600000' });
  const h = deliveryStack(config);

  it('verifies and types every delivered event, with the old and the new secret during a rotation', async () => {
    const client = h.client();
    const created = await client.call('POST', '/webhooks', { url: `${h.receiver.url}/hook` });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const first: string = created.body.secret;

    const sourceId = newId('src');
    const ready = await h.events.publish('source.ready', client.accountId, {
      id: sourceId,
      name: 'orders',
      type: 'csv',
      rowCount: 3,
      schema: [{ name: 'amount', type: 'number' }],
    });
    await waitFor(() => h.receiver.received.some((r) => r.headers['webhook-id'] === ready.id), { what: 'source.ready delivered' });

    const rotated = await client.call('POST', `/webhooks/${id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const second: string = rotated.body.secret;
    const report = await h.events.publish('report.completed', client.accountId, { id: newId('rpt'), sourceId, rowCount: 2, durationMs: 7 });
    const test = await client.call('POST', `/webhooks/${id}/test`);
    expect(test.status).toBe(202);
    await waitFor(() => h.receiver.received.length >= 3, { what: 'three deliveries' });

    const byId = (eventId: string) => h.receiver.received.find((r) => r.headers['webhook-id'] === eventId)!;
    const verify = (r: ReceivedRequest, secrets: string[]) => verifyWebhook(r.body, r.headers as Record<string, string>, { secrets });

    const readyEvent = verify(byId(ready.id), [first]);
    expect(readyEvent).toEqual({ id: ready.id, known: true, type: 'source.ready', timestamp: ready.occurredAt, data: ready.data });
    if (readyEvent.known && readyEvent.type === 'source.ready') expect(readyEvent.data.schema[0]!.name).toBe('amount');

    // During the overlap each delivery carries both signatures: either secret verifies it alone.
    const afterRotation = byId(report.id);
    expect(String(afterRotation.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verify(afterRotation, [first])).toMatchObject({ type: 'report.completed', data: report.data });
    expect(verify(afterRotation, [second])).toMatchObject({ type: 'report.completed', data: report.data });
    expect(() => verify(byId(ready.id), [second])).toThrow(WebhookVerificationError);
    const testDelivery = h.receiver.received.find((r) => JSON.parse(r.body).type === 'webhook.test')!;
    expect(verify(testDelivery, [second, first])).toMatchObject({ type: 'webhook.test', data: { endpointId: id } });

    if (process.env.CAPTURE_DELIVERIES) {
      const captured = h.receiver.received.map((r) => ({
        headers: Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature', 'content-type'].map((name) => [name, r.headers[name]])),
        body: r.body,
      }));
      writeFileSync(process.env.CAPTURE_DELIVERIES, `${JSON.stringify({ secrets: { first, second }, deliveries: captured }, null, 2)}\n`);
    }
  });
});
