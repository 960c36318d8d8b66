import {
  decodeCursor,
  idFloor,
  idTime,
  isId,
  MAX_REPLAY_MESSAGES,
  newId,
  toPage,
  type CallerContext,
  type CreateWebhookBody,
  type UpdateWebhookBody,
  type EventOf,
  type ListQuery,
  type ListDeliveriesQuery,
  type Page,
} from '@dap/contracts';
import type { OutboundGuard } from '@dap/netguard';
import { deliveryIdOf, type DeliveryDoc, type DeliveryRepository, type EndpointHealth } from '../persistence/delivery.repository.ts';
import { MAX_ENDPOINTS_PER_ACCOUNT, type EndpointDoc, type EndpointRepository } from '../persistence/endpoint.repository.ts';
import { webhookErrors } from './errors.ts';
import { webhookEvents } from './events.ts';
import { newWebhookSecret, type SecretBox } from './secret.ts';

export interface WebhooksServiceDeps {
  endpoints: EndpointRepository;
  deliveries: DeliveryRepository;
  secrets: SecretBox;
  /** Checks an endpoint's URL at registration: private ranges the operator allows, never the platform's own endpoints. */
  guard: OutboundGuard;
  /** How long the old secret still signs deliveries after a rotation (default 24 h). */
  secretOverlapMs?: number;
  /** Called when a delivery becomes due now (a redelivery), so the dispatcher need not wait for its poll. */
  onDue?: () => void;
  /** Called when an endpoint's secret or existence changed, so caches of it are dropped. */
  onEndpointChanged?: (endpointId: string) => void;
  /** Whether this process is sending a delivery it has not stored yet (it is in the log once stored). */
  sendingUnstored?: (deliveryId: string) => boolean;
  /** The dispatcher's clock, which decides when a rotated-out secret stops signing; the system clock by default. */
  now?: () => number;
}

const DEFAULT_OVERLAP_MS = 24 * 3_600_000;
/** The window of an endpoint's health: attempts made in the last 24 hours. */
export const HEALTH_WINDOW_MS = 24 * 3_600_000;
const NO_ATTEMPTS: EndpointHealth = { attempts: 0, succeeded: 0, lastFailureAt: null };

const EVENT_ID = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/;

export class WebhooksService {
  private readonly d: WebhooksServiceDeps;

  constructor(deps: WebhooksServiceDeps) {
    this.d = deps;
  }

  /** Registers an endpoint; the secret is returned here and never again. */
  async create(caller: CallerContext, body: CreateWebhookBody): Promise<{ endpoint: EndpointDoc; secret: string }> {
    const refused = await this.d.guard.checkUrl(body.url);
    if (refused) throw webhookErrors.targetNotAllowed(refused);
    if ((await this.d.endpoints.count(caller.accountId)) >= MAX_ENDPOINTS_PER_ACCOUNT) throw webhookErrors.tooManyEndpoints();
    const id = newId('whk');
    const secret = newWebhookSecret();
    const now = new Date();
    const endpoint = await this.d.endpoints.insert(
      caller.accountId,
      {
        _id: id,
        url: body.url,
        events: [...new Set(body.events)],
        description: body.description,
        status: 'enabled',
        disabledReason: null,
        secretSealed: this.d.secrets.seal(secret, id),
        failingSince: null,
        rateLimitPerSecond: body.rateLimitPerSecond,
        filter: body.filter,
        ordering: body.ordering,
        createdAt: now,
        updatedAt: now,
      },
      [webhookEvents.created(caller, id, body.url)],
    );
    return { endpoint, secret };
  }

  async list(accountId: string, query: ListQuery): Promise<Page<EndpointDoc & { id: string }>> {
    const before = decodeCursor(query.cursor, (v) => isId('whk', v));
    const rows = await this.d.endpoints.list(accountId, { limit: query.limit + 1, before });
    return toPage(
      rows.map((r) => ({ ...r, id: r._id })),
      query.limit,
    );
  }

  async get(accountId: string, id: string): Promise<EndpointDoc> {
    const endpoint = isId('whk', id) ? await this.d.endpoints.findById(accountId, id) : null;
    if (!endpoint) throw webhookErrors.endpointNotFound();
    return endpoint;
  }

