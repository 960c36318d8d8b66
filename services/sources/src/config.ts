import { hostname } from 'node:os';
import { z } from 'zod';
import { datasetConfig, loadConfig, serviceConfigShape } from '@dap/config';

export const sourcesConfigShape = {
  ...serviceConfigShape('sources'),
  ...datasetConfig,
  /** Syncs run in-process, at most this many at once; 0 makes an API-only instance that leaves syncs to others. */
  SYNC_CONCURRENCY: z.coerce.number().int().min(0).max(16).default(2),
  /** A running sync holds its source for this long and renews it; an expired lease means its worker died. */
  SYNC_LEASE_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(60_000),
  /** How often an instance looks for pending syncs and expired leases (it also does so at start-up). */
  /** Names this instance's sync leases; a restarted instance with the same id resumes its own syncs at once. */
  INSTANCE_ID: z.string().min(1).max(200).default(hostname()),
  SYNC_SWEEP_MS: z.coerce.number().int().min(100).max(3_600_000).default(15_000),
};

export type SourcesConfig = z.infer<z.ZodObject<typeof sourcesConfigShape>>;

export function loadSourcesConfig(env: Record<string, string | undefined> = process.env): SourcesConfig {
  return loadConfig(sourcesConfigShape, env);
}
