import { startService } from '@dap/lifecycle';
import { DatasetFiles } from '@dap/datasets';
import { addressOf, openHttpServer } from '@dap/http';
import { openEventing, type Consumer } from '@dap/kafka';
import type { Logger } from '@dap/logger';
import { openMongo, outboxRelayOf, SourceProjectionRepository, startOutboxRelay, type OutboxRelay } from '@dap/mongo';
import { createApp } from './app.ts';
import type { AnalyticsConfig } from './config.ts';
import { InsightsService } from './domain/insights.service.ts';
import { OverviewService } from './domain/overview.service.ts';
import { ReportsService } from './domain/reports.service.ts';
import { UsageStatsService } from './domain/usage-stats.service.ts';
import { ANALYTICS_OUTBOX } from './events/outbox.ts';
import { runProjectionConsumer } from './events/projection.consumer.ts';
import { runUsageConsumer } from './events/usage.consumer.ts';
import { ActivityRepository } from './persistence/activity.repository.ts';
import { DashboardRepository } from './persistence/dashboard.repository.ts';
import { InsightRepository } from './persistence/insight.repository.ts';
import { QueryRunner } from './persistence/query.runner.ts';
import { ReportRepository } from './persistence/report.repository.ts';
import { UsageStatsRepository } from './persistence/usage-stats.repository.ts';
import { UsageRepository } from './persistence/usage.repository.ts';
import { startStaleReportSweep } from './workers/stale-reports.ts';

/** MongoDB documents top out at 16 MiB; a stored result stays well below. */
const MAX_RESULT_BYTES = 12 * 1024 * 1024;

export async function startAnalytics(config: AnalyticsConfig, deps: { logger?: Logger } = {}) {
  return startService('analytics', config, deps, async (life, logger) => {
    const mongo = await openMongo(life, config, logger);
    const eventing = await openEventing(life, config, logger);

    let relay: OutboxRelay | null = null;
    const reportRepo = new ReportRepository(mongo.db, (w) => relay?.written(w));
    const sourceRepo = new SourceProjectionRepository(mongo.db);
    const activityRepo = new ActivityRepository(mongo.db);
    const usageRepo = new UsageRepository(mongo.db);
    const usageStatsRepo = new UsageStatsRepository(mongo.db);
    const insightRepo = new InsightRepository(mongo.db);
    const dashboardRepo = new DashboardRepository(mongo.db);
    await Promise.all([
      reportRepo.ensureIndexes(),
      sourceRepo.ensureIndexes(),
      activityRepo.ensureIndexes(),
      usageRepo.ensureIndexes(),
      usageStatsRepo.ensureIndexes(),
      insightRepo.ensureIndexes(),
      dashboardRepo.ensureIndexes(),
    ]);

    const store = new DatasetFiles(config.DATASET_DIR);
    const runner = await life.open(
      'query runner',
      () =>
        QueryRunner.open({
          datasetDir: config.DATASET_DIR,
          memoryLimit: config.DUCKDB_MEMORY_LIMIT,
          threads: config.DUCKDB_THREADS,
          tempDirectory: config.DUCKDB_TEMP_DIR,
          ...(config.DUCKDB_MAX_TEMP_SIZE ? { maxTempSize: config.DUCKDB_MAX_TEMP_SIZE } : {}),
        }),
      (r) => r.close(),
    );

    const outbox = outboxRelayOf(mongo.db, ANALYTICS_OUTBOX, eventing.producer, logger);
    relay = outbox;
    await startOutboxRelay(life, outbox, logger);

    const reports = new ReportsService({
      reports: reportRepo,
      sources: sourceRepo,
      store,
      runner,
      logger,
      limits: {
        budgetMs: config.QUERY_BUDGET_MS,
        timeoutMs: config.QUERY_TIMEOUT_MS,
        maxConcurrent: config.MAX_CONCURRENT_QUERIES,
        maxBytesRead: { starter: config.MAX_QUERY_BYTES_STARTER, professional: config.MAX_QUERY_BYTES_PROFESSIONAL, enterprise: config.MAX_QUERY_BYTES_ENTERPRISE },
        maxResultBytes: MAX_RESULT_BYTES,
      },
    });
    life.onStop('running queries', () => reports.stop());
    const overview = new OverviewService({ sources: sourceRepo, activity: activityRepo, reports: reportRepo, usage: usageRepo });

    const usageStats = new UsageStatsService(usageStatsRepo);
    const insights = new InsightsService({ insights: insightRepo, dashboards: dashboardRepo, reports });

    const app = createApp({ logger, reports, overview, usageStats, insights, internalSecret: config.INTERNAL_SECRET, bodyLimitBytes: config.BODY_LIMIT_BYTES, ready: mongo.ping });
    const server = await openHttpServer(life, app, config);

    // Both groups join side by side (a join takes a moment); whichever started is stopped if the other failed.
    const consumers = await Promise.allSettled([
      runProjectionConsumer(eventing, logger, { sources: sourceRepo, activity: activityRepo }),
      runUsageConsumer(eventing, logger, usageRepo, usageStatsRepo),
    ]);
    for (const c of consumers) if (c.status === 'fulfilled') life.onStop('consumer', () => (c.value as Consumer).disconnect());
    for (const c of consumers) if (c.status === 'rejected') throw c.reason;

    startStaleReportSweep(life, reports, logger);

    logger.info({ url: server.url }, 'analytics listening');
    return {
      ...addressOf(server),
      mongo,
      eventing,
      store,
      reports,
      relay: outbox,
      /** Stops in reverse order: sweeper, consumers, server, running queries, outbox, DuckDB, Kafka, MongoDB. */
      stop: () => life.stop(),
    };
  });
}