  /** Checks that the caller's endpoint can be sent to: 404 when it or `messageId` is unknown, 409 when it is disabled. */
  private async checkSendable(accountId: string, id: string, messageId?: string): Promise<void> {
    const endpoint = await this.get(accountId, id);
    if (messageId !== undefined && !EVENT_ID.test(messageId)) throw webhookErrors.messageNotFound();
    if (endpoint.status !== 'enabled') throw webhookErrors.endpointDisabled(endpoint.disabledReason);
  }

  /** The attempts each endpoint got over the last HEALTH_WINDOW_MS, zero for those that got none. */
  async health(accountId: string, endpointIds: string[], now: Date = new Date()): Promise<Map<string, EndpointHealth>> {
    const found = await this.d.deliveries.health(accountId, endpointIds, new Date(now.getTime() - HEALTH_WINDOW_MS));
    return new Map(endpointIds.map((id) => [id, found.get(id) ?? NO_ATTEMPTS]));
  }

  /**
   * Changes the settings named; a new rate limit or URL applies from the endpoint's next request on. A new URL
   * is checked as at registration, after the endpoint is known to be the caller's (so 404 wins over 422).
   */
  async update(accountId: string, id: string, body: UpdateWebhookBody): Promise<EndpointDoc> {
    if (!isId('whk', id)) throw webhookErrors.endpointNotFound();
    const set: Partial<EndpointDoc> = { updatedAt: new Date() };
    if (body.url !== undefined) {
      await this.get(accountId, id);
      const refused = await this.d.guard.checkUrl(body.url);
      if (refused) throw webhookErrors.targetNotAllowed(refused);
      set.url = body.url;
    }
    if (body.events !== undefined) set.events = [...new Set(body.events)];
    if (body.description !== undefined) set.description = body.description;
    if (body.rateLimitPerSecond !== undefined) set.rateLimitPerSecond = body.rateLimitPerSecond;
    if (body.filter !== undefined) set.filter = body.filter;
    if (body.ordering !== undefined) set.ordering = body.ordering;
    const updated = await this.d.endpoints.update(accountId, id, set);
    if (!updated) throw webhookErrors.endpointNotFound();
    this.d.onEndpointChanged?.(id);
    return updated;
  }

  /** Removes the endpoint (with its event) and cancels what was still waiting to be sent to it. */
  async delete(caller: CallerContext, id: string): Promise<void> {
    if (!isId('whk', id)) throw webhookErrors.endpointNotFound();
    const gone = await this.d.endpoints.softDelete(caller.accountId, id, [webhookEvents.deleted(caller, id)]);
    if (!gone) throw webhookErrors.endpointNotFound();
    this.d.onEndpointChanged?.(id);
    await this.d.deliveries.cancelForEndpoint(caller.accountId, id);
  }

  /** The endpoint's log, newest event first; the filters narrow it, the cursor pages through the narrowed log. */
  async listDeliveries(accountId: string, id: string, query: ListDeliveriesQuery): Promise<Page<DeliveryDoc & { id: string }>> {
    await this.get(accountId, id);
    const before = decodeCursor(query.cursor, (v) => EVENT_ID.test(v));
    const rows = await this.d.deliveries.listForEndpoint(accountId, id, {
      limit: query.limit + 1,
      before: before ? deliveryIdOf(before, id) : undefined,
      status: query.status,
      eventType: query.eventType,
      // Delivery ids start with the event's id, whose leading ULID time orders them by event time.
      from: query.since ? idFloor('evt', new Date(query.since)) : undefined,
      to: query.until ? idFloor('evt', new Date(query.until)) : undefined,
    });
    return toPage(
      rows.map((r) => ({ ...r, id: r.eventId })),
      query.limit,
    );
  }

  /**
   * Issues a new secret (returned here only). The old one keeps signing, beside the new, until the overlap
   * ends, so receivers can switch without losing a message; a rotation during an overlap drops the oldest.
   */
  async rotateSecret(accountId: string, id: string): Promise<{ endpoint: EndpointDoc; secret: string; previousSecretExpiresAt: Date }> {
    const endpoint = await this.get(accountId, id);
    const secret = newWebhookSecret();
    const previousExpiresAt = new Date((this.d.now ?? Date.now)() + (this.d.secretOverlapMs ?? DEFAULT_OVERLAP_MS));
    const updated = await this.d.endpoints.rotateSecret(accountId, id, endpoint.secretSealed, {
      sealed: this.d.secrets.seal(secret, id),
      previousSealed: endpoint.secretSealed,
      previousExpiresAt,
    });
    if (!updated) {
      if (!(await this.d.endpoints.findById(accountId, id))) throw webhookErrors.endpointNotFound();
      throw webhookErrors.rotationConflict();
    }
    this.d.onEndpointChanged?.(id);
    return { endpoint: updated, secret, previousSecretExpiresAt: previousExpiresAt };
  }

