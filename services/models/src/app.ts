import type { Express } from 'express';
import { createServiceApp, type ServiceAppOptions } from '@dap/http';
import type { ModelLifecycle } from './domain/lifecycle.service.ts';
import type { ModelsService } from './domain/models.service.ts';
import { modelsRoutes } from './http/models.routes.ts';

export interface ModelsAppDeps extends ServiceAppOptions {
  models: ModelsService;
  lifecycle: ModelLifecycle;
}

export function createApp(deps: ModelsAppDeps): Express {
  return createServiceApp(deps, [['/v1/models', modelsRoutes(deps.models, deps.lifecycle)]]);
}
