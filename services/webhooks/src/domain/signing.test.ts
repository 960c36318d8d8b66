import { Webhook } from 'standardwebhooks';
import { newWebhookSecret, secretKeyOf } from './secret.ts';
import { deliveryBody, signedHeaders, signingKeyOf, signPayload } from './signing.ts';

describe('Standard Webhooks signing', () => {
  const secret = newWebhookSecret();
  const body = deliveryBody({ type: 'report.completed', occurredAt: '2025-01-02T03:04:05.000Z', data: { id: 'rpt_1', rowCount: 3 } });
  const now = () => Math.floor(Date.now() / 1000);

  it('makes whsec_ secrets of 32 random bytes', () => {
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(secretKeyOf(secret)).toHaveLength(32);
    expect(newWebhookSecret()).not.toBe(secret);
  });

  it('builds the body as {type, timestamp, data}', () => {
    expect(JSON.parse(body)).toEqual({ type: 'report.completed', timestamp: '2025-01-02T03:04:05.000Z', data: { id: 'rpt_1', rowCount: 3 } });
  });

  it('verifies with the standardwebhooks library', () => {
    const headers = signedHeaders(secret, 'evt_01JCQ3N6W4X8Z5Y7A9B2C4D6E8', now(), body);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('matches the library signature byte for byte', () => {
    const ts = now();
    const expected = new Webhook(secret).sign('evt_x', new Date(ts * 1000), body);
    expect(signPayload(secret, 'evt_x', ts, body)).toBe(expected);
  });

  it('fails for a tampered body', () => {
    const headers = signedHeaders(secret, 'evt_x', now(), body);
    expect(() => new Webhook(secret).verify(body.replace('"rowCount":3', '"rowCount":4'), headers)).toThrow(/signature/i);
  });

  it('fails for a wrong secret', () => {
    const headers = signedHeaders(secret, 'evt_x', now(), body);
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow(/signature/i);
  });

  it('fails for an old timestamp', () => {
    const headers = signedHeaders(secret, 'evt_x', now() - 3600, body);
    expect(() => new Webhook(secret).verify(body, headers)).toThrow(/too old/i);
  });

  it('signs with every secret during a rotation, so either verifies, and a third does not', () => {
    const next = newWebhookSecret();
    const headers = signedHeaders([next, secret], 'evt_rot', now(), body);
    const entries = headers['webhook-signature']!.split(' ');
    expect(entries).toHaveLength(2);
    for (const e of entries) expect(e).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(entries[0]).toBe(signPayload(next, 'evt_rot', Number(headers['webhook-timestamp']), body));
    expect(new Webhook(next).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow(/signature/i);
    expect(() => signedHeaders([], 'evt_rot', now(), body)).toThrow();
  });

  it('signs the same with a key imported once as with the secret itself', () => {
    const ts = now();
    const key = signingKeyOf(secret);
    expect(signPayload(key, 'evt_k', ts, body)).toBe(new Webhook(secret).sign('evt_k', new Date(ts * 1000), body));
    const next = newWebhookSecret();
    expect(signedHeaders([signingKeyOf(next), key], 'evt_k', ts, body)).toEqual(signedHeaders([next, secret], 'evt_k', ts, body));
  });

  it('fails for another message id', () => {
    const headers = { ...signedHeaders(secret, 'evt_x', now(), body), 'webhook-id': 'evt_y' };
    expect(() => new Webhook(secret).verify(body, headers)).toThrow(/signature/i);
  });
});
