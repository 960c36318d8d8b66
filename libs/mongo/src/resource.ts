import type { Lifecycle } from '@dap/lifecycle';
import type { Logger } from '@dap/logger';
import { connectMongo, type MongoHandle } from './client.ts';

/** A service's MongoDB client, opened through its lifecycle (so a failed start-up or stop() closes it). */
export function openMongo(life: Lifecycle, config: { MONGO_URL: string; MONGO_DB: string; STARTUP_TIMEOUT_MS?: number }, logger: Logger): Promise<MongoHandle> {
  return life.open(
    'mongodb',
    () => connectMongo(config.MONGO_URL, config.MONGO_DB, { logger, startupTimeoutMs: config.STARTUP_TIMEOUT_MS }),
    (m) => m.close(),
  );
}
