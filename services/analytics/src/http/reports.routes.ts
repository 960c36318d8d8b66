import { Router } from 'express';
import { isId, listQuerySchema, querySchema } from '@dap/contracts';
import { callerOf, decodeCursor, parseOr400, toPage } from '@dap/http';
import { reportNotExportable, reportNotFound } from '../domain/errors.ts';
import type { ReportsService } from '../domain/reports.service.ts';
import { toCsv } from './csv.ts';
import { toReportDto, toReportSummaryDto } from './dto.ts';

const location = (id: string) => `/v1/analytics/reports/${id}`;

export function reportsRoutes(reports: ReportsService): Router {
  const router = Router();

  router.post('/v1/analytics/query', async (req, res) => {
    const caller = callerOf(req);
    const query = parseOr400(querySchema, req.body, 'body');
    const { report, accepted } = await reports.run(caller, query);
    res
      .status(accepted ? 202 : 201)
      .location(location(report._id))
      .json(toReportDto(report));
  });

  router.get('/v1/analytics/reports', async (req, res) => {
    const { accountId } = callerOf(req);
    const q = parseOr400(listQuerySchema, req.query, 'query');
    const before = decodeCursor(q.cursor, (id) => isId('rpt', id));
    const rows = await reports.list(accountId, { limit: q.limit + 1, before });
    const page = toPage(
      rows.map((r) => ({ ...r, id: r._id })),
      q.limit,
    );
    res.json({ ...page, data: page.data.map(toReportSummaryDto) });
  });

  router.get('/v1/analytics/reports/:id', async (req, res) => {
    const { accountId } = callerOf(req);
    if (!isId('rpt', req.params.id)) throw reportNotFound();
    res.json(toReportDto(await reports.get(accountId, req.params.id)));
  });

  router.get('/v1/analytics/reports/:id/export.csv', async (req, res) => {
    const { accountId } = callerOf(req);
    if (!isId('rpt', req.params.id)) throw reportNotFound();
    const report = await reports.get(accountId, req.params.id);
    if (report.status !== 'completed') throw reportNotExportable(report._id, report.status, report.error);
    res.status(200).type('text/csv; charset=utf-8').setHeader('Content-Disposition', `attachment; filename="${report._id}.csv"`).send(toCsv(report.columns, report.rows));
  });

  return router;
}
