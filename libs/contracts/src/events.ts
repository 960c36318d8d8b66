import { z } from 'zod';
import { newId } from './ids.ts';
import { PUBLIC_EVENT_TYPES } from './lists.ts';

export { PUBLIC_EVENT_DESCRIPTIONS, PUBLIC_EVENT_TYPES } from './lists.ts';

/**
 * One topic per producing service, the message key always the account id; the webhooks service's delivery
 * outcomes (delivery.completed, one per delivery) have a topic of their own, so that its delivery consumer,
 * which reads webhooks.events for webhook.test, never fetches its own output.
 */
export const TOPICS = Object.freeze({
  accounts: 'accounts.events',
  sources: 'sources.events',
  analytics: 'analytics.events',
  models: 'models.events',
  webhooks: 'webhooks.events',
  deliveries: 'webhooks.deliveries',
  gateway: 'gateway.events',
} as const);
export type Topic = (typeof TOPICS)[keyof typeof TOPICS];
export const ALL_TOPICS: readonly Topic[] = Object.freeze(Object.values(TOPICS));

const columnSchema = z.object({ name: z.string(), type: z.string() });
const traceCarrierSchema = z.object({ traceparent: z.string().max(55), tracestate: z.string().max(512).optional() });

const envelope = <T extends string, D extends z.ZodType>(type: T, data: D) =>
  z.object({
    id: z.string(),
    type: z.literal(type),
    version: z.literal(1),
    accountId: z.string(),
    subject: z.string(),
    occurredAt: z.string(),
    requestId: z.string().nullable(),
    data,
    /**
     * The trace the event belongs to (W3C Trace Context), kept with it in the outbox. Not part of the message
     * body: the producer sends it as the `traceparent`/`tracestate` headers, and consumers read it from there.
     */
    trace: traceCarrierSchema.optional(),
  });

/** Version 1 of every event. A breaking change adds a new version beside these; an old one is never edited. */
export const SourceCreated = envelope('source.created', z.object({ id: z.string(), name: z.string(), type: z.string() }));
/**
 * `sync` (added later, so optional): how the sync pulled (full or incremental), the rows it read from the
 * origin and the rows of those written into the data (new rows and new versions of rows); `rowCount` is the
 * data's total after it.
 */
export const SourceReady = envelope(
  'source.ready',
  z.object({
    id: z.string(),
    name: z.string(),
    type: z.string(),
    rowCount: z.number(),
    schema: z.array(columnSchema),
    sync: z.object({ mode: z.enum(['full', 'incremental']), rowsPulled: z.number(), rowsMerged: z.number() }).optional(),
  }),
);
/**
 * `kept`: the last good data the source stays ready on after this failed re-sync (absent when it has none), so
 * a consumer's state does not depend on having seen the earlier `source.ready`.
 */
export const SourceFailed = envelope(
  'source.failed',
  z.object({ id: z.string(), name: z.string(), error: z.string(), kept: z.object({ rowCount: z.number(), schema: z.array(columnSchema) }).optional() }),
);
export const SourceDeleted = envelope('source.deleted', z.object({ id: z.string() }));
/**
 * A sync found the source's columns changed from the data it had: added, removed, or with another type.
 * `applied`: the new data (and schema) was published (policy `evolve`); false when the policy `freeze`
 * refused it and the source kept its old data.
 */
export const SourceSchemaChanged = envelope(
  'source.schema_changed',
  z.object({
    id: z.string(),
    name: z.string(),
    policy: z.string(),
    applied: z.boolean(),
    added: z.array(columnSchema),
    removed: z.array(columnSchema),
    retyped: z.array(z.object({ name: z.string(), from: z.string(), to: z.string() })),
    /** Under quarantine: the rows read, of which `loaded` were published and `quarantined` set aside. */
    rows: z.object({ read: z.number().int(), loaded: z.number().int(), quarantined: z.number().int() }).optional(),
  }),
);
export const ReportCompleted = envelope('report.completed', z.object({ id: z.string(), sourceId: z.string(), rowCount: z.number(), durationMs: z.number() }));
export const ReportFailed = envelope('report.failed', z.object({ id: z.string(), sourceId: z.string(), error: z.string() }));
export const ModelReady = envelope('model.ready', z.object({ id: z.string(), name: z.string(), type: z.string() }));
export const ModelFailed = envelope('model.failed', z.object({ id: z.string(), name: z.string(), error: z.string() }));
export const PredictionCompleted = envelope('prediction.completed', z.object({ id: z.string(), modelId: z.string(), count: z.number().int(), latencyMs: z.number() }));
export const WebhookTest = envelope('webhook.test', z.object({ endpointId: z.string(), message: z.string() }));
export const EndpointDisabled = envelope('endpoint.disabled', z.object({ endpointId: z.string(), reason: z.string() }));
// Internal events: consumed by our own services, never delivered to customers.
export const ApiKeyCreated = envelope('apikey.created', z.object({ keyId: z.string() }));
export const ApiKeyRevoked = envelope('apikey.revoked', z.object({ keyId: z.string() }));
/** A key's expiry changed (a roll's grace period): caches must drop it. */
export const ApiKeyUpdated = envelope('apikey.updated', z.object({ keyId: z.string() }));
export const AccountPlanChanged = envelope('account.plan_changed', z.object({ plan: z.string() }));
export const WebhookCreated = envelope('webhook.created', z.object({ id: z.string(), url: z.string() }));
export const WebhookDeleted = envelope('webhook.deleted', z.object({ id: z.string() }));
const callCount = z.number().int().nonnegative();
/** Who made the counted calls: an API key, the dashboard (a session), or the overflow of a full flush. */
export const USAGE_CALLERS = ['key', 'dashboard', 'other'] as const;
export type UsageCaller = (typeof USAGE_CALLERS)[number];
/**
 * One line of a usage window: the calls of one caller to one operation, by outcome. `other` (caller and
 * operation) holds the account's calls past the gateway's cap on distinct lines per flush, so none is lost.
 */
