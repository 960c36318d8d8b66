import { Router } from 'express';
import { z } from 'zod';
import { parseOr400, requireInternalToken } from '@dap/http';
import type { AccountsService } from '../domain/accounts.service.ts';
import type { IdentityService } from '../domain/identity.service.ts';

const verifyBody = z.strictObject({ hash: z.string().regex(/^[0-9a-f]{64}$/) });

/** Routes only the gateway calls; guarded by the internal service token. */
export function internalRoutes(accounts: AccountsService, identity: IdentityService, internalSecret: string): Router {
  const router = Router();
  router.use(requireInternalToken(internalSecret));
  router.post('/keys/verify', async (req, res) => {
    const { hash } = parseOr400(verifyBody, req.body, 'body');
    res.json(await accounts.verifyHash(hash));
  });
  router.post('/sessions/verify', async (req, res) => {
    const { hash } = parseOr400(verifyBody, req.body, 'body');
    const session = await identity.verifyTokenHash(hash);
    res.json(session ? { ok: true, session } : { ok: false });
  });
  return router;
}
