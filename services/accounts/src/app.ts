import type { Express } from 'express';
import { createHttpApp, finishApp } from '@dap/http';
import type { Logger } from '@dap/logger';
import type { AccountsService } from './domain/accounts.service.ts';
import type { IdentityService } from './domain/identity.service.ts';
import { authRoutes } from './http/auth.routes.ts';
import { internalRoutes } from './http/internal.routes.ts';
import { accountRoutes, keyRoutes } from './http/keys.routes.ts';

export interface AccountsAppDeps {
  logger: Logger;
  accounts: AccountsService;
  identity: IdentityService;
  internalSecret: string;
  secureCookies: boolean;
  bodyLimitBytes: number;
  ready: () => Promise<void>;
}

export function createApp(deps: AccountsAppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, bodyLimitBytes: deps.bodyLimitBytes, internalSecret: deps.internalSecret, ready: deps.ready });
  app.use('/internal', internalRoutes(deps.accounts, deps.identity, deps.internalSecret));
  app.use('/v1/auth', authRoutes(deps.identity, { secureCookies: deps.secureCookies }));
  app.use('/v1/keys', keyRoutes(deps.accounts));
  app.use('/v1/account', accountRoutes(deps.accounts));
  return finishApp(app, deps.logger);
}
