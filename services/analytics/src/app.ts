import type { Express } from 'express';
import { createHttpApp, finishApp } from '@dap/http';
import type { Logger } from '@dap/logger';
import type { OverviewService } from './domain/overview.service.ts';
import type { ReportsService } from './domain/reports.service.ts';
import type { UsageStatsService } from './domain/usage-stats.service.ts';
import { overviewRoutes } from './http/overview.routes.ts';
import { reportsRoutes } from './http/reports.routes.ts';
import { usageRoutes } from './http/usage.routes.ts';

export interface AnalyticsAppDeps {
  logger: Logger;
  reports: ReportsService;
  overview: OverviewService;
  usageStats: UsageStatsService;
  internalSecret: string;
  bodyLimitBytes: number;
  ready: () => Promise<void>;
}

export function createApp(deps: AnalyticsAppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, bodyLimitBytes: deps.bodyLimitBytes, internalSecret: deps.internalSecret, ready: deps.ready });
  app.use('/v1/analytics', reportsRoutes(deps.reports, deps.logger));
  app.use('/v1/analytics', overviewRoutes(deps.overview));
  app.use('/v1/analytics', usageRoutes(deps.usageStats));
  return finishApp(app, deps.logger);
}
