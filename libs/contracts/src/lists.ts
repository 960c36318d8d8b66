import type { EventType } from './events.ts';

/*
 * Plain lists with no dependency (no zod, nothing of Node), so the dashboard can bundle them as they are.
 * plans.ts and events.ts re-export them beside their schemas.
 */

export const PLANS = ['starter', 'professional', 'enterprise'] as const;

/** Requests per minute per account, from the specification's Limits table. */
export const PLAN_LIMITS: Readonly<Record<(typeof PLANS)[number], number>> = Object.freeze({
  starter: 100,
  professional: 1_000,
  enterprise: 10_000,
});

export const SCOPES = ['sources:read', 'sources:write', 'analytics:read', 'analytics:write', 'models:read', 'models:write', 'webhooks:read', 'webhooks:write'] as const;

/** The event types a customer can subscribe a webhook to. */
export const PUBLIC_EVENT_TYPES = Object.freeze([
  'source.created',
  'source.ready',
  'source.failed',
  'source.deleted',
  'source.schema_changed',
  'report.completed',
  'report.failed',
  'model.ready',
  'model.failed',
  'prediction.completed',
  'webhook.test',
  'endpoint.disabled',
] as const satisfies readonly EventType[]);
