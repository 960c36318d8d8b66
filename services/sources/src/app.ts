import type { Express } from 'express';
import { createHttpApp, finishApp } from '@dap/http';
import type { Logger } from '@dap/logger';
import type { SourceService } from './domain/source.service.ts';
import { sourceRoutes } from './http/source.routes.ts';
import type { UploadLimits } from './http/upload-body.ts';
import { uploadRoutes } from './http/upload.routes.ts';

export interface SourcesAppDeps {
  logger: Logger;
  bodyLimitBytes: number;
  internalSecret: string;
  service: SourceService;
  uploads: UploadLimits;
  ready: () => Promise<void>;
}

export function createApp(deps: SourcesAppDeps): Express {
  const app = createHttpApp({
    logger: deps.logger,
    bodyLimitBytes: deps.bodyLimitBytes,
    internalSecret: deps.internalSecret,
    ready: deps.ready,
    streamRoutes: { path: '/v1/sources', routes: uploadRoutes(deps.service, deps.uploads) },
  });
  app.use('/v1/sources', sourceRoutes(deps.service));
  return finishApp(app, deps.logger);
}
