import type { OutboxPlan } from '@dap/mongo';
import type { ModelsConfig } from '../config.ts';
import { MODELS_COLLECTION } from '../persistence/model.repository.ts';
import { PREDICTION_LOG_COLLECTION } from '../persistence/prediction-log.repository.ts';

/**
 * What the models service publishes: model.ready and model.failed from the models' outboxes, and one
 * prediction.completed per prediction from its log entry. Writes hand their events over (one Kafka batch and one
 * bulk clear per pass, however many predictions, lingering up to OUTBOX_LINGER_MS); the sweep for what a crashed
 * writer left runs every OUTBOX_INTERVAL_MS.
 */
export function modelsOutbox(config: Pick<ModelsConfig, 'OUTBOX_INTERVAL_MS' | 'OUTBOX_LINGER_MS'>): OutboxPlan {
  return {
    collections: [MODELS_COLLECTION, PREDICTION_LOG_COLLECTION],
    intervalMs: config.OUTBOX_INTERVAL_MS,
    lingerMs: config.OUTBOX_LINGER_MS,
    insertOnly: [PREDICTION_LOG_COLLECTION], // entries are written once, never updated
  };
}
