import type { Express } from 'express';
import { createServiceApp, type ServiceAppOptions } from '@dap/http';
import type { SourceService } from './domain/source.service.ts';
import { sourceRoutes } from './http/source.routes.ts';
import type { UploadLimits } from './http/upload-body.ts';
import { uploadRoutes } from './http/upload.routes.ts';

export interface SourcesAppDeps extends ServiceAppOptions {
  service: SourceService;
  uploads: UploadLimits;
}

export function createApp(deps: SourcesAppDeps): Express {
  return createServiceApp({ ...deps, streamRoutes: { path: '/v1/sources', routes: uploadRoutes(deps.service, deps.uploads) } }, [['/v1/sources', sourceRoutes(deps.service)]]);
}
