import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { Router } from 'express';
import { createSourceBody, listQuerySchema, syncSourceBody, updateSourceBody } from '@dap/contracts';
import { callerOf, parseOr400 } from '@dap/http';
import type { SourceService } from '../domain/source.service.ts';
import { toSourceDto } from './dto.ts';

const location = (id: string) => `/v1/sources/${encodeURIComponent(id)}`;

export function sourceRoutes(service: SourceService): Router {
  const r = Router();

  r.get('/', async (req, res) => {
    const query = parseOr400(listQuerySchema, req.query, 'query');
    const page = await service.list(callerOf(req).accountId, query);
    res.json({ data: page.data.map(toSourceDto), hasMore: page.hasMore, nextCursor: page.nextCursor });
  });

  r.post('/', async (req, res) => {
    const body = parseOr400(createSourceBody, req.body, 'body');
    const doc = await service.create(callerOf(req), body);
    res.status(201).location(location(doc._id)).json(toSourceDto(doc));
  });

  r.get('/:id', async (req, res) => {
    res.json(toSourceDto(await service.get(callerOf(req).accountId, req.params.id)));
  });

  r.get('/:id/quarantine', async (req, res) => {
    const file = await service.quarantineFile(callerOf(req).accountId, req.params.id);
    res.status(200).type('text/csv; charset=utf-8').setHeader('Content-Disposition', `attachment; filename="${req.params.id}-quarantine.csv"`);
    await pipeline(createReadStream(file), res);
  });

  r.patch('/:id', async (req, res) => {
    const body = parseOr400(updateSourceBody, req.body, 'body');
    res.json(toSourceDto(await service.update(callerOf(req), req.params.id, body)));
  });

  r.delete('/:id', async (req, res) => {
    await service.remove(callerOf(req), req.params.id);
    res.status(204).end();
  });

  r.post('/:id/sync', async (req, res) => {
    const body = parseOr400(syncSourceBody, req.body, 'body');
    const doc = await service.requestSync(callerOf(req), req.params.id, body?.mode);
    res.status(202).location(location(doc._id)).json(toSourceDto(doc));
  });

  return r;
}
