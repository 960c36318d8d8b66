import { z } from 'zod';

export const PLANS = ['starter', 'professional', 'enterprise'] as const;
export const planSchema = z.enum(PLANS);
export type Plan = z.infer<typeof planSchema>;

/** Requests per minute per account, from the specification's Limits table. */
export const PLAN_LIMITS: Readonly<Record<Plan, number>> = Object.freeze({
  starter: 100,
  professional: 1_000,
  enterprise: 10_000,
});

export const SCOPES = [
  'sources:read',
  'sources:write',
  'analytics:read',
  'analytics:write',
  'models:read',
  'models:write',
  'webhooks:read',
  'webhooks:write',
] as const;
export const scopeSchema = z.enum(SCOPES);
export type Scope = z.infer<typeof scopeSchema>;
