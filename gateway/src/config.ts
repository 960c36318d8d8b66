import { z } from 'zod';
import { httpConfig, internalAuthConfig, kafkaConfig, loadConfig, logConfig, redisConfig, uploadConfig } from '@dap/config';

const url = z.string().url();

export const gatewayConfigShape = {
  ...httpConfig,
  ...logConfig,
  ...kafkaConfig,
  ...redisConfig,
  ...internalAuthConfig,
  ...uploadConfig,
  /** A streamed upload that sends nothing for this long is cut. */
  UPLOAD_IDLE_TIMEOUT_MS: z.coerce.number().int().min(500).max(3_600_000).default(60_000),
  KAFKA_CLIENT_ID: z.string().default('gateway'),
  ACCOUNTS_URL: url,
  SOURCES_URL: url,
  ANALYTICS_URL: url,
  MODELS_URL: url,
  WEBHOOKS_URL: url,
  /** How long a verified key is trusted without asking accounts again; revocations evict at once. */
  KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).default(30_000),
  /** Verified keys held in each gateway's memory at most (least recently used out first; Redis holds the rest). */
  KEY_CACHE_MAX_ENTRIES: z.coerce.number().int().min(1).default(50_000),
  UPSTREAM_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  RATE_LIMIT_WINDOW_MS: z.coerce.number().int().positive().default(60_000),
  /** Per-plan limits, e.g. `starter=20`; overrides the plan table (small limits make exactness tests short). */
  PLAN_LIMITS_OVERRIDE: z
    .string()
    .regex(/^((starter|professional|enterprise)=\d+)(,(starter|professional|enterprise)=\d+)*$/, 'like starter=20,professional=200')
    .optional(),
  /** Failed authentications one client address may make per minute before it gets 429s. */
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().positive().default(30),
  /** Unauthenticated requests (sign-up, login) one client address may make per minute. */
  PUBLIC_REQUESTS_PER_MINUTE: z.coerce.number().int().positive().default(30),
  /** Origins allowed by CORS (the dashboard's, when it is served from elsewhere); comma-separated. */
  DASHBOARD_ORIGINS: z.string().default(''),
  USAGE_FLUSH_MS: z.coerce.number().int().min(100).default(10_000),
  /** The built dashboard (vite build output), served at `/`; relative to the working directory. */
  DASHBOARD_DIR: z.string().min(1).default('gateway/dashboard/dist'),
};
export type GatewayConfig = ReturnType<typeof loadGatewayConfig>;

export function loadGatewayConfig(env: Record<string, string | undefined> = process.env) {
  return loadConfig(gatewayConfigShape, env);
}
