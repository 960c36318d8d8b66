import { Router } from 'express';
import { z } from 'zod';
import { KEY_VERIFY_BATCH_MAX } from '@dap/contracts';
import { parseOr400, requireInternalToken } from '@dap/http';
import type { AccountsService } from '../domain/accounts.service.ts';
import type { IdentityService } from '../domain/identity.service.ts';

const hash = z.string().regex(/^[0-9a-f]{64}$/);
const verifyBody = z.strictObject({ hash });
const verifyManyBody = z.strictObject({ hashes: z.array(hash).min(1).max(KEY_VERIFY_BATCH_MAX) });

/** Routes only the gateway calls; guarded by the internal service token. */
export function internalRoutes(accounts: AccountsService, identity: IdentityService, internalSecret: string): Router {
  const router = Router();
  router.use(requireInternalToken(internalSecret));
  router.post('/keys/verify', async (req, res) => {
    const { hash } = parseOr400(verifyBody, req.body, 'body');
    res.json(await accounts.verifyHash(hash));
  });
  // The gateway's background refresh of the keys it holds, and its lookups that coincide: one outcome per hash, in order.
  router.post('/keys/verify-many', async (req, res) => {
    const { hashes } = parseOr400(verifyManyBody, req.body, 'body');
    res.json({ outcomes: await accounts.verifyHashes(hashes) });
  });
  router.post('/sessions/verify', async (req, res) => {
    const { hash } = parseOr400(verifyBody, req.body, 'body');
    const session = await identity.verifyTokenHash(hash);
    res.json(session ? { ok: true, session } : { ok: false });
  });
  return router;
}
