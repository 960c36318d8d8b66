import { readFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook, WebhookVerificationError, type WebhookVerificationFailure } from './webhooks.ts';

/** Deliveries the webhooks service sent (services/webhooks/test/sdk-verifier.int.test.ts captured them). */
const captured = JSON.parse(readFileSync(new URL('./fixtures/captured-deliveries.json', import.meta.url), 'utf8')) as {
  secrets: { first: string; second: string };
  deliveries: { headers: Record<string, string>; body: string }[];
};
const sentAt = (d: { headers: Record<string, string> }) => Number(d.headers['webhook-timestamp']) * 1000;

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const OTHER = 'whsec_dGhlIG90aGVyIHNlY3JldCBvZiB0aGlzIHRlc3Q=';
const NOW = Date.UTC(2026, 10, 25, 12, 0, 0);
const body = JSON.stringify({ type: 'report.completed', timestamp: '2026-11-25T11:59:59.000Z', data: { id: 'rpt_1', sourceId: 'src_1', rowCount: 3, durationMs: 12 } });

function signed(payload: string, secrets: string[], at = NOW, id = 'evt_01TEST') {
  const signature = secrets.map((s) => new Webhook(s).sign(id, new Date(at), payload)).join(' ');
  return { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at / 1000)), 'webhook-signature': signature };
}

const failure = (fn: () => unknown): WebhookVerificationFailure | null => {
  try {
    fn();
    return null;
  } catch (err) {
    if (err instanceof WebhookVerificationError) return err.reason;
    throw err;
  }
};

describe('verifyWebhook on deliveries captured from the service', () => {
  it('verifies each, typed by the catalog, with the secret that signed it', () => {
    const [ready, ...afterRotation] = captured.deliveries;
    const event = verifyWebhook(ready!.body, ready!.headers, { secrets: captured.secrets.first, now: () => sentAt(ready!) });
    expect(event).toMatchObject({ known: true, type: 'source.ready', id: ready!.headers['webhook-id'] });
    for (const d of afterRotation) {
      for (const secret of [captured.secrets.first, captured.secrets.second]) {
        expect(verifyWebhook(d.body, d.headers, { secrets: [secret], now: () => sentAt(d) }).known).toBe(true);
      }
    }
    expect(failure(() => verifyWebhook(ready!.body, ready!.headers, { secrets: captured.secrets.second, now: () => sentAt(ready!) }))).toBe('bad_signature');
  });

  it('refuses a captured delivery replayed after the tolerance', () => {
    const d = captured.deliveries[0]!;
    expect(failure(() => verifyWebhook(d.body, d.headers, { secrets: captured.secrets.first, now: () => sentAt(d) + 301_000 }))).toBe('timestamp_too_old');
    expect(failure(() => verifyWebhook(d.body, d.headers, { secrets: captured.secrets.first, now: () => sentAt(d) + 299_000 }))).toBeNull();
  });
});

describe('verifyWebhook', () => {
  it('returns the typed event for a good signature (Buffer body, Headers object)', () => {
    const event = verifyWebhook(Buffer.from(body), new Headers(signed(body, [SECRET])), { secrets: SECRET, now: () => NOW });
    expect(event).toEqual({
      id: 'evt_01TEST',
      known: true,
      type: 'report.completed',
      timestamp: '2026-11-25T11:59:59.000Z',
      data: { id: 'rpt_1', sourceId: 'src_1', rowCount: 3, durationMs: 12 },
    });
  });

  it('accepts any of several secrets, and any of several signatures', () => {
    expect(verifyWebhook(body, signed(body, [OTHER]), { secrets: [SECRET, OTHER], now: () => NOW }).known).toBe(true);
    expect(verifyWebhook(body, signed(body, [OTHER, SECRET]), { secrets: SECRET, now: () => NOW }).known).toBe(true);
    expect(failure(() => verifyWebhook(body, signed(body, [OTHER]), { secrets: SECRET, now: () => NOW }))).toBe('bad_signature');
    // What a receiver logs: the class name, the reason and the message.
    expect(() => verifyWebhook(body, signed(body, [OTHER]), { secrets: SECRET, now: () => NOW })).toThrow(
      expect.objectContaining({ name: 'WebhookVerificationError', reason: 'bad_signature', message: 'no signature matches the secrets given' }),
    );
  });

  it('refuses a body changed after signing, or signed for another message id', () => {
    const headers = signed(body, [SECRET]);
    expect(failure(() => verifyWebhook(body.replace('"rowCount":3', '"rowCount":4'), headers, { secrets: SECRET, now: () => NOW }))).toBe('bad_signature');
    expect(failure(() => verifyWebhook(body, { ...headers, 'webhook-id': 'evt_other' }, { secrets: SECRET, now: () => NOW }))).toBe('bad_signature');
  });

  it('holds the timestamp to the tolerance, 5 minutes by default, either way', () => {
    const headers = signed(body, [SECRET]);
    expect(failure(() => verifyWebhook(body, headers, { secrets: SECRET, now: () => NOW + 300_000 }))).toBeNull();
    expect(failure(() => verifyWebhook(body, headers, { secrets: SECRET, now: () => NOW + 301_000 }))).toBe('timestamp_too_old');
    expect(failure(() => verifyWebhook(body, headers, { secrets: SECRET, now: () => NOW - 301_000 }))).toBe('timestamp_too_new');
    expect(failure(() => verifyWebhook(body, headers, { secrets: SECRET, now: () => NOW + 61_000, toleranceSeconds: 60 }))).toBe('timestamp_too_old');
  });

  it('names what is missing or malformed', () => {
    const headers = signed(body, [SECRET]);
    const { 'webhook-signature': _s, ...noSignature } = headers;
    expect(failure(() => verifyWebhook(body, noSignature, { secrets: SECRET, now: () => NOW }))).toBe('missing_header');
    expect(failure(() => verifyWebhook(body, { ...headers, 'webhook-timestamp': 'soon' }, { secrets: SECRET, now: () => NOW }))).toBe('bad_timestamp');
    expect(failure(() => verifyWebhook(body, headers, { secrets: 'whsec_not base64!', now: () => NOW }))).toBe('bad_secret');
    expect(failure(() => verifyWebhook(body, headers, { secrets: [], now: () => NOW }))).toBe('bad_secret');
  });

  it('refuses an authentic body that breaks the catalog, and passes on an event type newer than the SDK', () => {
    const broken = JSON.stringify({ type: 'report.completed', timestamp: 't', data: { id: 'rpt_1' } });
    expect(failure(() => verifyWebhook(broken, signed(broken, [SECRET]), { secrets: SECRET, now: () => NOW }))).toBe('bad_payload');
    const newer = JSON.stringify({ type: 'dataset.archived', timestamp: '2027-01-01T00:00:00.000Z', data: { id: 'x' } });
    expect(verifyWebhook(newer, signed(newer, [SECRET]), { secrets: SECRET, now: () => NOW })).toEqual({
      id: 'evt_01TEST',
      known: false,
      type: 'dataset.archived',
      timestamp: '2027-01-01T00:00:00.000Z',
      data: { id: 'x' },
    });
  });
});
