import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Router, type Request, type Response } from 'express';
import { isId, querySchema, REPORT_PARQUET_MEDIA_TYPE } from '@dap/contracts';
import { callerOf, parseOr400 } from '@dap/http';
import type { Logger } from '@dap/logger';
import { bodyInvalid, reportNotFound } from '../domain/errors.ts';
import type { ReportsService } from '../domain/reports.service.ts';
import { csvHeader, csvRows } from './csv.ts';
import { toQueryResultDto, toReportDto, toReportSummaryDto } from './dto.ts';
import { listPage } from './list-page.ts';

const location = (id: string) => `/v1/analytics/reports/${id}`;

export function reportsRoutes(reports: ReportsService, logger: Logger): Router {
  const router = Router();

  router.post('/query', async (req, res) => {
    const caller = callerOf(req);
    const query = parseOr400(querySchema, req.body, 'body');
    if (query.dryRun) {
      res.status(200).json(await reports.dryRun(caller, query));
      return;
    }
    if (!query.saveReport) {
      // An unsaved result is the answer itself, so it cannot be left to finish in the background.
      if (query.async) throw bodyInvalid([{ path: 'async', message: 'a query run with saveReport: false answers its result, so it cannot be async' }]);
      const { async: _a, dryRun: _d, saveReport: _s, ...rest } = query;
      res.status(200).json(toQueryResultDto(await reports.runUnsaved(caller, rest)));
      return;
    }
    const { report, accepted } = await reports.run(caller, query);
    res
      .status(accepted ? 202 : 201)
      .location(location(report._id))
      .json(toReportDto(report));
  });

  router.get('/reports', async (req, res) => {
    res.json(await listPage(req, 'rpt', (accountId, opts) => reports.list(accountId, opts), toReportSummaryDto));
  });

  router.get('/reports/:id', async (req, res) => {
    const { accountId } = callerOf(req);
    if (!isId('rpt', req.params.id)) throw reportNotFound();
    res.json(toReportDto(await reports.get(accountId, req.params.id)));
  });

  /** The report a download is for; a refusal (404, 409) is a problem body, as nothing is sent yet. */
  const exportable = async (req: Request) => {
    const { accountId } = callerOf(req);
    if (!isId('rpt', req.params.id as string)) throw reportNotFound();
    return reports.get(accountId, req.params.id as string);
  };

  /** Sends a download; once its first byte is out, a failure can only cut the transfer short, which the client sees. */
  const send = async (req: Request, res: Response, body: Readable) => {
    try {
      await pipeline(body, res);
    } catch (err) {
      if (req.destroyed || res.destroyed) {
        // The client left (or the transfer was cut): nothing more can be said to it.
        if (!req.destroyed) logger.warn({ err, requestId: req.requestId }, 'report export cut short');
        res.destroy();
        return;
      }
      if (!res.headersSent) throw err;
      res.destroy();
      logger.warn({ err, requestId: req.requestId }, 'report export cut short');
    }
  };

  // Every row of the result, not only the stored page: streamed from DuckDB chunk by chunk.
  router.get('/reports/:id/export.csv', async (req, res) => {
    const report = await exportable(req);
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const parts = reports.exportRows(report, gone.signal);
    const first = await parts.next();
    if (first.done) throw new Error('an export yields its columns first');
    const { columns } = first.value;
    async function* lines() {
      yield csvHeader(columns) + csvRows(columns, first.value!.rows);
      for await (const part of parts) yield csvRows(columns, part.rows);
    }
    res.status(200).type('text/csv; charset=utf-8').setHeader('Content-Disposition', `attachment; filename="${report._id}.csv"`);
    try {
      await send(req, res, Readable.from(lines(), { objectMode: false }));
    } finally {
      // Ends the query and frees its slot even when the client left before the body started.
      await parts.return(undefined);
    }
  });

  router.get('/reports/:id/export.parquet', async (req, res) => {
    const report = await exportable(req);
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const file = await reports.exportParquet(report, gone.signal);
    try {
      const { size } = await stat(file);
      res.status(200).type(REPORT_PARQUET_MEDIA_TYPE).setHeader('Content-Length', String(size)).setHeader('Content-Disposition', `attachment; filename="${report._id}.parquet"`);
      await send(req, res, createReadStream(file));
    } finally {
      await reports.discard(file);
    }
  });

  return router;
}
