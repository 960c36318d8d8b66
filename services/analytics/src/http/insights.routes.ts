import { Router } from 'express';
import {
  addTileBody,
  createDashboardBody,
  createInsightBody,
  decodeCursor,
  isId,
  listQuerySchema,
  moveTileBody,
  toPage,
  updateDashboardBody,
  updateInsightBody,
} from '@dap/contracts';
import { callerOf, parseOr400 } from '@dap/http';
import { dashboardNotFound, insightNotFound, tileNotFound } from '../domain/errors.ts';
import type { InsightsService } from '../domain/insights.service.ts';
import { toDashboardDto, toDashboardSummaryDto, toInsightDto, toQueryResultDto } from './dto.ts';

/** Ids of another shape cannot exist: they answer 404 without a lookup, like an unknown id. */
const insightId = (id: string | undefined) => {
  if (!isId('ins', id)) throw insightNotFound();
  return id;
};
const dashboardId = (id: string | undefined) => {
  if (!isId('dsh', id)) throw dashboardNotFound();
  return id;
};
const tileId = (id: string | undefined) => {
  if (!isId('til', id)) throw tileNotFound();
  return id;
};

export function insightsRoutes(insights: InsightsService): Router {
  const router = Router();

  router.post('/insights', async (req, res) => {
    const { accountId } = callerOf(req);
    const body = parseOr400(createInsightBody, req.body, 'body');
    const insight = await insights.createInsight(accountId, body);
    res.status(201).location(`/v1/analytics/insights/${insight._id}`).json(toInsightDto(insight));
  });

  router.get('/insights', async (req, res) => {
    const { accountId } = callerOf(req);
    const q = parseOr400(listQuerySchema, req.query, 'query');
    const before = decodeCursor(q.cursor, (id) => isId('ins', id));
    const rows = await insights.listInsights(accountId, { limit: q.limit + 1, before });
    const page = toPage(
      rows.map((r) => ({ ...r, id: r._id })),
      q.limit,
    );
    res.json({ ...page, data: page.data.map(toInsightDto) });
  });

  router.get('/insights/:id', async (req, res) => {
    const { accountId } = callerOf(req);
    res.json(toInsightDto(await insights.getInsight(accountId, insightId(req.params.id))));
  });

  router.patch('/insights/:id', async (req, res) => {
    const { accountId } = callerOf(req);
    const id = insightId(req.params.id);
    const body = parseOr400(updateInsightBody, req.body, 'body');
    res.json(toInsightDto(await insights.updateInsight(accountId, id, body)));
  });

  router.delete('/insights/:id', async (req, res) => {
    const { accountId } = callerOf(req);
    await insights.deleteInsight(accountId, insightId(req.params.id));
    res.status(204).end();
  });

  router.post('/insights/:id/run', async (req, res) => {
    const caller = callerOf(req);
    res.json(toQueryResultDto(await insights.runInsight(caller, insightId(req.params.id))));
  });

  router.post('/dashboards', async (req, res) => {
    const { accountId } = callerOf(req);
    const body = parseOr400(createDashboardBody, req.body, 'body');
    const view = await insights.createDashboard(accountId, body.name);
    res.status(201).location(`/v1/analytics/dashboards/${view.dashboard._id}`).json(toDashboardDto(view));
  });

  router.get('/dashboards', async (req, res) => {
    const { accountId } = callerOf(req);
    const q = parseOr400(listQuerySchema, req.query, 'query');
    const before = decodeCursor(q.cursor, (id) => isId('dsh', id));
    const rows = await insights.listDashboards(accountId, { limit: q.limit + 1, before });
    const page = toPage(
      rows.map((r) => ({ ...r, id: r._id })),
      q.limit,
    );
    res.json({ ...page, data: page.data.map(toDashboardSummaryDto) });
  });

  router.get('/dashboards/:id', async (req, res) => {
    const { accountId } = callerOf(req);
    res.json(toDashboardDto(await insights.getDashboard(accountId, dashboardId(req.params.id))));
  });

  router.patch('/dashboards/:id', async (req, res) => {
    const { accountId } = callerOf(req);
    const id = dashboardId(req.params.id);
    const body = parseOr400(updateDashboardBody, req.body, 'body');
    res.json(toDashboardDto(await insights.renameDashboard(accountId, id, body.name)));
  });

  router.delete('/dashboards/:id', async (req, res) => {
    const { accountId } = callerOf(req);
    await insights.deleteDashboard(accountId, dashboardId(req.params.id));
    res.status(204).end();
  });

  router.post('/dashboards/:id/tiles', async (req, res) => {
    const { accountId } = callerOf(req);
    const id = dashboardId(req.params.id);
    const body = parseOr400(addTileBody, req.body, 'body');
    // The tile lives in its dashboard: the new state is at the dashboard's address.
    res
      .status(201)
      .location(`/v1/analytics/dashboards/${id}`)
      .json(toDashboardDto(await insights.addTile(accountId, id, body)));
  });

  router.patch('/dashboards/:id/tiles/:tileId', async (req, res) => {
    const { accountId } = callerOf(req);
    const id = dashboardId(req.params.id);
    const tile = tileId(req.params.tileId);
    const body = parseOr400(moveTileBody, req.body, 'body');
    res.json(toDashboardDto(await insights.moveTile(accountId, id, tile, body)));
  });

  router.delete('/dashboards/:id/tiles/:tileId', async (req, res) => {
    const { accountId } = callerOf(req);
    const id = dashboardId(req.params.id);
    res.json(toDashboardDto(await insights.removeTile(accountId, id, tileId(req.params.tileId))));
  });

  return router;
}
