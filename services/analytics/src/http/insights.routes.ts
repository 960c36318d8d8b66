import { Router } from 'express';
import type { z } from 'zod';
import { addTileBody, createDashboardBody, createInsightBody, isId, moveTileBody, updateDashboardBody, updateInsightBody, type IdPrefix } from '@dap/contracts';
import { callerOf, parseOr400 } from '@dap/http';
import { dashboardNotFound, insightNotFound, tileNotFound } from '../domain/errors.ts';
import type { InsightsService } from '../domain/insights.service.ts';
import { toDashboardDto, toDashboardSummaryDto, toInsightDto, toQueryResultDto } from './dto.ts';
import { listPage, type ListOf } from './list-page.ts';

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

/** What the routes of a saved resource call: the domain's methods, its id check, its bodies and its DTOs. */
interface SavedResource<Doc, Row extends { _id: string }, Create, Update> {
  /** The collection's path under /v1/analytics, e.g. `/insights`. */
  path: string;
  prefix: IdPrefix;
  id: (id: string | undefined) => string;
  bodies: { create: z.ZodType<Create>; update: z.ZodType<Update> };
  create: (accountId: string, body: Create) => Promise<Doc>;
  list: ListOf<Row>;
  get: (accountId: string, id: string) => Promise<Doc>;
  update: (accountId: string, id: string, body: Update) => Promise<Doc>;
  remove: (accountId: string, id: string) => Promise<void>;
  idOf: (doc: Doc) => string;
  toDto: (doc: Doc) => unknown;
  toRowDto: (row: Row) => unknown;
}

/**
 * The five routes every saved resource (an insight, a dashboard) has: create (201 at its own address), list
 * (one page), get, update (PATCH) and delete. The id is checked before the body, so a bad id answers 404.
 */
function savedResourceRoutes<Doc, Row extends { _id: string }, Create, Update>(router: Router, r: SavedResource<Doc, Row, Create, Update>): void {
  router.post(r.path, async (req, res) => {
    const { accountId } = callerOf(req);
    const doc = await r.create(accountId, parseOr400(r.bodies.create, req.body, 'body'));
    res
      .status(201)
      .location(`/v1/analytics${r.path}/${r.idOf(doc)}`)
      .json(r.toDto(doc));
  });

  router.get(r.path, async (req, res) => {
    res.json(await listPage(req, r.prefix, r.list, r.toRowDto));
  });

  router.get(`${r.path}/:id`, async (req, res) => {
    const { accountId } = callerOf(req);
    res.json(r.toDto(await r.get(accountId, r.id(req.params.id))));
  });

  router.patch(`${r.path}/:id`, async (req, res) => {
    const { accountId } = callerOf(req);
    const id = r.id(req.params.id);
    const body = parseOr400(r.bodies.update, req.body, 'body');
    res.json(r.toDto(await r.update(accountId, id, body)));
  });

  router.delete(`${r.path}/:id`, async (req, res) => {
    const { accountId } = callerOf(req);
    await r.remove(accountId, r.id(req.params.id));
    res.status(204).end();
  });
}

export function insightsRoutes(insights: InsightsService): Router {
  const router = Router();

  savedResourceRoutes(router, {
    path: '/insights',
    prefix: 'ins',
    id: insightId,
    bodies: { create: createInsightBody, update: updateInsightBody },
    create: (accountId, body) => insights.createInsight(accountId, body),
    list: (accountId, opts) => insights.listInsights(accountId, opts),
    get: (accountId, id) => insights.getInsight(accountId, id),
    update: (accountId, id, body) => insights.updateInsight(accountId, id, body),
    remove: (accountId, id) => insights.deleteInsight(accountId, id),
    idOf: (insight) => insight._id,
    toDto: toInsightDto,
    toRowDto: toInsightDto,
  });

  savedResourceRoutes(router, {
    path: '/dashboards',
    prefix: 'dsh',
    id: dashboardId,
    bodies: { create: createDashboardBody, update: updateDashboardBody },
    create: (accountId, body) => insights.createDashboard(accountId, body.name),
    list: (accountId, opts) => insights.listDashboards(accountId, opts),
    get: (accountId, id) => insights.getDashboard(accountId, id),
    update: (accountId, id, body) => insights.renameDashboard(accountId, id, body.name),
    remove: (accountId, id) => insights.deleteDashboard(accountId, id),
    idOf: (view) => view.dashboard._id,
    toDto: toDashboardDto,
    toRowDto: toDashboardSummaryDto,
  });

  router.post('/insights/:id/run', async (req, res) => {
    const caller = callerOf(req);
    res.json(toQueryResultDto(await insights.runInsight(caller, insightId(req.params.id))));
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
