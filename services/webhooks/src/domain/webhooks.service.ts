import { isId, newId, type CallerContext, type CreateWebhookBody, type EventOf, type ListQuery } from '@dap/contracts';
import { decodeCursor, notFound, toPage, type Page } from '@dap/http';
import { checkTarget, type Resolver } from '../delivery/ssrf.ts';
import { deliveryIdOf, type DeliveryDoc, type DeliveryRepository } from '../persistence/delivery.repository.ts';
import { MAX_ENDPOINTS_PER_ACCOUNT, type EndpointDoc, type EndpointRepository } from '../persistence/endpoint.repository.ts';
import { webhookErrors } from './errors.ts';
import { webhookEvents } from './events.ts';
import { newWebhookSecret, type SecretBox } from './secret.ts';

export interface WebhooksServiceDeps {
  endpoints: EndpointRepository;
  deliveries: DeliveryRepository;
  secrets: SecretBox;
  allowPrivateTargets: boolean;
  resolve?: Resolver;
}

const EVENT_ID = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/;

export class WebhooksService {
  private readonly d: WebhooksServiceDeps;

  constructor(deps: WebhooksServiceDeps) {
    this.d = deps;
  }

  /** Registers an endpoint; the secret is returned here and never again. */
  async create(caller: CallerContext, body: CreateWebhookBody): Promise<{ endpoint: EndpointDoc; secret: string }> {
    const refused = await checkTarget(body.url, this.d.allowPrivateTargets, this.d.resolve);
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
    return toPage(rows.map((r) => ({ ...r, id: r._id })), query.limit);
  }

  async get(accountId: string, id: string): Promise<EndpointDoc> {
    const endpoint = isId('whk', id) ? await this.d.endpoints.findById(accountId, id) : null;
    if (!endpoint) throw notFound('webhook');
    return endpoint;
  }

  /** Removes the endpoint (with its event) and cancels what was still waiting to be sent to it. */
  async delete(caller: CallerContext, id: string): Promise<void> {
    if (!isId('whk', id)) throw notFound('webhook');
    const gone = await this.d.endpoints.softDelete(caller.accountId, id, [webhookEvents.deleted(caller, id)]);
    if (!gone) throw notFound('webhook');
    await this.d.deliveries.cancelForEndpoint(caller.accountId, id);
  }

  async listDeliveries(accountId: string, id: string, query: ListQuery): Promise<Page<DeliveryDoc & { id: string }>> {
    await this.get(accountId, id);
    const before = decodeCursor(query.cursor, (v) => EVENT_ID.test(v));
    const rows = await this.d.deliveries.listForEndpoint(accountId, id, {
      limit: query.limit + 1,
      before: before ? deliveryIdOf(before, id) : undefined,
    });
    return toPage(rows.map((r) => ({ ...r, id: r.eventId })), query.limit);
  }

  /** Emits a webhook.test event for this endpoint through the outbox, to travel the normal delivery path. */
  async sendTest(caller: CallerContext, id: string): Promise<EventOf<'webhook.test'>> {
    const endpoint = await this.get(caller.accountId, id);
    if (endpoint.status !== 'enabled') throw webhookErrors.endpointDisabled(endpoint.disabledReason);
    const event = webhookEvents.test(caller, id);
    const updated = await this.d.endpoints.emitIfEnabled(caller.accountId, id, event);
    if (!updated) throw webhookErrors.endpointDisabled(null);
    return event;
  }
}
