import type { Db } from 'mongodb';
import type { Lifecycle } from '@dap/lifecycle';
import type { Logger } from '@dap/logger';
import { connectMongo, type MongoHandle } from './client.ts';
import { OutboxRelay, type EventPublisher, type OutboxRelayOptions, type StagedEntry } from './outbox.ts';

/** A service's MongoDB client, opened through its lifecycle (so a failed start-up or stop() closes it). */
export function openMongo(life: Lifecycle, config: { MONGO_URL: string; MONGO_DB: string; STARTUP_TIMEOUT_MS?: number }, logger: Logger): Promise<MongoHandle> {
  return life.open(
    'mongodb',
    () => connectMongo(config.MONGO_URL, config.MONGO_DB, { logger, startupTimeoutMs: config.STARTUP_TIMEOUT_MS }),
    (m) => m.close(),
  );
}

/**
 * What a service's relay publishes and how: the collections (by name) whose documents carry its events, and
 * its timing. Each service states its own in `events/outbox.ts` (docs/architecture.md, "Events").
 */
export type OutboxPlan<E extends StagedEntry = StagedEntry> = Omit<OutboxRelayOptions<E>, 'collections' | 'publisher' | 'logger'> & {
  collections: readonly string[];
};

/** The relay a service's plan describes, over its database; writers hand it their events, startOutboxRelay starts it. */
export function outboxRelayOf<E extends StagedEntry = StagedEntry>(db: Db, plan: OutboxPlan<E>, publisher: EventPublisher, logger: Logger): OutboxRelay<E> {
  return new OutboxRelay<E>({ ...plan, collections: plan.collections.map((name) => db.collection(name)), publisher, logger });
}

/**
 * Starts a service's outbox relay and registers its stop: polling ends, then what is still waiting is
 * published; what a failed flush leaves stays in the documents for the next start. Refuses to start (after the
 * repositories created their indexes) while a swept collection lacks OUTBOX_PENDING_INDEX.
 */
export async function startOutboxRelay<E extends StagedEntry>(life: Lifecycle, relay: OutboxRelay<E>, logger: Logger): Promise<void> {
  const unindexed = await relay.unindexedSweeps();
  if (unindexed.length) throw new Error(`outbox relay: no index on _outboxPending in ${unindexed.join(', ')} (declare OUTBOX_PENDING_INDEX)`);
  relay.start();
  life.onStop('outbox relay', async () => {
    await relay.stop();
    await relay.flush().catch((err: unknown) => logger.warn({ err }, 'outbox flush at shutdown failed; the next start publishes'));
  });
}
