import type { Express } from 'express';
import { createHttpApp, finishApp } from '@dap/http';
import type { Logger } from '@dap/logger';
import type { ModelLifecycle } from './domain/lifecycle.service.ts';
import type { ModelsService } from './domain/models.service.ts';
import { modelsRoutes } from './http/models.routes.ts';

export interface ModelsAppDeps {
  logger: Logger;
  bodyLimitBytes: number;
  internalSecret: string;
  ready: () => Promise<void>;
  models: ModelsService;
  lifecycle: ModelLifecycle;
}

export function createApp(deps: ModelsAppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, bodyLimitBytes: deps.bodyLimitBytes, internalSecret: deps.internalSecret, ready: deps.ready });
  app.use('/v1/models', modelsRoutes(deps.models, deps.lifecycle));
  return finishApp(app, deps.logger);
}
