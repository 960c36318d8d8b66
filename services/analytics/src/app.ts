import type { Express } from 'express';
import { createServiceApp, type ServiceAppOptions } from '@dap/http';
import type { InsightsService } from './domain/insights.service.ts';
import type { OverviewService } from './domain/overview.service.ts';
import type { ReportsService } from './domain/reports.service.ts';
import type { UsageStatsService } from './domain/usage-stats.service.ts';
import { insightsRoutes } from './http/insights.routes.ts';
import { overviewRoutes } from './http/overview.routes.ts';
import { reportsRoutes } from './http/reports.routes.ts';
import { usageRoutes } from './http/usage.routes.ts';

export interface AnalyticsAppDeps extends ServiceAppOptions {
  reports: ReportsService;
  overview: OverviewService;
  usageStats: UsageStatsService;
  insights: InsightsService;
}

export function createApp(deps: AnalyticsAppDeps): Express {
  return createServiceApp(deps, [
    ['/v1/analytics', reportsRoutes(deps.reports, deps.logger)],
    ['/v1/analytics', overviewRoutes(deps.overview)],
    ['/v1/analytics', usageRoutes(deps.usageStats)],
    ['/v1/analytics', insightsRoutes(deps.insights)],
  ]);
}
