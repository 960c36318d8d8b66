import { timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { CSRF_HEADER, keyHint, SCOPES, SESSION_COOKIE, type ApiOperation, type Plan, type Scope } from '@dap/contracts';
import { AppError } from '@dap/http';
import type { Logger } from '@dap/logger';
import type { AuthFailureLimiter } from './auth-failure.limiter.ts';
import { clientAddressOf } from './client-address.ts';
import type { KeyVerifier } from './key-verifier.ts';
import type { SessionVerifier } from './session-verifier.ts';

/** Who is calling, however they proved it. */
export interface Principal {
  kind: 'key' | 'session' | 'anonymous';
  accountId: string;
  plan: Plan;
  scopes: Scope[];
  keyId?: string;
  /** The key prefix and its last four characters (as the key list shows them), for the usage counts. */
  keyHint?: string;
  sessionId?: string;
  userId?: string;
}

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
    operation?: ApiOperation | null;
  }
}

const unauthorized = (detail: string, error?: string) =>
  new AppError('unauthorized', detail, {
    headers: { 'WWW-Authenticate': error ? `Bearer realm="dap", error="${error}"` : 'Bearer realm="dap"' },
  });

const REASONS: Record<string, string> = {
  malformed: 'the API key is not a valid key',
  unknown: 'the API key is not valid',
  revoked: 'the API key has been revoked',
  expired: 'the API key has expired',
  replaced: 'the API key was replaced by a roll and its grace period has ended; use the new key',
};

export function cookieValue(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

function sameToken(a: string | undefined, b: string): boolean {
  if (!a) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A Bearer API key or a dashboard session cookie (with its CSRF token on writes) → the request's principal.
 * Public operations pass with an anonymous principal. Failures count against the client address
 * (clientAddressOf), and an address past the limit gets 429 for its unauthenticated calls and its failures;
 * a valid key or session is never refused for its address, which it may share with an attacker (a NAT, an
 * office, a proxy TRUST_PROXY does not name).
 */
export function authenticate(deps: { keys: KeyVerifier; sessions: SessionVerifier; failures: AuthFailureLimiter; logger: Logger }) {
  return async (req: Request, _res: Response, next: NextFunction): Promise<void> => {
    // Only failures and unauthenticated calls count against the address: a valid key never needs it.
    let address: string | undefined;
    const addressOf = () => (address ??= clientAddressOf(req));
    const blocked = async (): Promise<AppError | null> => {
      const retryAfter = await deps.failures.blocked(addressOf());
      return retryAfter === null
        ? null
        : new AppError('quota_exceeded', 'too many failed authentications from this address; wait before retrying', { headers: { 'Retry-After': String(retryAfter) } });
    };
    const fail = async (err: AppError) => {
      const refused = await blocked();
      await deps.failures.recordFailure(addressOf());
      next(refused ?? err);
    };
    try {
      if (req.operation?.auth === 'public') {
        const refused = await blocked();
        if (refused) return next(refused);
        req.principal = { kind: 'anonymous', accountId: '', plan: 'starter', scopes: [] };
        return next();
      }
      const header = req.header('authorization');
      if (header) {
        const match = /^Bearer ([^\s]+)$/i.exec(header.trim());
        if (!match) return fail(unauthorized('the Authorization header must be "Bearer <API_KEY>"', 'invalid_request'));
        const outcome = await deps.keys.verify(match[1]!);
        if (!outcome.ok) return fail(unauthorized(REASONS[outcome.reason] ?? 'the API key is not valid', 'invalid_token'));
        if (req.operation?.auth === 'session') return next(new AppError('forbidden', 'this operation needs a dashboard session, not an API key'));
        const k = outcome.key;
        req.principal = { kind: 'key', accountId: k.accountId, plan: k.plan, scopes: k.scopes, keyId: k.keyId, keyHint: keyHint(match[1]!) };
        return next();
      }
      const cookie = cookieValue(req, SESSION_COOKIE);
      if (cookie) {
        const session = await deps.sessions.verify(cookie);
        if (!session) return fail(unauthorized('the session has ended; log in again'));
        if (!SAFE_METHODS.has(req.method) && !sameToken(req.header(CSRF_HEADER), session.csrfToken)) {
          return next(new AppError('forbidden', `a dashboard request that changes state must carry the ${CSRF_HEADER} header from GET /v1/auth/session`));
        }
        // A password check is guessing ground too: an address past the failure limit may not try more.
        if (req.operation?.checksPassword) {
          const refused = await blocked();
          if (refused) return next(refused);
        }
        req.principal = { kind: 'session', accountId: session.accountId, plan: session.plan, scopes: [...SCOPES], sessionId: session.sessionId, userId: session.userId };
        return next();
      }
      return next((await blocked()) ?? unauthorized('an API key is required: send Authorization: Bearer <API_KEY>'));
    } catch (err) {
      deps.logger.error({ err, requestId: req.requestId }, 'authentication unavailable');
      next(new AppError('unavailable', 'authentication is temporarily unavailable; retry shortly', { headers: { 'Retry-After': '2' } }));
    }
  };
}
