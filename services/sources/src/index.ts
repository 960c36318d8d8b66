import { platformEndpointsOf } from '@dap/config';
import { startService } from '@dap/lifecycle';
import { DatasetStore } from '@dap/datasets';
import { addressOf, openHttpServer, type ServiceAddress } from '@dap/http';
import { openEventing } from '@dap/kafka';
import type { Logger } from '@dap/logger';
import { openMongo, outboxRelayOf, startOutboxRelay, type OutboxRelay } from '@dap/mongo';
import { OutboundGuard } from '@dap/netguard';
import { createApp } from './app.ts';
import type { SourcesConfig } from './config.ts';
import type { RemoteLimits } from './domain/connectors/index.ts';
import { SourceService } from './domain/source.service.ts';
import { DatasetLoader } from './domain/ingest/loader.ts';
import { SOURCES_OUTBOX } from './events/outbox.ts';
import { DownloadWorker } from './workers/download/download-worker.ts';
import { SourceRepository } from './persistence/source.repository.ts';
import { CredentialCipher } from './persistence/credentials.ts';
import { startRetiredFileSweep } from './workers/retired-files.ts';
import { SourceSyncer } from './workers/sync/source-syncer.ts';

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

export interface RunningSources extends ServiceAddress {
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
  return startService('sources', config, deps, async (life, logger) => {
    const mongo = await openMongo(life, config, logger);
    const eventing = await openEventing(life, config, logger);
    const store = await life.open(
      'dataset store',
      () =>
        DatasetStore.open(
          config.DATASET_DIR,
          { memoryLimit: config.DUCKDB_MEMORY_LIMIT, tempDirectory: config.DUCKDB_TEMP_DIR, ...(config.DUCKDB_MAX_TEMP_SIZE ? { maxTempSize: config.DUCKDB_MAX_TEMP_SIZE } : {}) },
          { graceMs: config.DATASET_GRACE_MS },
        ),
      (s) => s.duck.close(),
    );
    startRetiredFileSweep(life, store, config.DATASET_GRACE_MS);
    const loader = new DatasetLoader(store, { parallelMaxBytes: config.INGEST_PARALLEL_MAX_BYTES, largeCsvThreads: config.INGEST_LARGE_CSV_THREADS, logger });
    const guard = deps.guard ?? new OutboundGuard({ allowPrivate: config.ALLOW_PRIVATE_TARGETS, platform: platformEndpointsOf(config) });
    const cipher = config.SOURCE_CREDENTIALS_KEY ? new CredentialCipher(config.SOURCE_CREDENTIALS_KEY) : null;
    if (!cipher) logger.warn('SOURCE_CREDENTIALS_KEY is not set: URL and database sources are refused');
    const limits = remoteLimitsOf(config);
    const shutdown = new AbortController();
    life.onStop('outbound calls', () => shutdown.abort());

    let relay: OutboxRelay | null = null;
    const repo = new SourceRepository(mongo.db, () => relay?.kick());
    await repo.ensureIndexes();
    relay = outboxRelayOf(mongo.db, SOURCES_OUTBOX, eventing.producer, logger);
    const outbox = relay;
    await startOutboxRelay(life, outbox, logger);

    const downloads = new DownloadWorker({ logger });
    life.onStop('download worker', () => downloads.stop());
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
      accountConcurrency: config.SYNC_ACCOUNT_CONCURRENCY,
      leaseMs: config.SYNC_LEASE_MS,
      sweepMs: config.SYNC_SWEEP_MS,
      instanceId: config.INSTANCE_ID,
      retry: { backoff: { baseMs: config.SYNC_RETRY_BASE_MS, capMs: config.SYNC_RETRY_CAP_MS, jitter: [0.8, 1.2] }, maxRetries: config.SYNC_RETRY_MAX },
    });
    life.onStop('syncer', () => syncer.stop());
    const service = new SourceService({ repo, store, syncer, logger, cipher, guard, limits, shutdown: shutdown.signal });
    const app = createApp({
      logger,
      bodyLimitBytes: config.BODY_LIMIT_BYTES,
      internalSecret: config.INTERNAL_SECRET,
      service,
      uploads: { maxBytes: config.UPLOAD_LIMIT_BYTES, idleTimeoutMs: config.SOURCE_IDLE_TIMEOUT_MS },
      ready: () => mongo.ping(),
    });
    const server = await openHttpServer(life, app, config, { requestTimeoutMs: config.UPLOAD_TIMEOUT_MS });
    // The port is known only now when the config says 0 (tests); the service's own port is the platform's too.
    guard.platform.add({ host: config.HOST, port: server.port });
    await syncer.start();
    logger.info({ url: server.url, syncConcurrency: config.SYNC_CONCURRENCY }, 'sources service listening');
    logger.info({ privateTargets: guard.allowed.cidrs, platformEndpoints: guard.platform.describe() }, 'outbound connections: private ranges allowed, platform endpoints refused');
    return { ...addressOf(server), logger, store, guard, repo, relay: outbox, syncer, stop: () => life.stop() };
  });
}
