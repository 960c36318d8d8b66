import type { Express } from 'express';
import { createHttpApp, finishApp } from '@dap/http';
import type { Logger } from '@dap/logger';
import type { AccountsService } from './domain/accounts.service.ts';
import { internalRoutes } from './http/internal.routes.ts';

export interface AccountsAppDeps {
  logger: Logger;
  accounts: AccountsService;
  internalSecret: string;
  bodyLimitBytes: number;
  ready: () => Promise<void>;
}

export function createApp(deps: AccountsAppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, bodyLimitBytes: deps.bodyLimitBytes, internalSecret: deps.internalSecret, ready: deps.ready });
  app.use('/internal', internalRoutes(deps.accounts, deps.internalSecret));
  return finishApp(app, deps.logger);
}
