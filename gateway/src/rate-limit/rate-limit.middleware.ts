import type { NextFunction, Request, Response } from 'express';
import { PLAN_LIMITS } from '@dap/contracts';
import { AppError } from '@dap/http';
import type { Limiter, LimitDecision } from './sliding-window.limiter.ts';

export function setRateLimitHeaders(res: Response, d: LimitDecision, windowMs: number): void {
  const resetSec = Math.max(0, Math.ceil(d.resetMs / 1000));
  const windowSec = Math.round(windowMs / 1000);
  res.setHeader('RateLimit-Policy', `"per-account";q=${d.limit};w=${windowSec}`);
  res.setHeader('RateLimit', `"per-account";r=${d.remaining};t=${resetSec}`);
  res.setHeader('X-RateLimit-Limit', String(d.limit));
  res.setHeader('X-RateLimit-Remaining', String(d.remaining));
  res.setHeader('X-RateLimit-Reset', String(Math.ceil((Date.now() + d.resetMs) / 1000)));
}

/** Counts every authenticated request against its account's plan; a 429 says when to retry. */
export function rateLimit(limiter: Limiter, windowMs: number) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const key = req.apiKey!;
    const decision = await limiter.check(key.accountId, PLAN_LIMITS[key.plan]);
    setRateLimitHeaders(res, decision, windowMs);
    if (decision.allowed) return next();
    const retryAfter = String(Math.max(1, Math.ceil(decision.resetMs / 1000)));
    next(
      new AppError('quota_exceeded', `the ${key.plan} plan allows ${decision.limit} requests per minute; retry after ${retryAfter} s`, {
        headers: { 'Retry-After': retryAfter },
      }),
    );
  };
}
