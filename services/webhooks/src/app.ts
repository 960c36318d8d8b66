import type { Express } from 'express';
import { createHttpApp, finishApp } from '@dap/http';
import type { Logger } from '@dap/logger';
import type { WebhooksService } from './domain/webhooks.service.ts';
import { webhookRoutes } from './http/webhooks.routes.ts';

export interface WebhooksAppDeps {
  logger: Logger;
  webhooks: WebhooksService;
  internalSecret: string;
  bodyLimitBytes: number;
  ready: () => Promise<void>;
}

export function createApp(deps: WebhooksAppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, bodyLimitBytes: deps.bodyLimitBytes, internalSecret: deps.internalSecret, ready: deps.ready });
  app.use('/v1', webhookRoutes(deps.webhooks));
  return finishApp(app, deps.logger);
}
