import { Router } from 'express';
import { createModelBody, decodeCursor, isId, listQuerySchema, metricsQuerySchema, retrainModelBody, toPage, updateAliasesBody, type PredictionDto } from '@dap/contracts';
import { DomainError, type FieldError } from '@dap/errors';
import { callerOf, parseOr400 } from '@dap/http';
import type { ModelLifecycle } from '../domain/lifecycle.service.ts';
import type { ModelsService } from '../domain/models.service.ts';
import { toModelDto } from './dto.ts';

const isModelId = (id: string) => isId('mdl', id);

export function modelsRoutes(service: ModelsService, lifecycle: ModelLifecycle): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    const { accountId } = callerOf(req);
    const query = parseOr400(listQuerySchema, req.query, 'query');
    const before = decodeCursor(query.cursor, isModelId);
    const rows = await service.list(accountId, { limit: query.limit + 1, ...(before ? { before } : {}) });
    const page = toPage(rows, query.limit);
    res.json({ ...page, data: page.data.map((m) => toModelDto(m)) });
  });

  /** 202 while a model trains (poll the Location), 201 for an ONNX model, ready at once. */
  router.post('/', async (req, res) => {
    const body = parseOr400(createModelBody, req.body, 'body');
    const { model, accepted } = await lifecycle.create(callerOf(req), body);
    res
      .status(accepted ? 202 : 201)
      .location(`/v1/models/${model.id}`)
      .json(toModelDto(model));
  });

  router.get('/:id', async (req, res) => {
    const { accountId } = callerOf(req);
    const model = await service.get(accountId, req.params.id);
    res.json(toModelDto(model, model.kind === 'trained' ? await lifecycle.parameters(accountId, model) : undefined));
  });

  router.delete('/:id', async (req, res) => {
    await lifecycle.delete(callerOf(req).accountId, req.params.id);
    res.status(204).end();
  });

  router.post('/:id/predict', async (req, res) => {
    const result = await service.predict(callerOf(req), req.params.id, req.body);
    const { lookupMs, validateMs, modelMs, logMs } = result.timing;
    res.setHeader('Server-Timing', `lookup;dur=${lookupMs}, validate;dur=${validateMs}, model;dur=${modelMs}, log;dur=${logMs}`);
    const body: PredictionDto = {
      id: result.id,
      modelId: result.model.id,
      modelVersion: result.model.version,
      alias: result.alias,
      predictions: result.predictions,
      latencyMs: result.latencyMs,
    };
    res.json(body);
  });

  router.get('/:id/metrics', async (req, res) => {
    const query = parseOr400(metricsQuerySchema, req.query, 'query');
    if (query.version !== undefined && query.alias !== undefined) throw invalidQuery([{ path: 'alias', message: 'name a version or an alias, not both' }]);
    res.json(await service.metrics(callerOf(req).accountId, req.params.id, query));
  });

  router.get('/:id/versions', async (req, res) => {
    res.json({ data: await lifecycle.listVersions(callerOf(req).accountId, req.params.id) });
  });

  /** 202: the new version trains in the background (poll the model until it is ready or failed). */
  router.post('/:id/versions', async (req, res) => {
    const body = parseOr400(retrainModelBody, req.body ?? {}, 'body');
    const model = await lifecycle.retrain(callerOf(req), req.params.id, body);
    res.status(202).location(`/v1/models/${model.id}`).json(toModelDto(model));
  });

  router.post('/:id/aliases', async (req, res) => {
    const body = parseOr400(updateAliasesBody, req.body, 'body');
    const set = await lifecycle.setAliases(callerOf(req).accountId, req.params.id, body);
    res.json({ modelId: req.params.id, ...set });
  });

  return router;
}

const invalidQuery = (errors: FieldError[]) => new DomainError('validation_failed', `the query is invalid: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`, { errors });
