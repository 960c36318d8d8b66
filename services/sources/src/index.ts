import { kafkaSettingsOf } from '@dap/config';
import { DatasetStore } from '@dap/datasets';
import { listen } from '@dap/http';
import { connectEventing } from '@dap/kafka';
import { createLogger, type Logger } from '@dap/logger';
import { connectMongo, OutboxRelay } from '@dap/mongo';
import { OutboundGuard } from '@dap/netguard';
import { createApp } from './app.ts';
import type { SourcesConfig } from './config.ts';
import type { RemoteLimits } from './connectors/index.ts';
import { SourceService } from './domain/source.service.ts';
import { DatasetLoader } from './ingest/loader.ts';
import { DownloadWorker } from './outbound/download-worker.ts';
import { SourceRepository } from './persistence/source.repository.ts';
import { CredentialCipher } from './secrets/credentials.ts';
import { SourceSyncer } from './sync/source-syncer.ts';

export { loadSourcesConfig, type SourcesConfig } from './config.ts';

export function remoteLimitsOf(config: SourcesConfig): RemoteLimits {
  return {
    maxBytes: config.SOURCE_MAX_BYTES,
    connectTimeoutMs: config.SOURCE_CONNECT_TIMEOUT_MS,
    checkTimeoutMs: config.SOURCE_CHECK_TIMEOUT_MS,
    urlTimeoutMs: config.SOURCE_URL_TIMEOUT_MS,
    idleTimeoutMs: config.SOURCE_IDLE_TIMEOUT_MS,
    dbTimeoutMs: config.SOURCE_DB_TIMEOUT_MS,
  };
}

export interface RunningSources {
  url: string;
  port: number;
  logger: Logger;
  store: DatasetStore;
  guard: OutboundGuard;
  repo: SourceRepository;
  relay: OutboxRelay;
  syncer: SourceSyncer;
  stop(): Promise<void>;
}

/** Composition root: config → clients → repository → domain → app, then the relay and the background syncs. */
export async function startSources(config: SourcesConfig, deps: { logger?: Logger; guard?: OutboundGuard } = {}): Promise<RunningSources> {
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
    const mongo = await connectMongo(config.MONGO_URL, config.MONGO_DB, { logger, startupTimeoutMs: config.STARTUP_TIMEOUT_MS });
    cleanup.push(() => mongo.close());
    const eventing = await connectEventing(kafkaSettingsOf(config), logger);
    cleanup.push(() => eventing.close());
    const store = await DatasetStore.open(config.DATASET_DIR, { memoryLimit: config.DUCKDB_MEMORY_LIMIT });
    cleanup.push(() => store.duck.close());
    const loader = new DatasetLoader(store, { parallelMaxBytes: config.INGEST_PARALLEL_MAX_BYTES, logger });
    const guard = deps.guard ?? new OutboundGuard({ allowPrivate: config.ALLOW_PRIVATE_TARGETS });
    const cipher = config.SOURCE_CREDENTIALS_KEY ? new CredentialCipher(config.SOURCE_CREDENTIALS_KEY) : null;
    if (!cipher) logger.warn('SOURCE_CREDENTIALS_KEY is not set: URL and database sources are refused');
    const limits = remoteLimitsOf(config);
    const shutdown = new AbortController();
    cleanup.push(() => shutdown.abort());

    let relay: OutboxRelay | null = null;
    const repo = new SourceRepository(mongo.db, () => relay?.kick());
    await repo.ensureIndexes();
    relay = new OutboxRelay({ collections: [repo.coll.raw], publisher: eventing.producer, logger });
    const outbox = relay;
    cleanup.push(async () => {
      await outbox.stop();
      await outbox.flush();
    });

    const downloads = new DownloadWorker({ logger });
    cleanup.push(() => downloads.stop());
    const syncer = new SourceSyncer({
      repo,
      store,
      loader,
      cipher,
      guard,
      limits,
      downloads,
      logger,
      concurrency: config.SYNC_CONCURRENCY,
      leaseMs: config.SYNC_LEASE_MS,
      sweepMs: config.SYNC_SWEEP_MS,
      instanceId: config.INSTANCE_ID,
    });
    cleanup.push(() => syncer.stop());
    const service = new SourceService({ repo, store, syncer, logger, cipher, guard, limits, shutdown: shutdown.signal });
    const app = createApp({
      logger,
      bodyLimitBytes: config.BODY_LIMIT_BYTES,
      internalSecret: config.INTERNAL_SECRET,
      service,
      uploads: { maxBytes: config.UPLOAD_LIMIT_BYTES, idleTimeoutMs: config.SOURCE_IDLE_TIMEOUT_MS },
      ready: () => mongo.ping(),
    });
    const server = await listen(app, config.HOST, config.PORT, { requestTimeoutMs: config.UPLOAD_TIMEOUT_MS });
    cleanup.push(() => server.close());
    outbox.start();
    await syncer.start();
    logger.info({ url: server.url, syncConcurrency: config.SYNC_CONCURRENCY }, 'sources service listening');
    return { url: server.url, port: server.port, logger, store, guard, repo, relay: outbox, syncer, stop: closeAll };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