  /**
   * Enables a disabled endpoint again (after a 410 or days of failures, once the receiver is fixed): new
   * events go to it from now on, its URL checked again as at registration. Messages skipped or cancelled while
   * it was disabled are not sent by this; `replay` sends them (or each can be redelivered). Enabling an enabled
   * endpoint changes nothing.
   */
  async enable(accountId: string, id: string): Promise<EndpointDoc> {
    const endpoint = await this.get(accountId, id);
    if (endpoint.status === 'enabled') return endpoint;
    const refused = await this.d.guard.checkUrl(endpoint.url);
    if (refused) throw webhookErrors.targetNotAllowed(refused);
    const updated = (await this.d.endpoints.enable(accountId, id)) ?? (await this.get(accountId, id));
    this.d.onEndpointChanged?.(id);
    return updated;
  }

  /** Sends a message (an event id) to the endpoint again, as a new series of attempts with the same webhook-id. */
  async redeliver(accountId: string, id: string, messageId: string): Promise<DeliveryDoc> {
    await this.checkSendable(accountId, id, messageId);
    let result = await this.d.deliveries.redeliver(accountId, id, messageId);
    // Just finished: its delivery.completed is being published, which takes milliseconds.
    for (let i = 0; result.outcome === 'finishing' && i < 20; i++) {
      await new Promise((r) => setTimeout(r, 50));
      result = await this.d.deliveries.redeliver(accountId, id, messageId);
    }
    if (result.outcome === 'not_found') {
      // Sent before it was stored: in flight here, so not to be sent again.
      if (this.d.sendingUnstored?.(deliveryIdOf(messageId, id))) throw webhookErrors.deliveryInProgress();
      throw webhookErrors.messageNotFound();
    }
    if (result.outcome !== 'scheduled') throw webhookErrors.deliveryInProgress();
    this.d.onDue?.();
    return result.delivery;
  }

  /** One message of the endpoint with its body and every attempt in full. */
  async getDelivery(accountId: string, id: string, messageId: string): Promise<DeliveryDoc> {
    await this.get(accountId, id);
    const found = EVENT_ID.test(messageId) ? await this.d.deliveries.findForEndpoint(accountId, id, messageId) : null;
    if (!found) throw webhookErrors.messageNotFound();
    return found;
  }

  /**
   * Makes a pending message's waiting retry due now, in the same series of attempts (redeliver starts a new
   * series for a finished one). The endpoint's pause after a Retry-After still holds.
   */
  async retryNow(accountId: string, id: string, messageId: string): Promise<DeliveryDoc> {
    await this.checkSendable(accountId, id, messageId);
    const result = await this.d.deliveries.retryNow(accountId, id, messageId);
    if (result.outcome === 'not_found') throw webhookErrors.messageNotFound();
    if (result.outcome === 'not_pending') throw webhookErrors.deliveryNotPending();
    this.d.onDue?.();
    return result.delivery;
  }

  /**
   * Sends again the endpoint's messages since `since` (event time) that did not reach it: failed, cancelled, or
   * skipped while it was disabled. Bounded per call; when more remain, `nextSince` is where the next call starts
   * (it may look at a few of the same millisecond again, which are pending or delivered by then and left alone).
   */
  async replay(accountId: string, id: string, since: Date): Promise<{ replayed: number; hasMore: boolean; nextSince: Date | null }> {
    await this.checkSendable(accountId, id);
    const { replayed, lastEventId } = await this.d.deliveries.replay(accountId, id, idFloor('evt', since), MAX_REPLAY_MESSAGES);
    if (replayed) this.d.onDue?.();
    return { replayed, hasMore: lastEventId !== null, nextSince: lastEventId ? idTime(lastEventId) : null };
  }

  /** Emits a webhook.test event for this endpoint through the outbox, to travel the normal delivery path. */
  async sendTest(caller: CallerContext, id: string): Promise<EventOf<'webhook.test'>> {
    await this.checkSendable(caller.accountId, id);
    const event = webhookEvents.test(caller, id);
    const updated = await this.d.endpoints.emitIfEnabled(caller.accountId, id, event);
    if (!updated) throw webhookErrors.endpointDisabled(null);
    return event;
  }
}
