import type { OutboxPlan } from '@dap/mongo';
import { REPORTS_COLLECTION } from '../persistence/report.repository.ts';

/** What the analytics service publishes: report.completed and report.failed, from the reports' outboxes, at the relay's default pace. */
export const ANALYTICS_OUTBOX: OutboxPlan = { collections: [REPORTS_COLLECTION] };
