import { Router } from 'express';
import { createKeyBody, decodeCursor, isId, listQuerySchema, rollKeyBody, toPage } from '@dap/contracts';
import { callerOf, parseOr400 } from '@dap/http';
import type { AccountsService } from '../domain/accounts.service.ts';
import { apiKeyNotFound } from '../domain/errors.ts';
import { accountDto } from '../domain/identity.service.ts';
import { apiKeyDto } from './dto.ts';

/** Settings > API Keys. The gateway lets only dashboard sessions reach these routes. */
export function keyRoutes(accounts: AccountsService): Router {
  const router = Router();
  const keyId = (id: string | undefined) => {
    if (!isId('key', id)) throw apiKeyNotFound();
    return id;
  };
  router.get('/', async (req, res) => {
    const { accountId } = callerOf(req);
    const q = parseOr400(listQuerySchema, req.query, 'query');
    const before = decodeCursor(q.cursor, (id) => isId('key', id));
    const keys = await accounts.listKeys(accountId, { limit: q.limit + 1, ...(before ? { before } : {}) });
    const page = toPage(keys.map(apiKeyDto), q.limit);
    res.json(page);
  });
  router.post('/', async (req, res) => {
    const { accountId } = callerOf(req);
    const body = parseOr400(createKeyBody, req.body, 'body');
    const { secret, key } = await accounts.createKey(accountId, { name: body.name, scopes: body.scopes, expiresAt: body.expiresAt ? new Date(body.expiresAt) : null });
    res
      .status(201)
      .location(`/v1/keys/${key._id}`)
      .json({ ...apiKeyDto(key), secret });
  });
  router.get('/:id', async (req, res) => {
    res.json(apiKeyDto(await accounts.getKey(callerOf(req).accountId, keyId(req.params.id))));
  });
  router.delete('/:id', async (req, res) => {
    await accounts.revokeKey(callerOf(req).accountId, keyId(req.params.id));
    res.status(204).end();
  });
  router.post('/:id/roll', async (req, res) => {
    const body = parseOr400(rollKeyBody, req.body ?? {}, 'body');
    const { secret, key } = await accounts.rollKey(callerOf(req).accountId, keyId(req.params.id), body.gracePeriodSeconds);
    res
      .status(201)
      .location(`/v1/keys/${key._id}`)
      .json({ ...apiKeyDto(key), secret });
  });
  return router;
}

export function accountRoutes(accounts: AccountsService): Router {
  const router = Router();
  router.get('/', async (req, res) => {
    res.json(accountDto(await accounts.getAccount(callerOf(req).accountId)));
  });
  return router;
}
