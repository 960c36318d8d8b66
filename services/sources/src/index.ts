import { kafkaSettingsOf } from '@dap/config';
import { DatasetStore } from '@dap/datasets';
import { listen } from '@dap/http';
import { connectEventing } from '@dap/kafka';
import { createLogger, type Logger } from '@dap/logger';
import { connectMongo, OutboxRelay } from '@dap/mongo';
import { createApp } from './app.ts';
import type { SourcesConfig } from './config.ts';
import { SourceService } from './domain/source.service.ts';
import { SourceRepository } from './persistence/source.repository.ts';
import { SourceSyncer } from './sync/source-syncer.ts';

export { loadSourcesConfig, type SourcesConfig } from './config.ts';

export interface RunningSources {
  url: string;
  port: number;
  logger: Logger;
  store: DatasetStore;
  repo: SourceRepository;
  relay: OutboxRelay;
  syncer: SourceSyncer;
  stop(): Promise<void>;
}

/** Composition root: config → clients → repository → domain → app, then the relay and the background syncs. */
export async function startSources(config: SourcesConfig, deps: { logger?: Logger } = {}): Promise<RunningSources> {
  const logger = deps.logger ?? createLogger({ name: 'sources', level: config.LOG_LEVEL });
  const cleanup: Array<() => Promise<void> | void> = [];
  const closeAll = async () => {
    for (const step of cleanup.reverse()) {
      try {
        await step();
      } catch (err) {
        logger.warn({ err }, 'shutdown step failed');
      }
    }
    cleanup.length = 0;
  };
  try {
    const mongo = await connectMongo(config.MONGO_URL, config.MONGO_DB);
    cleanup.push(() => mongo.close());
    const eventing = await connectEventing(kafkaSettingsOf(config), logger);
    cleanup.push(() => eventing.close());
    const store = await DatasetStore.open(config.DATASET_DIR);
    cleanup.push(() => store.duck.close());

    let relay: OutboxRelay | null = null;
    const repo = new SourceRepository(mongo.db, () => relay?.kick());
    await repo.ensureIndexes();
    relay = new OutboxRelay({ collections: [repo.coll.raw], publisher: eventing.producer, logger });
    const outbox = relay;
    cleanup.push(async () => {
      await outbox.stop();
      await outbox.flush();
    });

    const syncer = new SourceSyncer({
      repo,
      store,
      logger,
      concurrency: config.SYNC_CONCURRENCY,
      leaseMs: config.SYNC_LEASE_MS,
      sweepMs: config.SYNC_SWEEP_MS,
      instanceId: config.INSTANCE_ID,
    });
    cleanup.push(() => syncer.stop());
    const service = new SourceService({ repo, store, syncer, logger });
    const app = createApp({
      logger,
      bodyLimitBytes: config.BODY_LIMIT_BYTES,
      internalSecret: config.INTERNAL_SECRET,
      service,
      ready: () => mongo.ping(),
    });
    const server = await listen(app, config.HOST, config.PORT);
    cleanup.push(() => server.close());
    outbox.start();
    await syncer.start();
    logger.info({ url: server.url, syncConcurrency: config.SYNC_CONCURRENCY }, 'sources service listening');
    return { url: server.url, port: server.port, logger, store, repo, relay: outbox, syncer, stop: closeAll };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
