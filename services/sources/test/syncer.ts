import { randomBytes } from 'node:crypto';
import type { DatasetStore } from '@dap/datasets';
import type { Logger } from '@dap/logger';
import { OutboundGuard } from '@dap/netguard';
import { uniqueSuffix } from '@dap/testing';
import { DatasetLoader } from '../src/domain/ingest/loader.ts';
import { CredentialCipher } from '../src/persistence/credentials.ts';
import type { SourceRepository } from '../src/persistence/source.repository.ts';
import { SourceSyncer, type SyncerOptions } from '../src/workers/sync/source-syncer.ts';

/** Small limits for tests: 1 MiB bodies, seconds-long deadlines. */
export const TEST_LIMITS = { maxBytes: 1024 ** 2, connectTimeoutMs: 3_000, checkTimeoutMs: 10_000, urlTimeoutMs: 10_000, idleTimeoutMs: 5_000, dbTimeoutMs: 10_000 };

/** What a service built by hand in a test shares with its syncer: a credential cipher, a guard that allows loopback. */
export const testSecurity = () => ({ cipher: new CredentialCipher(randomBytes(32)), guard: new OutboundGuard({ allowPrivate: true }) });

/**
 * A syncer on the given repository and store with test defaults (two slots, an hourly sweep, a one-minute
 * lease); `overrides` set the clock, the retry policy or anything else.
 */
export function testSyncer(
  base: { repo: SourceRepository; store: DatasetStore; logger: Logger } & Pick<SyncerOptions, 'cipher' | 'guard' | 'retry'>,
  overrides: Partial<SyncerOptions> = {},
): SourceSyncer {
  return new SourceSyncer({
    loader: new DatasetLoader(base.store, { parallelMaxBytes: 32 * 1024 ** 2, logger: base.logger }),
    limits: TEST_LIMITS,
    concurrency: 2,
    leaseMs: 60_000,
    sweepMs: 3_600_000,
    instanceId: `test-${uniqueSuffix()}`,
    ...base,
    ...overrides,
  });
}
