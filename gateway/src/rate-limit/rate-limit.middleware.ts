import type { NextFunction, Request, Response } from 'express';
import { AppError } from '@dap/http';
import type { Plan } from '@dap/contracts';
import { clientAddressOf } from '../auth/client-address.ts';
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

/**
 * Counts every authenticated request against its account's plan (anonymous calls to public operations
 * against their client address); a 429 says when to retry.
 */
export function rateLimit(limiter: Limiter, opts: { windowMs: number; limits: Record<Plan, number>; publicPerMinute: number; onDecision?: (d: LimitDecision) => void }) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const p = req.principal!;
    const anonymous = p.kind === 'anonymous';
    const limit = anonymous ? opts.publicPerMinute : opts.limits[p.plan];
    const decision = await limiter.check(anonymous ? `ip:${clientAddressOf(req)}` : p.accountId, limit);
    setRateLimitHeaders(res, decision, opts.windowMs);
    opts.onDecision?.(decision);
    if (decision.allowed) return next();
    const retryAfter = String(Math.max(1, Math.ceil(decision.resetMs / 1000)));
    const detail = anonymous
      ? `this address may make ${limit} unauthenticated requests per minute; retry after ${retryAfter} s`
      : `the ${p.plan} plan allows ${decision.limit} requests per minute; retry after ${retryAfter} s`;
    next(new AppError('quota_exceeded', detail, { headers: { 'Retry-After': retryAfter } }));
  };
}

/** GET /v1/usage, answered by the gateway: the current window against the plan limit. */
export function usageRoute(limiter: Limiter, opts: { windowMs: number; limits: Record<Plan, number> }) {
  return async (req: Request, res: Response): Promise<void> => {
    const p = req.principal!;
    const limit = opts.limits[p.plan];
    const d = await limiter.peek(p.accountId, limit);
    res.json({
      plan: p.plan,
      limit,
      windowSeconds: Math.round(opts.windowMs / 1000),
      used: limit - d.remaining,
      remaining: d.remaining,
      resetSeconds: Math.max(0, Math.ceil(d.resetMs / 1000)),
    });
  };
}
