import type { NextFunction, Request, Response } from 'express';
import { AppError } from '@dap/http';
import type { Logger } from '@dap/logger';
import type { KeyVerifier, VerifiedKey } from './key-verifier.ts';

declare module 'express-serve-static-core' {
  interface Request {
    apiKey?: VerifiedKey;
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
};

/** Bearer API key → the verified key on the request, or a 401 with WWW-Authenticate. */
export function authenticate(verifier: KeyVerifier, logger: Logger) {
  return async (req: Request, _res: Response, next: NextFunction): Promise<void> => {
    const header = req.header('authorization');
    if (!header) return next(unauthorized('an API key is required: send Authorization: Bearer <API_KEY>'));
    const match = /^Bearer ([^\s]+)$/i.exec(header.trim());
    if (!match) return next(unauthorized('the Authorization header must be "Bearer <API_KEY>"', 'invalid_request'));
    try {
      const outcome = await verifier.verify(match[1]!);
      if (!outcome.ok) return next(unauthorized(REASONS[outcome.reason] ?? 'the API key is not valid', 'invalid_token'));
      req.apiKey = outcome.key;
      next();
    } catch (err) {
      logger.error({ err, requestId: req.requestId }, 'key verification unavailable');
      next(new AppError('unavailable', 'authentication is temporarily unavailable; retry shortly', { headers: { 'Retry-After': '2' } }));
    }
  };
}
