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

/** What each public event means: the webhook event catalog (the OpenAPI document's `webhooks`, /docs and the dashboard). */
export const PUBLIC_EVENT_DESCRIPTIONS: Readonly<Record<(typeof PUBLIC_EVENT_TYPES)[number], string>> = Object.freeze({
  'source.created': 'A data source was connected; its first sync starts now.',
  'source.ready':
    'A source finished syncing: its rows and schema can be queried and trained on. `sync` says how it pulled (full or incremental), the rows it read and the rows of those it wrote.',
  'source.failed': 'A source could not be synced; `error` says why, and the previous data (if any) stays queryable.',
  'source.schema_changed':
    "A sync found added, removed or retyped columns (`added`, `removed`, `retyped`); `applied` says whether the source's `policy` let the new schema through, and under quarantine `rows` counts what was loaded and set aside.",
  'source.deleted': 'A source was deleted, with its data.',
  'report.completed': 'A query finished and its report holds the result.',
  'report.failed': 'A query failed; `error` says why.',
  'model.ready': 'A model finished training (or was uploaded) and can predict.',
  'model.failed': 'A model could not be trained; `error` says why.',
  'prediction.completed': 'A model answered a prediction request.',
  'webhook.test': 'A test event, sent by "Send test event" in the dashboard or POST /webhooks/{id}/test.',
  'endpoint.disabled': "One of the account's endpoints was disabled (it answered 410 Gone, or kept failing); sent to the other endpoints subscribed to it.",
});

/** A webhook endpoint's content filter: its comparison operators, and nesting of and/or/not and comparisons allowed. */
export const WEBHOOK_FILTER_OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'exists'] as const;
export const MAX_WEBHOOK_FILTER_DEPTH = 5;
export const MAX_WEBHOOK_FILTER_CONDITIONS = 50;

/** Requests per second a webhook endpoint may be limited to, across every instance of the service. */
export const MAX_WEBHOOK_RATE_LIMIT_PER_SECOND = 1000;
