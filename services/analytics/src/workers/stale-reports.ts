import type { Lifecycle } from '@dap/lifecycle';
import type { Logger } from '@dap/logger';
import type { ReportsService } from '../domain/reports.service.ts';

const SWEEP_INTERVAL_MS = 60_000;

/**
 * Marks the reports a stopped process left running as failed, so their callers stop polling a report that will
 * never finish: once at start-up, then every minute.
 */
export function startStaleReportSweep(life: Lifecycle, reports: Pick<ReportsService, 'sweepStale'>, logger: Logger): void {
  life.runEvery(
    'stale report sweep',
    SWEEP_INTERVAL_MS,
    async () => {
      const n = await reports.sweepStale();
      if (n) logger.warn({ reports: n }, 'marked reports left running by a stopped process as failed');
    },
    { atStart: true },
  );
}
