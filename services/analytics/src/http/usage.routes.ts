import { Router } from 'express';
import { usageStatsQuery } from '@dap/contracts';
import { callerOf, parseOr400 } from '@dap/http';
import type { UsageStatsService } from '../domain/usage-stats.service.ts';

export function usageRoutes(usage: UsageStatsService): Router {
  const router = Router();
  router.get('/usage', async (req, res) => {
    const query = parseOr400(usageStatsQuery, req.query, 'query');
    res.json(await usage.stats(callerOf(req).accountId, query));
  });
  return router;
}