export const usageCallsSchema = z.object({
  caller: z.enum(USAGE_CALLERS),
  /** The key's id and hint (prefix and last four characters, never the secret), when `caller` is `key`. */
  keyId: z.string().optional(),
  keyHint: z.string().optional(),
  operationId: z.string(),
  success: callCount,
  clientErrors: callCount.describe('4xx answers other than 429'),
  serverErrors: callCount,
  rateLimited: callCount.describe('429 answers'),
});
export type UsageCalls = z.infer<typeof usageCallsSchema>;
/**
 * The gateway's per-account request counts, aggregated over a short window. `requests` and `rejected` (429s)
 * count the API keys' calls (they feed usage per day); `calls`, added later and absent from older events,
 * breaks every call down by caller (the dashboard included), operation and outcome.
 */
export const UsageRecorded = envelope(
  'usage.recorded',
  z.object({
    windowStart: z.string(),
    windowEnd: z.string(),
    requests: z.number().int().nonnegative(),
    rejected: z.number().int().nonnegative(),
    calls: z.array(usageCallsSchema).optional(),
  }),
);
/** One webhook message reached a final state (feeds the deliveries count). */
export const DeliveryCompleted = envelope(
  'delivery.completed',
  z.object({ endpointId: z.string(), eventId: z.string(), outcome: z.enum(['succeeded', 'failed']), attempts: z.number().int() }),
);

export const domainEventSchema = z.discriminatedUnion('type', [
  SourceCreated,
  SourceReady,
  SourceFailed,
  SourceDeleted,
  SourceSchemaChanged,
  ReportCompleted,
  ReportFailed,
  ModelReady,
  ModelFailed,
  PredictionCompleted,
  WebhookTest,
  EndpointDisabled,
  ApiKeyCreated,
  ApiKeyRevoked,
  ApiKeyUpdated,
  AccountPlanChanged,
  WebhookCreated,
  WebhookDeleted,
  UsageRecorded,
  DeliveryCompleted,
]);
export type DomainEvent = z.infer<typeof domainEventSchema>;
export type EventType = DomainEvent['type'];
export type EventOf<T extends EventType> = Extract<DomainEvent, { type: T }>;

export type PublicEventType = (typeof PUBLIC_EVENT_TYPES)[number];

export function isPublicEventType(type: string): type is PublicEventType {
  return (PUBLIC_EVENT_TYPES as readonly string[]).includes(type);
}

const TOPIC_BY_PREFIX: Record<string, Topic> = {
  source: TOPICS.sources,
  report: TOPICS.analytics,
  model: TOPICS.models,
  prediction: TOPICS.models,
  webhook: TOPICS.webhooks,
  endpoint: TOPICS.webhooks,
  apikey: TOPICS.accounts,
  account: TOPICS.accounts,
  usage: TOPICS.gateway,
  delivery: TOPICS.deliveries,
};

export function topicOf(type: EventType): Topic {
  const topic = TOPIC_BY_PREFIX[type.split('.')[0] ?? ''];
  if (!topic) throw new Error(`no topic for event type ${type}`);
  return topic;
}

/** Builds a typed event; `data` must match the event's schema at compile time. */
export function makeEvent<T extends EventType>(type: T, fields: { accountId: string; subject: string; requestId?: string | null; data: EventOf<T>['data'] }): EventOf<T> {
  return {
    id: newId('evt'),
    type,
    version: 1,
    accountId: fields.accountId,
    subject: fields.subject,
    occurredAt: new Date().toISOString(),
    requestId: fields.requestId ?? null,
    data: fields.data,
  } as EventOf<T>;
}
