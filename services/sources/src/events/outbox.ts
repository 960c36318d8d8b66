import type { OutboxPlan } from '@dap/mongo';
import { SOURCES_COLLECTION } from '../persistence/source.repository.ts';

/**
 * What the sources service publishes: its sources' events (created, ready, failed, schema changed, deleted),
 * from their documents' outboxes, at the relay's default pace; writers kick a sweep after each write.
 */
export const SOURCES_OUTBOX: OutboxPlan = { collections: [SOURCES_COLLECTION] };
