import type { Express } from 'express';
import { createHttpApp, finishApp } from '@dap/http';
import type { Logger } from '@dap/logger';
import type { InsightsService } from './domain/insights.service.ts';
import type { OverviewService } from './domain/overview.service.ts';
import type { ReportsService } from './domain/reports.service.ts';
import type { UsageStatsService } from './domain/usage-stats.service.ts';
import { insightsRoutes } from './http/insights.routes.ts';
import { overviewRoutes } from './http/overview.routes.ts';
import { reportsRoutes } from './http/reports.routes.ts';
import { usageRoutes } from './http/usage.routes.ts';

export interface AnalyticsAppDeps {
  logger: Logger;
  reports: ReportsService;
  overview: OverviewService;
  usageStats: UsageStatsService;
  insights: InsightsService;
  internalSecret: string;
  bodyLimitBytes: number;
  ready: () => Promise<void>;
}

export function createApp(deps: AnalyticsAppDeps): Express {
  const app = createHttpApp({ logger: deps.logger, bodyLimitBytes: deps.bodyLimitBytes, internalSecret: deps.internalSecret, ready: deps.ready });
  app.use('/v1/analytics', reportsRoutes(deps.reports, deps.logger));
  app.use('/v1/analytics', overviewRoutes(deps.overview));
  app.use('/v1/analytics', usageRoutes(deps.usageStats));
  app.use('/v1/analytics', insightsRoutes(deps.insights));
  return finishApp(app, deps.logger);
}
