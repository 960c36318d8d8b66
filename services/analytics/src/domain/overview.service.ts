import { USAGE_DAYS, type OverviewDto } from '@dap/contracts';
import type { SourceProjectionRepository } from '@dap/mongo';
import type { ActivityRepository } from '../persistence/activity.repository.ts';
import type { ReportRepository } from '../persistence/report.repository.ts';
import type { UsageRepository } from '../persistence/usage.repository.ts';

/**
 * The built-in models (forecast and anomaly detection) every account has without training. The models
 * service owns them and emits no event for them, so the count is a constant here (services do not import
 * each other, and no shared library names them yet); trained and uploaded models are counted from their
 * `model.ready` events.
 */
export const BUILTIN_MODEL_COUNT = 2;
export const RECENT_ACTIVITY = 20;

export class OverviewService {
  private readonly sources: SourceProjectionRepository;
  private readonly activity: ActivityRepository;
  private readonly reports: ReportRepository;
  private readonly usage: UsageRepository;

  constructor(deps: { sources: SourceProjectionRepository; activity: ActivityRepository; reports: ReportRepository; usage: UsageRepository }) {
    this.sources = deps.sources;
    this.activity = deps.activity;
    this.reports = deps.reports;
    this.usage = deps.usage;
  }

  async overview(accountId: string, now = new Date()): Promise<OverviewDto> {
    const [sources, rows, reports, readyModels, predictions, created, deleted, deliveries, apiRequestsPerDay, recent] = await Promise.all([
      this.sources.countActive(accountId),
      this.sources.readyRowCount(accountId),
      this.reports.count(accountId),
      this.activity.subjectsOfType(accountId, 'model.ready'),
      this.activity.countOfType(accountId, 'prediction.completed'),
      this.activity.subjectsOfType(accountId, 'webhook.created'),
      this.activity.subjectsOfType(accountId, 'webhook.deleted'),
      this.activity.deliveries(accountId),
      this.usage.perDay(accountId, USAGE_DAYS, now),
      this.activity.recent(accountId, RECENT_ACTIVITY),
    ]);
    let webhooks = 0;
    for (const id of created) if (!deleted.has(id)) webhooks++;
    return {
      counts: {
        sources,
        rows,
        reports,
        // A model retrained to a new version emits model.ready again; it is still one model.
        models: BUILTIN_MODEL_COUNT + readyModels.size,
        predictions,
        webhooks,
        deliveries,
      },
      apiRequestsPerDay,
      recentActivity: recent.map((a) => ({ id: a._id, type: a.type, subject: a.subject, occurredAt: a.occurredAt.toISOString() })),
      generatedAt: now.toISOString(),
    };
  }
}
