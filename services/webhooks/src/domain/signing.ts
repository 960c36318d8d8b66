import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { secretKeyOf } from './secret.ts';

/**
 * A `whsec_` secret, or its HMAC key already imported with `signingKeyOf`: importing costs several times the
 * HMAC of a delivery-sized body, so the dispatcher keeps one key per secret.
 */
export type SigningSecret = string | KeyObject;

export function signingKeyOf(secret: string): KeyObject {
  return createSecretKey(secretKeyOf(secret));
}

/** The Standard Webhooks signature: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`. */
export function signPayload(secret: SigningSecret, msgId: string, timestampSec: number, body: string): string {
  const key = typeof secret === 'string' ? signingKeyOf(secret) : secret;
  const mac = createHmac('sha256', key).update(`${msgId}.${timestampSec}.`, 'utf8').update(body, 'utf8').digest('base64');
  return `v1,${mac}`;
}

/**
 * The three Standard Webhooks headers. With several secrets (during a rotation's overlap) the signature
 * header lists one `v1,…` entry per secret, space-separated, so a receiver holding either secret verifies.
 */
export function signedHeaders(secrets: SigningSecret | readonly SigningSecret[], msgId: string, timestampSec: number, body: string): Record<string, string> {
  const list = Array.isArray(secrets) ? (secrets as readonly SigningSecret[]) : [secrets as SigningSecret];
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
