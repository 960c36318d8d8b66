import { createHmac } from 'node:crypto';
import { secretKeyOf } from '../domain/secret.ts';

/** The Standard Webhooks signature: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`. */
export function signPayload(secret: string, msgId: string, timestampSec: number, body: string): string {
  const mac = createHmac('sha256', secretKeyOf(secret)).update(`${msgId}.${timestampSec}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

/**
 * The three Standard Webhooks headers. With several secrets (during a rotation's overlap) the signature
 * header lists one `v1,…` entry per secret, space-separated, so a receiver holding either secret verifies.
 */
export function signedHeaders(secrets: string | readonly string[], msgId: string, timestampSec: number, body: string): Record<string, string> {
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  if (!list.length) throw new Error('at least one signing secret is required');
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestampSec),
    'webhook-signature': list.map((s) => signPayload(s, msgId, timestampSec, body)).join(' '),
  };
}

/** The delivered body: `{type, timestamp, data}`, where timestamp is when the event occurred. */
export function deliveryBody(event: { type: string; occurredAt: string; data: unknown }): string {
  return JSON.stringify({ type: event.type, timestamp: event.occurredAt, data: event.data });
}
