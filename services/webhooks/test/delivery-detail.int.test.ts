import { deliveryDetailSchema, deliverySchema, makeEvent } from '@dap/contracts';
import { startReceiver, waitFor } from '@dap/testing';
import type { RunningWebhooks } from '../src/index.ts';
import { clientFor, dropTestDatabase, silent, startWebhooks, testConfig } from './harness.ts';

/**
 * A delivery's detail (payload, headers sent, each answer capped) and "retry now" for a waiting retry: the
 * second attempt waits 10 minutes, so only the retry call can make it come within the test.
 */
describe('delivery detail and retry now', () => {
  const config = testConfig({ WEBHOOK_RETRY_SCHEDULE_MS: '0,600000', WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_POLL_MS: '200' });
  let svc: RunningWebhooks;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  /** Paths that answer 500 with a large body and many headers until taken out. */
  const failing = new Set<string>();
  const bigBody = `{"error":"${'x'.repeat(10_000)}"}`;
  const manyHeaders = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`x-debug-${String(i).padStart(2, '0')}`, `v${i}`]));
  const at = (path: string) => receiver.received.filter((r) => r.path === path);

  beforeAll(async () => {
    receiver = await startReceiver((req) =>
      failing.has(req.path) ? { status: 500, headers: manyHeaders, body: bigBody } : { status: 200, headers: { 'x-receiver': 'ok' }, body: '{"received":true}' },
    );
    svc = await startWebhooks(config, { logger: silent });
  });
  afterAll(async () => {
    await svc?.stop();
    await dropTestDatabase(config);
    await receiver?.close();
  });

  /** An endpoint with its secret, and the id of a test event once its first attempt is in the log. */
  const firstAttempt = async (client: ReturnType<typeof clientFor>, path: string) => {
    const made = await client.call('POST', '/webhooks', { url: `${receiver.url}${path}`, events: ['*'] });
    expect(made.status).toBe(201);
    const sent = await client.call('POST', `/webhooks/${made.body.id}/test`);
    expect(sent.status).toBe(202);
    const messageId = sent.body.eventId as string;
    await waitFor(
      async () => {
        const res = await client.call('GET', `/webhooks/${made.body.id}/deliveries/${messageId}`);
        return res.status === 200 && res.body.attempts.length === 1;
      },
      { what: 'the first attempt in the log' },
    );
    return { id: made.body.id as string, secret: made.body.secret as string, messageId };
  };

  it("shows the payload, the headers sent and each answer (capped), and never the endpoint's secret", async () => {
    const a = clientFor(() => svc);
    failing.add('/detail');
    const { id, secret, messageId } = await firstAttempt(a, '/detail');
    failing.delete('/detail');
    const res = await a.call('GET', `/webhooks/${id}/deliveries/${messageId}`);
    expect(res.status).toBe(200);
    expect(deliveryDetailSchema.strict().parse(res.body)).toEqual(res.body);
    const received = at('/detail');
    expect(received).toHaveLength(1);
    expect(res.body).toMatchObject({ id: messageId, webhookId: id, type: 'webhook.test', status: 'pending', payload: JSON.parse(received[0]!.body) });
    const [attempt] = res.body.attempts;
    // The headers as the receiver got them, signature included.
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'content-type', 'content-length', 'user-agent']) {
      expect([name, attempt.requestHeaders[name]]).toEqual([name, received[0]!.headers[name]]);
    }
    expect(attempt.requestHeaders['webhook-signature']).toMatch(/^v1,/);
    expect(attempt).toMatchObject({ statusCode: 500, error: 'HTTP 500' });
    expect(attempt.response.body).toBe(bigBody.slice(0, 4096));
    expect(attempt.response.bodyTruncated).toBe(true);
    expect(attempt.response.headers).toHaveLength(32);
    expect(attempt.response.headersTruncated).toBe(true);
    expect(attempt.response.headers).toContainEqual({ name: 'x-debug-00', value: 'v0' });
    // The secret, whole or its key part, is nowhere in the answer.
    const text = JSON.stringify(res.body);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(secret.slice('whsec_'.length));

    // The log's list keeps to each attempt's outcome.
    const list = await a.call('GET', `/webhooks/${id}/deliveries`);
    expect(list.status).toBe(200);
    const row = list.body.data.find((d: { id: string }) => d.id === messageId);
    expect(deliverySchema.parse(row)).toEqual(row);
    expect(row.attempts[0]).toEqual({ at: attempt.at, statusCode: 500, latencyMs: attempt.latencyMs, error: 'HTTP 500', retryAfterMs: null });
  });

  it('makes a waiting retry due now: one more attempt, same message, then 409 once it is not pending', async () => {
    const a = clientFor(() => svc);
    failing.add('/retry');
    const { id, messageId } = await firstAttempt(a, '/retry');
    failing.delete('/retry');
    const waiting = await a.call('GET', `/webhooks/${id}/deliveries/${messageId}`);
    expect(waiting.body.status).toBe('pending');
    expect(new Date(waiting.body.nextAttemptAt).getTime()).toBeGreaterThan(Date.now() + 500_000);

    const res = await a.call('POST', `/webhooks/${id}/deliveries/${messageId}/retry`);
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(`/v1/webhooks/${id}/deliveries/${messageId}`);
    expect(deliverySchema.strict().parse(res.body)).toEqual(res.body);
    expect(res.body.id).toBe(messageId);
    expect(new Date(res.body.nextAttemptAt ?? 0).getTime()).toBeLessThanOrEqual(Date.now());

    const done = await waitFor(
      async () => {
        const d = await a.call('GET', `/webhooks/${id}/deliveries/${messageId}`);
        return d.body.status === 'succeeded' ? d.body : null;
      },
      { what: 'the retried attempt to succeed', timeoutMs: 10_000 },
    );
    expect(done.attempts.map((t: { statusCode: number }) => t.statusCode)).toEqual([500, 200]);
    expect(done.attempts[1].response).toEqual({
      headers: expect.arrayContaining([{ name: 'x-receiver', value: 'ok' }]),
      headersTruncated: false,
      body: '{"received":true}',
      bodyTruncated: false,
    });
    // Nothing lost, nothing doubled: the receiver got the same message twice, once per attempt.
    expect(at('/retry').map((r) => r.headers['webhook-id'])).toEqual([messageId, messageId]);

    const again = await a.call('POST', `/webhooks/${id}/deliveries/${messageId}/retry`);
    expect([again.status, again.body.code]).toEqual([409, 'webhook_delivery_not_pending']);
    expect(again.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(at('/retry')).toHaveLength(2);
  });

  it("answers 404 for another account's delivery, an unknown message and an unknown endpoint, and changes nothing", async () => {
    const a = clientFor(() => svc);
    const b = clientFor(() => svc);
    failing.add('/tenancy');
    const { id, secret, messageId } = await firstAttempt(a, '/tenancy');
    const before = await a.call('GET', `/webhooks/${id}/deliveries/${messageId}`);

    for (const [method, path] of [
      ['GET', `/webhooks/${id}/deliveries/${messageId}`],
      ['POST', `/webhooks/${id}/deliveries/${messageId}/retry`],
    ] as const) {
      const other = await b.call(method, path);
      expect([other.status, other.body.code]).toEqual([404, 'webhook_not_found']);
      // Nothing of A's delivery (the problem's instance only echoes the path asked for).
      expect(Object.keys(other.body).sort()).toEqual(['code', 'detail', 'instance', 'requestId', 'status', 'title', 'type']);
      expect(JSON.stringify(other.body)).not.toContain('webhook.test');
      expect(JSON.stringify(other.body)).not.toContain(secret);
    }
    const unknownMessage = 'evt_01JZZZZZZZZZZZZZZZZZZZZZZZ';
    expect((await a.call('GET', `/webhooks/${id}/deliveries/${unknownMessage}`)).body.code).toBe('webhook_message_not_found');
    expect((await a.call('POST', `/webhooks/${id}/deliveries/${unknownMessage}/retry`)).status).toBe(404);
    expect((await a.call('GET', `/webhooks/${id}/deliveries/not-an-id`)).status).toBe(404);
    // B's own endpoint with A's message id: the id is A's, so B sees nothing.
    const bEndpoint = await b.call('POST', '/webhooks', { url: `${receiver.url}/b`, events: ['*'] });
    expect((await b.call('GET', `/webhooks/${bEndpoint.body.id}/deliveries/${messageId}`)).body.code).toBe('webhook_message_not_found');

    // B's retry did not make A's delivery due: still the same next attempt, one attempt at the receiver.
    const after = await a.call('GET', `/webhooks/${id}/deliveries/${messageId}`);
    expect(after.body.nextAttemptAt).toBe(before.body.nextAttemptAt);
    expect(at('/tenancy')).toHaveLength(1);
    // Positive control: A's own retry does.
    failing.delete('/tenancy');
    expect((await a.call('POST', `/webhooks/${id}/deliveries/${messageId}/retry`)).status).toBe(202);
    await waitFor(() => at('/tenancy').length === 2, { what: "A's retry at the receiver" });
  });

  it('refuses a retry while the endpoint is disabled (409), leaving the message pending', async () => {
    const a = clientFor(() => svc);
    failing.add('/off');
    const { id, messageId } = await firstAttempt(a, '/off');
    const notice = makeEvent('endpoint.disabled', { accountId: a.accountId, subject: id, data: { endpointId: id, reason: 'the endpoint answered 410 Gone' } });
    expect((await svc.endpoints.disable(a.accountId, id, 'the endpoint answered 410 Gone', notice))?.status).toBe('disabled');
    const res = await a.call('POST', `/webhooks/${id}/deliveries/${messageId}/retry`);
    expect([res.status, res.body.code]).toEqual([409, 'webhook_disabled']);
    expect(at('/off')).toHaveLength(1);
  });
});
