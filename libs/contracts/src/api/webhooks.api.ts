import { z } from 'zod';
import { isoDate, listOf, listQuerySchema } from './common.ts';
import { PUBLIC_EVENT_TYPES } from '../events.ts';
import { webhookFilterSchema } from './webhook-filter.ts';
import { MAX_WEBHOOK_RATE_LIMIT_PER_SECOND } from '../lists.ts';

/** An exact public event type, a family wildcard such as `report.*`, or `*`. */
export const eventFilterSchema = z
  .string()
  .max(100)
  .refine((f) => f === '*' || (PUBLIC_EVENT_TYPES as readonly string[]).includes(f) || (f.endsWith('.*') && PUBLIC_EVENT_TYPES.some((t) => t.startsWith(f.slice(0, -1)))), {
    message: `must be one of ${PUBLIC_EVENT_TYPES.join(', ')}, a family wildcard like report.*, or *`,
  });

/** Only http(s), and no credentials in the URL (they would be stored and shown in clear). */
export const webhookUrlSchema = z
  .string()
  .max(2048)
  .url()
  .superRefine((value, ctx) => {
    let u: URL;
    try {
      u = new URL(value);
    } catch {
      return; // .url() has already reported it
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') ctx.addIssue({ code: 'custom', message: 'the URL must use http or https' });
    if (u.username || u.password) ctx.addIssue({ code: 'custom', message: 'the URL may not contain credentials' });
    if (!u.hostname) ctx.addIssue({ code: 'custom', message: 'the URL must name a host' });
  });

/** Requests per second an endpoint accepts, across every instance of the service. */
export const MAX_RATE_LIMIT_PER_SECOND = MAX_WEBHOOK_RATE_LIMIT_PER_SECOND;
const rateLimitSchema = z
  .number()
  .int()
  .min(1)
  .max(MAX_RATE_LIMIT_PER_SECOND)
  .nullable()
  .describe('at most this many requests start within any second (deliveries beyond wait, pending); null: no limit');

export const WEBHOOK_ORDERINGS = ['unordered', 'ordered'] as const;
const orderingSchema = z
  .enum(WEBHOOK_ORDERINGS)
  .describe(
    'ordered: the events of one subject (a source, model or report) are delivered in the order they happened, each once the previous one succeeded or failed after its retries; other subjects are not held',
  );

export const createWebhookBody = z
  .strictObject({
    url: webhookUrlSchema,
    events: z.array(eventFilterSchema).min(1).max(50).default(['*']),
    description: z.string().max(500).default(''),
    rateLimitPerSecond: rateLimitSchema.default(null),
    filter: webhookFilterSchema.nullable().default(null),
    ordering: orderingSchema.default('unordered'),
  })
  .meta({ id: 'CreateWebhook', examples: [{ url: 'https://example.com/hooks', events: ['source.*', 'report.completed'] }] });
export type CreateWebhookBody = z.infer<typeof createWebhookBody>;

/** The settings a PATCH may change; fields left out keep their value. */
export const updateWebhookBody = z
  .strictObject({
    url: webhookUrlSchema.optional().describe('checked again as at registration: http(s), no credentials, a target the service may reach'),
    events: z.array(eventFilterSchema).min(1).max(50).optional(),
    description: z.string().max(500).optional(),
    rateLimitPerSecond: rateLimitSchema.optional(),
    filter: webhookFilterSchema.nullable().optional(),
    ordering: orderingSchema.optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'name at least one of url, events, description, rateLimitPerSecond, filter, ordering' })
  .meta({ id: 'UpdateWebhook', examples: [{ rateLimitPerSecond: 10 }] });
export type UpdateWebhookBody = z.infer<typeof updateWebhookBody>;

export const WEBHOOK_STATUSES = ['enabled', 'disabled'] as const;

export const webhookSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    description: z.string(),
    status: z.enum(WEBHOOK_STATUSES),
    disabledReason: z.string().nullable().describe('why the endpoint was disabled (a 410 answer, or days of failures)'),
    rateLimitPerSecond: z.number().int().nullable().describe('at most this many requests start within any second; null: no limit'),
    filter: webhookFilterSchema.nullable(),
    ordering: orderingSchema,
    stats: z.object({ filtered: z.number().int().describe("events of the endpoint's types not sent because its filter did not match") }),
    pausedUntil: isoDate.nullable().describe('the endpoint answered 429 or 503 with Retry-After: nothing is sent to it before then'),
    health: z
      .object({
        attempts24h: z.number().int().describe('delivery attempts made to the endpoint in the last 24 hours (each retry counts)'),
        succeeded24h: z.number().int().describe('of those, the ones it answered with a 2xx status'),
        lastFailureAt: isoDate.nullable().describe('the newest of those it did not answer with 2xx (an error status, a timeout, no connection); null when none failed'),
        failingSince: isoDate
          .nullable()
          .describe('when the current run of failed attempts began (the endpoint is disabled once it lasts too long); null while the endpoint answers 2xx'),
      })
      .describe("the endpoint's delivery attempts over the last 24 hours; attempts24h - succeeded24h failed"),
    createdAt: isoDate,
    updatedAt: isoDate,
  })
  .meta({ id: 'Webhook' });
export type WebhookDto = z.infer<typeof webhookSchema>;
export const webhookCreatedSchema = webhookSchema.extend({ secret: z.string().describe('whsec_… signing secret, shown only in this response') }).meta({ id: 'WebhookCreated' });
export type WebhookCreatedDto = z.infer<typeof webhookCreatedSchema>;
export const webhookListSchema = listOf(webhookSchema).meta({ id: 'WebhookList' });
export const webhookSecretRotatedSchema = webhookSchema
  .extend({
    secret: z.string().describe('the new whsec_… signing secret, shown only in this response'),
    previousSecretExpiresAt: isoDate.describe('until then deliveries carry a signature with the old secret too'),
  })
  .meta({ id: 'WebhookSecretRotated' });
