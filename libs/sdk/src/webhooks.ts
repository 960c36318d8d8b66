import { createHmac, timingSafeEqual } from 'node:crypto';
import { webhookPayloadSchema, type WebhookPayload } from '@dap/contracts';
import { ReasonedError } from '@dap/errors';

/**
 * Verifies a webhook delivery as a receiver gets it: the Standard Webhooks signature against one or more
 * secrets (a rotation's old and new), the timestamp within a tolerance, and the body against the event
 * catalog, returning the event typed by its `type`. Written here rather than taken from the
 * `standardwebhooks` package, whose tolerance (5 minutes) and clock are fixed and which takes one secret.
 */

export const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

export type WebhookVerificationFailure = 'missing_header' | 'bad_secret' | 'bad_timestamp' | 'timestamp_too_old' | 'timestamp_too_new' | 'bad_signature' | 'bad_payload';

export class WebhookVerificationError extends ReasonedError<WebhookVerificationFailure> {
  override name = 'WebhookVerificationError';
}

/** An event of a type this SDK knows, typed and validated by the catalog. */
export type VerifiedWebhookEvent = WebhookPayload & { id: string; known: true };
/** An authentic event of a type newer than this SDK: its body is passed on as it came. */
export interface UnknownWebhookEvent {
  id: string;
  known: false;
  type: string;
  timestamp: string;
  data: unknown;
}

export interface VerifyWebhookOptions {
  /** The endpoint's `whsec_…` secrets: during a rotation, the new one and the old one. */
  secrets: string | readonly string[];
  /** How far the `webhook-timestamp` may be from now, either way; default 300 s. */
  toleranceSeconds?: number;
  /** The clock, in ms since the epoch (tests, or a receiver replaying stored deliveries). */
  now?: () => number;
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}

function keyOf(secret: string): Buffer {
  const base64 = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  const key = Buffer.from(base64, 'base64');
  if (!key.length || key.toString('base64').replace(/=+$/, '') !== base64.replace(/=+$/, '')) {
    throw new WebhookVerificationError('bad_secret', 'a secret is not a whsec_ secret (base64 after the prefix)');
  }
  return key;
}

/**
 * Checks one delivery. `payload` is the raw request body exactly as received (before any JSON parsing: a
 * re-serialised body does not verify). Throws `WebhookVerificationError` when it is not authentic, too old
 * or too new, or does not match the event catalog.
 */
export function verifyWebhook(payload: string | Buffer, headers: HeaderSource, opts: VerifyWebhookOptions): VerifiedWebhookEvent | UnknownWebhookEvent {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  for (const [name, value] of [
    ['webhook-id', id],
    ['webhook-timestamp', timestamp],
    ['webhook-signature', signatures],
  ] as const) {
    if (!value) throw new WebhookVerificationError('missing_header', `the ${name} header is missing`);
  }
  if (!/^\d{1,12}$/.test(timestamp!)) throw new WebhookVerificationError('bad_timestamp', 'webhook-timestamp is not a number of seconds');
  const nowSec = Math.floor((opts.now ?? Date.now)() / 1000);
  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const sentAt = Number(timestamp);
  if (nowSec - sentAt > tolerance) throw new WebhookVerificationError('timestamp_too_old', `the delivery was signed ${nowSec - sentAt} s ago, more than ${tolerance} s`);
  if (sentAt - nowSec > tolerance) throw new WebhookVerificationError('timestamp_too_new', `the delivery is signed ${sentAt - nowSec} s in the future, more than ${tolerance} s`);

  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const secrets = typeof opts.secrets === 'string' ? [opts.secrets] : opts.secrets;
  if (!secrets.length) throw new WebhookVerificationError('bad_secret', 'no secret to verify with');
  const offered = signatures!
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => Buffer.from(s.slice(3), 'base64'));
  const authentic = secrets.some((secret) => {
    const expected = createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.`, 'utf8').update(body).digest();
    return offered.some((sig) => sig.length === expected.length && timingSafeEqual(sig, expected));
  });
  if (!authentic) throw new WebhookVerificationError('bad_signature', 'no signature matches the secrets given');

  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('bad_payload', 'the body is not JSON');
  }
  const parsed = webhookPayloadSchema.safeParse(json);
  if (parsed.success) return { ...parsed.data, id: id!, known: true };
  const shape = json as { type?: unknown; timestamp?: unknown; data?: unknown } | null;
  const knownType = webhookPayloadSchema.options.some((o) => o.shape.type.value === shape?.type);
  if (!knownType && shape && typeof shape.type === 'string' && typeof shape.timestamp === 'string') {
    return { id: id!, known: false, type: shape.type, timestamp: shape.timestamp, data: shape.data };
  }
  throw new WebhookVerificationError(
    'bad_payload',
    `the body does not match the event catalog: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
  );
}
