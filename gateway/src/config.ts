import { z } from 'zod';
import { httpConfig, internalAuthConfig, kafkaConfig, loadConfig, logConfig, redisConfig } from '@dap/config';

const url = z.string().url();

export const gatewayConfigShape = {
  ...httpConfig,
  ...logConfig,
  ...kafkaConfig,
  ...redisConfig,
  ...internalAuthConfig,
  KAFKA_CLIENT_ID: z.string().default('gateway'),
  ACCOUNTS_URL: url,
  SOURCES_URL: url,
  ANALYTICS_URL: url,
  MODELS_URL: url,
  WEBHOOKS_URL: url,
  /** How long a verified key is trusted without asking accounts again; revocations evict at once. */
  KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).default(30_000),
  UPSTREAM_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  RATE_LIMIT_WINDOW_MS: z.coerce.number().int().positive().default(60_000),
};
export type GatewayConfig = ReturnType<typeof loadGatewayConfig>;

export function loadGatewayConfig(env: Record<string, string | undefined> = process.env) {
  return loadConfig(gatewayConfigShape, env);
}
