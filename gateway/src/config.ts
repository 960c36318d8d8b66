import { isIP } from 'node:net';
import { z } from 'zod';
import { httpConfig, internalAuthConfig, kafkaConfig, loadConfig, logConfig, redisConfig, tracingConfig, uploadConfig } from '@dap/config';

const url = z.string().url();

const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);
/** An address, a CIDR block, or one of Express's named ranges. */
function isProxyEntry(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true;
  const [address, bits, ...rest] = entry.split('/');
  const family = isIP(address ?? '');
  if (!family || rest.length) return false;
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
}

/**
 * Which proxies' `X-Forwarded-For` the gateway believes, so that the per-address limits see the client and not
 * the proxy: empty (the default: clients connect directly, the header is ignored), a hop count (`1` behind one
 * ingress controller that every request passes), or a comma-separated list of the proxies' addresses and CIDR
 * blocks. Never "trust everyone": any client could then choose its address.
 */
export const trustProxy = z
  .string()
  .default('')
  .transform((raw, ctx): false | number | string[] => {
    const value = raw.trim();
    if (value === '' || value === 'false' || value === '0') return false;
    if (/^\d+$/.test(value)) {
      if (Number(value) <= 10) return Number(value);
      ctx.addIssue({ code: 'custom', message: 'a hop count from 0 to 10' });
      return z.NEVER;
    }
    const entries = value.split(',').map((e) => e.trim());
    const bad = entries.filter((e) => !isProxyEntry(e));
    if (bad.length === 0) return entries;
    ctx.addIssue({
      code: 'custom',
      message: `a hop count, or proxy addresses and CIDR blocks (or loopback, linklocal, uniquelocal); not ${bad.map((b) => JSON.stringify(b)).join(', ')}`,
    });
    return z.NEVER;
  });

export const gatewayConfigShape = {
  ...httpConfig,
  ...logConfig,
  ...kafkaConfig,
  ...redisConfig,
  ...internalAuthConfig,
  ...uploadConfig,
  ...tracingConfig,
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
  /**
   * How long a gateway may hold requests it reserved in a busy account's window before it admits them (see
   * rate-limit/leasing.limiter.ts); 0 asks Redis on every request.
   */
  RATE_LIMIT_LEASE_MS: z.coerce.number().int().min(0).max(1_000).default(100),
  /** Per-plan limits, e.g. `starter=20`; overrides the plan table (small limits make exactness tests short). */
  PLAN_LIMITS_OVERRIDE: z
    .string()
    .regex(/^((starter|professional|enterprise)=\d+)(,(starter|professional|enterprise)=\d+)*$/, 'like starter=20,professional=200')
    .optional(),
  /** The proxies in front of the gateway whose X-Forwarded-For names the client (see trustProxy). */
  TRUST_PROXY: trustProxy,
  /** Failed authentications one client address may make per minute before its failures get 429s. */
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().positive().default(30),
  /** Unauthenticated requests (sign-up, login) one client address may make per minute. */
  PUBLIC_REQUESTS_PER_MINUTE: z.coerce.number().int().positive().default(30),
  /** Requests per minute the dashboard (session cookie) may make for one account, apart from the plan's API limit. */
  DASHBOARD_REQUESTS_PER_MINUTE: z.coerce.number().int().positive().default(600),
  /** Origins allowed by CORS (the dashboard's, when it is served from elsewhere); comma-separated. */
  DASHBOARD_ORIGINS: z.string().default(''),
  USAGE_FLUSH_MS: z.coerce.number().int().min(100).default(10_000),
  /**
   * Distinct usage counters (account, key or dashboard, operation) a gateway holds per flush; calls past it
   * are counted on their account's `other` counter, never dropped.
   */
  USAGE_MAX_LINES: z.coerce.number().int().min(1).default(20_000),
  /** The built dashboard (vite build output), served at `/`; relative to the working directory. */
  DASHBOARD_DIR: z.string().min(1).default('gateway/dashboard/dist'),
};
export type GatewayConfig = ReturnType<typeof loadGatewayConfig>;

export function loadGatewayConfig(env: Record<string, string | undefined> = process.env) {
  return loadConfig(gatewayConfigShape, env);
}
