import type { Express } from 'express';
import { createHttpApp, finishApp } from '@dap/http';
import type { Logger } from '@dap/logger';
import type { SourceService } from './domain/source.service.ts';
import { sourceRoutes } from './http/source.routes.ts';

export interface AppDeps {
  logger: Logger;
  bodyLimitBytes: number;
  internalSecret: string;
  service: SourceService;
  ready: () => Promise<void>;
}

export function createApp(deps: AppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, bodyLimitBytes: deps.bodyLimitBytes, internalSecret: deps.internalSecret, ready: deps.ready });
  app.use(sourceRoutes(deps.service));
  return finishApp(app, deps.logger);
}
