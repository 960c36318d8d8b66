import type { Db } from 'mongodb';
import type { OutboxPlan } from '@dap/mongo';
import { claimTtlMsOf, type WebhooksConfig } from '../config.ts';
import { DELIVERIES_COLLECTION, DELIVERY_OUTBOX, recordedEntries, type DeliveryDoc, type OutboxEntry } from '../persistence/delivery.repository.ts';
import { ENDPOINTS_COLLECTION } from '../persistence/endpoint.repository.ts';

/**
 * What the webhooks service publishes, through one relay: endpoint events from the endpoints' outboxes; every
 * final delivery's delivery.completed, staged per batch of record writes and relayed from memory; and what
 * older versions left on the deliveries themselves, swept at start only.
 */
export function webhooksOutbox(db: Db, config: WebhooksConfig): OutboxPlan<OutboxEntry> {
  return {
    collections: [ENDPOINTS_COLLECTION, DELIVERIES_COLLECTION],
    insertOnly: [DELIVERIES_COLLECTION],
    sweptAtStartOnly: [DELIVERIES_COLLECTION],
    intervalMs: 1_000,
    staged: {
      collection: db.collection(DELIVERY_OUTBOX),
      instance: config.INSTANCE_ID,
      staleMs: claimTtlMsOf(config),
      verify: recordedEntries(db.collection<DeliveryDoc>(DELIVERIES_COLLECTION)),
      lingerMs: 50,
    },
  };
}
