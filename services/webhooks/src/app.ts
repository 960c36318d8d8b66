import type { Express } from 'express';
import { createServiceApp, type ServiceAppOptions } from '@dap/http';
import type { WebhooksService } from './domain/webhooks.service.ts';
import { webhookRoutes } from './http/webhooks.routes.ts';

export interface WebhooksAppDeps extends ServiceAppOptions {
  webhooks: WebhooksService;
}

export function createApp(deps: WebhooksAppDeps): Express {
  return createServiceApp(deps, [['/v1', webhookRoutes(deps.webhooks)]]);
}
