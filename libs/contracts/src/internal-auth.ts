import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { planSchema, scopeSchema } from './plans.ts';

/**
 * The gateway forwards the caller's identity to services in two headers: a base64url JSON context and an
 * HMAC over it with the internal secret. A service trusts nothing else, so bypassing the gateway gets 401.
 */
export const INTERNAL_CONTEXT_HEADER = 'x-dap-context';
export const INTERNAL_SIGNATURE_HEADER = 'x-dap-signature';
const MAX_SKEW_MS = 5 * 60_000;

export const callerContextSchema = z.object({
  /** Empty only for a public operation (sign-up, login), which has no caller yet. */
  accountId: z.string(),
  plan: planSchema,
  scopes: z.array(scopeSchema),
  keyId: z.string().optional(),
  /** Set when the caller is a dashboard session rather than an API key. */
  sessionId: z.string().optional(),
  userId: z.string().optional(),
  requestId: z.string(),
  issuedAt: z.number().int(),
});
export type CallerContext = z.infer<typeof callerContextSchema>;

function hmac(secret: string, payload: string): string {
  return createHmac('sha256', secret).update(payload).digest('base64url');
}

export function signCallerContext(secret: string, ctx: CallerContext): { context: string; signature: string } {
  const context = Buffer.from(JSON.stringify(ctx)).toString('base64url');
  return { context, signature: hmac(secret, context) };
}

export function verifyCallerContext(secret: string, context: string | undefined, signature: string | undefined, now = Date.now()): CallerContext | null {
  if (!context || !signature) return null;
  const expected = Buffer.from(hmac(secret, context));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
  try {
    const parsed = callerContextSchema.safeParse(JSON.parse(Buffer.from(context, 'base64url').toString('utf8')));
    if (!parsed.success || Math.abs(now - parsed.data.issuedAt) > MAX_SKEW_MS) return null;
    return parsed.data;
  } catch {
    return null;
  }
}

/** Service-to-service calls that carry no customer (the gateway asking accounts to verify a key). */
export const INTERNAL_TOKEN_HEADER = 'x-dap-internal-token';

export function internalServiceToken(secret: string): string {
  return hmac(secret, 'dap-internal-service-call-v1');
}

export function isInternalServiceToken(secret: string, token: string | undefined): boolean {
  if (!token) return false;
  const expected = Buffer.from(internalServiceToken(secret));
  const given = Buffer.from(token);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** What accounts answers the gateway's internal key verification. */
export interface VerifiedKey {
  keyId: string;
  accountId: string;
  plan: z.infer<typeof planSchema>;
  scopes: z.infer<typeof scopeSchema>[];
  expiresAt: string | null;
  /** The key was replaced by a roll: `expiresAt` is the end of its grace period. */
  replaced?: boolean;
}
/** `replaced`: a rolled key after its grace period (an `expired` key reached the expiry it was created with). */
export type KeyVerifyOutcome = { ok: true; key: VerifiedKey } | { ok: false; reason: 'unknown' | 'revoked' | 'expired' | 'replaced' };

/** Hashes one call to accounts' internal `POST /internal/keys/verify-many` may carry (the gateway's batched lookups and refreshes). */
export const KEY_VERIFY_BATCH_MAX = 500;

/** What accounts answers the gateway's internal session verification. */
export interface VerifiedSession {
  sessionId: string;
  userId: string;
  accountId: string;
  plan: z.infer<typeof planSchema>;
  csrfToken: string;
  expiresAt: string;
}
