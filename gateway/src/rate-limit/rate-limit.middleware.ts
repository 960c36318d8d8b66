import type { NextFunction, Request, Response } from 'express';
import { AppError } from '@dap/http';
import type { Plan } from '@dap/contracts';
import { clientAddressOf } from '../auth/client-address.ts';
import type { Limiter, LimitDecision } from './sliding-window.limiter.ts';

export function setRateLimitHeaders(res: Response, d: LimitDecision, windowMs: number, policy = 'per-account'): void {
  const resetSec = Math.max(0, Math.ceil(d.resetMs / 1000));
  const windowSec = Math.round(windowMs / 1000);
  res.setHeader('RateLimit-Policy', `"${policy}";q=${d.limit};w=${windowSec}`);
  res.setHeader('RateLimit', `"${policy}";r=${d.remaining};t=${resetSec}`);
  res.setHeader('X-RateLimit-Limit', String(d.limit));
  res.setHeader('X-RateLimit-Remaining', String(d.remaining));
  res.setHeader('X-RateLimit-Reset', String(Math.ceil((Date.now() + d.resetMs) / 1000)));
}

/** The bucket a request counts in, its limit and the policy name its RateLimit headers carry. */
function bucketOf(req: Request, opts: { limits: Record<Plan, number>; publicPerMinute: number; dashboardPerMinute: number }) {
  const p = req.principal!;
  if (p.kind === 'anonymous') return { key: `ip:${clientAddressOf(req)}`, limit: opts.publicPerMinute, policy: 'per-address' };
  // The dashboard's own calls (session cookie) have a bucket of their own per account, so browsing the
  // dashboard never spends the plan's API limit that the account's keys rely on.
  if (p.kind === 'session') return { key: `dashboard:${p.accountId}`, limit: opts.dashboardPerMinute, policy: 'dashboard' };
  return { key: p.accountId, limit: opts.limits[p.plan], policy: 'per-account' };
}

/**
 * Counts every API-key request against its account's plan, the dashboard's session requests against the
 * account's dashboard bucket, and anonymous calls to public operations against their client address; a
 * 429 says when to retry.
 */
export function rateLimit(
  limiter: Limiter,
  opts: { windowMs: number; limits: Record<Plan, number>; publicPerMinute: number; dashboardPerMinute: number; onDecision?: (d: LimitDecision) => void },
) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const p = req.principal!;
    const bucket = bucketOf(req, opts);
    const decision = await limiter.check(bucket.key, bucket.limit);
    setRateLimitHeaders(res, decision, opts.windowMs, bucket.policy);
    opts.onDecision?.(decision);
    if (decision.allowed) return next();
    const retryAfter = String(Math.max(1, Math.ceil(decision.resetMs / 1000)));
    const detail =
      p.kind === 'anonymous'
        ? `this address may make ${bucket.limit} unauthenticated requests per minute; retry after ${retryAfter} s`
        : p.kind === 'session'
          ? `the dashboard may make ${bucket.limit} requests per minute for this account (its API keys' limit is separate); retry after ${retryAfter} s`
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
