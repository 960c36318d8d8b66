import { Router } from 'express';
import { callerOf } from '@dap/http';
import type { OverviewService } from '../domain/overview.service.ts';

export function overviewRoutes(overview: OverviewService): Router {
  const router = Router();
  router.get('/overview', async (req, res) => {
    res.json(await overview.overview(callerOf(req).accountId));
  });
  return router;
}
