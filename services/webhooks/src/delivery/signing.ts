import { createHmac } from 'node:crypto';
import { secretKeyOf } from '../domain/secret.ts';

/** The Standard Webhooks signature: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`. */
export function signPayload(secret: string, msgId: string, timestampSec: number, body: string): string {
  const mac = createHmac('sha256', secretKeyOf(secret)).update(`${msgId}.${timestampSec}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

export function signedHeaders(secret: string, msgId: string, timestampSec: number, body: string): Record<string, string> {
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestampSec),
    'webhook-signature': signPayload(secret, msgId, timestampSec, body),
  };
}

/** The delivered body: `{type, timestamp, data}`, where timestamp is when the event occurred. */
export function deliveryBody(event: { type: string; occurredAt: string; data: unknown }): string {
  return JSON.stringify({ type: event.type, timestamp: event.occurredAt, data: event.data });
}
