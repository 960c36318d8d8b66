import { Router, type Request } from 'express';
import {
  createWebhookBody,
  updateWebhookBody,
  listQuerySchema,
  listDeliveriesQuery,
  replayWebhookBody,
  type WebhookReplayDto,
  type WebhookCreatedDto,
  type WebhookSecretRotatedDto,
  type WebhookTestDto,
  type WebhookDto,
  type CallerContext,
} from '@dap/contracts';
import { callerOf, parseOr400 } from '@dap/http';
import type { WebhooksService } from '../domain/webhooks.service.ts';
import type { EndpointDoc } from '../persistence/endpoint.repository.ts';
import { toDeliveryDetailDto, toDeliveryDto, toWebhookDto } from './dto.ts';

/** The caller, with the request id this response carries (it travels on into events and deliveries). */
function callerWithRequestId(req: Request): CallerContext {
  return { ...callerOf(req), requestId: req.requestId };
}

export function webhookRoutes(service: WebhooksService): Router {
  const r = Router();
  /** The endpoints as the API shows them, each with its health over the last 24 h (one query for all). */
  const withHealth = async (accountId: string, endpoints: EndpointDoc[]): Promise<WebhookDto[]> => {
    const health = await service.health(
      accountId,
      endpoints.map((e) => e._id),
    );
    return endpoints.map((e) => toWebhookDto(e, health.get(e._id)));
  };
  const one = async (accountId: string, endpoint: EndpointDoc): Promise<WebhookDto> => (await withHealth(accountId, [endpoint]))[0]!;

  r.post('/webhooks', async (req, res) => {
    const body = parseOr400(createWebhookBody, req.body ?? {}, 'body');
    const { endpoint, secret } = await service.create(callerWithRequestId(req), body);
    const dto: WebhookCreatedDto = { ...toWebhookDto(endpoint), secret };
    res.status(201).location(`/v1/webhooks/${endpoint._id}`).json(dto);
  });

  r.get('/webhooks', async (req, res) => {
    const query = parseOr400(listQuerySchema, req.query, 'query');
    const page = await service.list(callerOf(req).accountId, query);
    res.json({ ...page, data: await withHealth(callerOf(req).accountId, page.data) });
  });

  r.get('/webhooks/:id', async (req, res) => {
    const accountId = callerOf(req).accountId;
    res.json(await one(accountId, await service.get(accountId, req.params.id)));
  });

  r.patch('/webhooks/:id', async (req, res) => {
    const body = parseOr400(updateWebhookBody, req.body ?? {}, 'body');
    const accountId = callerOf(req).accountId;
    res.json(await one(accountId, await service.update(accountId, req.params.id, body)));
  });

  r.delete('/webhooks/:id', async (req, res) => {
    await service.delete(callerWithRequestId(req), req.params.id);
    res.status(204).end();
  });

  r.get('/webhooks/:id/deliveries', async (req, res) => {
    const query = parseOr400(listDeliveriesQuery, req.query, 'query');
    const page = await service.listDeliveries(callerOf(req).accountId, req.params.id, query);
    res.json({ ...page, data: page.data.map(toDeliveryDto) });
  });

  r.get('/webhooks/:id/deliveries/:messageId', async (req, res) => {
    res.json(toDeliveryDetailDto(await service.getDelivery(callerOf(req).accountId, req.params.id, req.params.messageId)));
  });

  r.post('/webhooks/:id/deliveries/:messageId/retry', async (req, res) => {
    const delivery = await service.retryNow(callerOf(req).accountId, req.params.id, req.params.messageId);
    res.status(202).location(`/v1/webhooks/${req.params.id}/deliveries/${delivery.eventId}`).json(toDeliveryDto(delivery));
  });

  r.post('/webhooks/:id/rotate-secret', async (req, res) => {
    const { endpoint, secret, previousSecretExpiresAt } = await service.rotateSecret(callerOf(req).accountId, req.params.id);
    const dto: WebhookSecretRotatedDto = { ...(await one(callerOf(req).accountId, endpoint)), secret, previousSecretExpiresAt: previousSecretExpiresAt.toISOString() };
    res.setHeader('cache-control', 'no-store');
    res.json(dto);
  });

  r.post('/webhooks/:id/enable', async (req, res) => {
    const accountId = callerOf(req).accountId;
    res.json(await one(accountId, await service.enable(accountId, req.params.id)));
  });

  r.post('/webhooks/:id/deliveries/:messageId/redeliver', async (req, res) => {
    const delivery = await service.redeliver(callerOf(req).accountId, req.params.id, req.params.messageId);
    res.status(202).location(`/v1/webhooks/${req.params.id}/deliveries`).json(toDeliveryDto(delivery));
  });

  r.post('/webhooks/:id/replay', async (req, res) => {
    const body = parseOr400(replayWebhookBody, req.body ?? {}, 'body');
    const since = new Date(body.since);
    const result = await service.replay(callerOf(req).accountId, req.params.id, since);
    const dto: WebhookReplayDto = {
      webhookId: req.params.id,
      since: since.toISOString(),
      replayed: result.replayed,
      hasMore: result.hasMore,
      nextSince: result.nextSince?.toISOString() ?? null,
    };
    res.status(202).location(`/v1/webhooks/${req.params.id}/deliveries`).json(dto);
  });

  r.post('/webhooks/:id/test', async (req, res) => {
    const event = await service.sendTest(callerWithRequestId(req), req.params.id);
    const dto: WebhookTestDto = { eventId: event.id, webhookId: req.params.id, type: 'webhook.test' };
    res.status(202).location(`/v1/webhooks/${req.params.id}/deliveries`).json(dto);
  });

  return r;
}