export type WebhookSecretRotatedDto = z.infer<typeof webhookSecretRotatedSchema>;

/** `skipped`: the event came while the endpoint was disabled; it was recorded, not sent, and can be replayed. */
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled', 'skipped'] as const;

export const deliveryAttemptSchema = z
  .object({
    at: isoDate,
    statusCode: z.number().int().nullable().describe('the HTTP status answered, or null when no answer came'),
    latencyMs: z.number(),
    error: z.string().nullable(),
    retryAfterMs: z
      .number()
      .int()
      .nullable()
      .describe(
        "the receiver's Retry-After on a 429 or 503 answer, in ms, bounded by the service's maximum; the endpoint's next attempts waited that long. Null when none was sent",
      ),
  })
  .meta({ id: 'DeliveryAttempt' });

/** One message sent (or to be sent) to one endpoint, with every attempt made so far. */
export const deliverySchema = z
  .object({
    id: z.string().describe('the event id, sent as the webhook-id header on every attempt'),
    type: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.array(deliveryAttemptSchema),
    nextAttemptAt: isoDate.nullable(),
    createdAt: isoDate,
    updatedAt: isoDate,
  })
  .meta({ id: 'Delivery' });
export type DeliveryDto = z.infer<typeof deliverySchema>;
export const deliveryListSchema = listOf(deliverySchema).meta({ id: 'DeliveryList' });

/** One attempt with what was sent and what came back, as the delivery's detail shows it. */
export const deliveryAttemptDetailSchema = deliveryAttemptSchema
  .extend({
    requestHeaders: z
      .record(z.string(), z.string())
      .nullable()
      .describe('the HTTP headers sent, webhook-signature included (never the signing secret); null for attempts made before headers were recorded'),
    response: z
      .object({
        headers: z
          .array(z.object({ name: z.string(), value: z.string() }))
          .describe('the response headers in the order received, names lower-cased: at most 32, each value cut at 512 characters'),
        headersTruncated: z.boolean().describe('true when headers were left out or cut'),
        body: z.string().describe('the start of the response body (at most 4 KiB, decoded as UTF-8)'),
        bodyTruncated: z.boolean().describe('true when the body was longer than what is shown'),
      })
      .nullable()
      .describe('what the endpoint answered; null when no answer came (timeout, connection error) or for attempts made before answers were recorded'),
  })
  .meta({ id: 'DeliveryAttemptDetail' });

/** A message with its payload and every attempt in full (the log's list shows only each attempt's outcome). */
export const deliveryDetailSchema = deliverySchema
  .extend({
    webhookId: z.string(),
    payload: z.unknown().describe('the JSON body sent on every attempt: {type, timestamp, data}'),
    attempts: z.array(deliveryAttemptDetailSchema),
  })
  .meta({ id: 'DeliveryDetail' });
export type DeliveryDetailDto = z.infer<typeof deliveryDetailSchema>;

const deliveryTime = (name: string) => z.iso.datetime({ offset: true, message: `${name} must be an ISO-8601 date-time, such as 2026-01-31T12:00:00Z` }).optional();

/** The delivery log's filters, on top of paging; `since`/`until` are the event's time, like replay's `since`. */
export const listDeliveriesQuery = listQuerySchema
  .extend({
    status: z.enum(DELIVERY_STATUSES).optional().describe('only deliveries in this status'),
    eventType: z.enum(PUBLIC_EVENT_TYPES).optional().describe('only deliveries of this event type'),
    since: deliveryTime('since').describe('only events that happened at or after this time'),
    until: deliveryTime('until').describe('only events that happened before this time'),
  })
  .refine((q) => !q.since || !q.until || Date.parse(q.since) < Date.parse(q.until), { message: 'until must be after since', path: ['until'] });
export type ListDeliveriesQuery = z.infer<typeof listDeliveriesQuery>;

/** At most this many messages are scheduled by one replay; the answer says where to go on from. */
export const MAX_REPLAY_MESSAGES = 1000;

export const replayWebhookBody = z
  .strictObject({
    since: z.iso
      .datetime({ offset: true, message: 'since must be an ISO-8601 date-time, such as 2026-01-31T12:00:00Z' })
      .refine((v) => Date.parse(v) <= Date.now(), { message: 'since may not be in the future' }),
  })
  .meta({ id: 'ReplayWebhook', examples: [{ since: '2026-01-31T12:00:00Z' }] });
export type ReplayWebhookBody = z.infer<typeof replayWebhookBody>;

export const webhookReplaySchema = z
  .object({
    webhookId: z.string(),
    since: isoDate,
    replayed: z.number().int().describe('messages scheduled again by this call (failed, cancelled or skipped ones)'),
    hasMore: z.boolean().describe(`true when more than ${MAX_REPLAY_MESSAGES} messages matched: call again with nextSince`),
    nextSince: isoDate.nullable().describe('the since of the next call when hasMore, else null'),
  })
  .meta({ id: 'WebhookReplay' });
export type WebhookReplayDto = z.infer<typeof webhookReplaySchema>;

export const webhookTestSchema = z
  .object({
    eventId: z.string().describe('the id of the webhook.test event; its delivery appears in the deliveries log'),
    webhookId: z.string(),
    type: z.literal('webhook.test'),
  })
  .meta({ id: 'WebhookTest' });
export type WebhookTestDto = z.infer<typeof webhookTestSchema>;

export function eventMatches(filters: readonly string[], type: string): boolean {
  return filters.some((f) => f === '*' || f === type || (f.endsWith('.*') && type.startsWith(f.slice(0, -1))));
}
