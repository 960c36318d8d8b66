import { Router } from 'express';
import { isId, listQuerySchema, type ModelDto, type PredictionDto } from '@dap/contracts';
import { callerOf, decodeCursor, parseOr400, toPage } from '@dap/http';
import type { ModelsService } from '../domain/models.service.ts';
import type { ModelRecord } from '../domain/model.ts';

export function toModelDto(m: ModelRecord): ModelDto {
  return {
    id: m.id,
    name: m.name,
    type: m.type,
    kind: m.kind,
    status: m.status,
    version: m.version,
    description: m.description,
    features: m.features.map((f) => ({ name: f.name, type: f.type, description: f.description })),
    createdAt: m.createdAt.toISOString(),
  };
}

const isModelId = (id: string) => isId('mdl', id);

export function modelsRouter(service: ModelsService): Router {
  const router = Router();

  router.get('/v1/models', async (req, res) => {
    const { accountId } = callerOf(req);
    const query = parseOr400(listQuerySchema, req.query, 'query');
    const before = decodeCursor(query.cursor, isModelId);
    const rows = await service.list(accountId, { limit: query.limit + 1, ...(before ? { before } : {}) });
    const page = toPage(rows, query.limit);
    res.json({ ...page, data: page.data.map(toModelDto) });
  });

  router.get('/v1/models/:id', async (req, res) => {
    res.json(toModelDto(await service.get(callerOf(req).accountId, req.params.id)));
  });

  router.post('/v1/models/:id/predict', async (req, res) => {
    const result = await service.predict(callerOf(req), req.params.id, req.body);
    const { validateMs, modelMs, logMs } = result.timing;
    res.setHeader('Server-Timing', `validate;dur=${validateMs}, model;dur=${modelMs}, log;dur=${logMs}`);
    const body: PredictionDto = {
      id: result.id,
      modelId: result.model.id,
      modelVersion: result.model.version,
      predictions: result.predictions,
      latencyMs: result.latencyMs,
    };
    res.json(body);
  });

  router.get('/v1/models/:id/metrics', async (req, res) => {
    res.json(await service.metrics(callerOf(req).accountId, req.params.id));
  });

  return router;
}
