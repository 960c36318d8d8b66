import type { Express } from 'express';
import { createServiceApp, type ServiceAppOptions } from '@dap/http';
import type { AccountsService } from './domain/accounts.service.ts';
import type { IdentityService } from './domain/identity.service.ts';
import { authRoutes } from './http/auth.routes.ts';
import { internalRoutes } from './http/internal.routes.ts';
import { accountRoutes, keyRoutes } from './http/keys.routes.ts';

export interface AccountsAppDeps extends ServiceAppOptions {
  accounts: AccountsService;
  identity: IdentityService;
  secureCookies: boolean;
}

export function createApp(deps: AccountsAppDeps): Express {
  return createServiceApp(deps, [
    ['/internal', internalRoutes(deps.accounts, deps.identity, deps.internalSecret)],
    ['/v1/auth', authRoutes(deps.identity, { secureCookies: deps.secureCookies })],
    ['/v1/keys', keyRoutes(deps.accounts)],
    ['/v1/account', accountRoutes(deps.accounts)],
  ]);
}
