import type { DeliveryDetailDto, DeliveryDto, WebhookDto } from '@dap/contracts';
import type { AttemptDoc, DeliveryDoc, EndpointHealth } from '../persistence/delivery.repository.ts';
import type { EndpointDoc } from '../persistence/endpoint.repository.ts';

/** `health`: the endpoint's attempts over the last 24 h (none for an endpoint just created). */
export function toWebhookDto(e: EndpointDoc, health: EndpointHealth = { attempts: 0, succeeded: 0, lastFailureAt: null }): WebhookDto {
  return {
    id: e._id,
    url: e.url,
    events: e.events,
    description: e.description,
    status: e.status,
    disabledReason: e.disabledReason ?? null,
    rateLimitPerSecond: e.rateLimitPerSecond ?? null,
    filter: e.filter ?? null,
    ordering: e.ordering ?? 'unordered',
    stats: { filtered: e.stats?.filtered ?? 0 },
    health: {
      attempts24h: health.attempts,
      succeeded24h: health.succeeded,
      lastFailureAt: health.lastFailureAt?.toISOString() ?? null,
      failingSince: e.failingSince?.toISOString() ?? null,
    },
    pausedUntil: e.pausedUntil && e.pausedUntil.getTime() > Date.now() ? e.pausedUntil.toISOString() : null,
    createdAt: e.createdAt.toISOString(),
    updatedAt: e.updatedAt.toISOString(),
  };
}

const attemptDto = (a: AttemptDoc) => ({ at: a.at.toISOString(), statusCode: a.statusCode, latencyMs: a.latencyMs, error: a.error, retryAfterMs: a.retryAfterMs ?? null });

export function toDeliveryDto(d: DeliveryDoc): DeliveryDto {
  return {
    id: d.eventId,
    type: d.eventType,
    status: d.status,
    attempts: d.attempts.map(attemptDto),
    nextAttemptAt: d.status === 'pending' && d.nextAttemptAt ? d.nextAttemptAt.toISOString() : null,
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
  };
}

/** The delivery with its payload and, per attempt, the headers sent and the (capped) answer. */
export function toDeliveryDetailDto(d: DeliveryDoc): DeliveryDetailDto {
  return {
    ...toDeliveryDto(d),
    webhookId: d.endpointId,
    payload: JSON.parse(d.body) as unknown,
    attempts: d.attempts.map((a) => ({
      ...attemptDto(a),
      requestHeaders: a.requestHeaders ?? null,
      response: a.response ? { ...a.response, headers: a.response.headers.map(([name, value]) => ({ name, value })) } : null,
    })),
  };
}
