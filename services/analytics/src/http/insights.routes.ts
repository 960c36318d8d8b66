import { Router } from 'express';
import { addTileBody, createDashboardBody, createInsightBody, isId, moveTileBody, updateDashboardBody, updateInsightBody, type IdPrefix } from '@dap/contracts';
import { callerOf, parseOr400 } from '@dap/http';
import { dashboardNotFound, insightNotFound, tileNotFound } from '../domain/errors.ts';
import type { InsightsService } from '../domain/insights.service.ts';
import { toDashboardDto, toDashboardSummaryDto, toInsightDto, toQueryResultDto } from './dto.ts';
import { listPage } from './list-page.ts';

/** Ids of another shape cannot exist: they answer 404 without a lookup, like an unknown id. */
const idParam =
  (prefix: IdPrefix, notFound: () => Error) =>
  (id: string | undefined): string => {
    if (!isId(prefix, id)) throw notFound();
    return id;
  };
const insightId = idParam('ins', insightNotFound);
const dashboardId = idParam('dsh', dashboardNotFound);
const tileId = idParam('til', tileNotFound);

export function insightsRoutes(insights: InsightsService): Router {
  const router = Router();

  router.post('/insights', async (req, res) => {
    const { accountId } = callerOf(req);
    const body = parseOr400(createInsightBody, req.body, 'body');
    const insight = await insights.createInsight(accountId, body);
    res.status(201).location(`/v1/analytics/insights/${insight._id}`).json(toInsightDto(insight));
  });

  router.get('/insights', async (req, res) => {
    res.json(await listPage(req, 'ins', (accountId, opts) => insights.listInsights(accountId, opts), toInsightDto));
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
    res.json(await listPage(req, 'dsh', (accountId, opts) => insights.listDashboards(accountId, opts), toDashboardSummaryDto));
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
