import { z } from 'zod';
import { loadConfig, outboundConfig, serviceConfigShape } from '@dap/config';

/** DESIGN §7: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_RETRY_SCHEDULE_MS = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000] as const;
const FIVE_DAYS_MS = 5 * 24 * 3_600_000;

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** A 32-byte AES key, given as 64 hex characters or as base64. */
export function parseSecretKey(value: string): Buffer | null {
  const s = value.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(s) ? Buffer.from(s, 'hex') : /^[A-Za-z0-9+/_-]+={0,2}$/.test(s) ? Buffer.from(s, 'base64') : null;
  return key && key.length === 32 ? key : null;
}

/** A comma-separated list of delays in ms: the delay before attempt 1, 2, … (so its length is the number of attempts). */
export function parseRetrySchedule(value: string): number[] | null {
  const parts = value.split(',').map((p) => p.trim());
  if (parts.length < 1 || parts.length > 20) return null;
  const delays = parts.map((p) => (/^\d+$/.test(p) ? Number(p) : NaN));
  return delays.every((d) => Number.isSafeInteger(d) && d <= 30 * 24 * 3_600_000) ? delays : null;
}

export const webhooksConfigShape = {
  ...serviceConfigShape('webhooks'),
  ...outboundConfig,
  /** Encrypts endpoint signing secrets at rest (AES-256-GCM). */
  WEBHOOK_SECRET_KEY: z.string().transform((s, ctx) => {
    const key = parseSecretKey(s);
    if (!key) {
      ctx.addIssue({ code: 'custom', message: 'WEBHOOK_SECRET_KEY must be 32 bytes, as 64 hex characters or base64' });
      return z.NEVER;
    }
    return key;
  }),
  WEBHOOK_TIMEOUT_MS: int(50, 120_000).default(15_000),
  WEBHOOK_POLL_MS: int(10, 60_000).default(500),
  WEBHOOK_RETRY_SCHEDULE_MS: z
    .string()
    .default(DEFAULT_RETRY_SCHEDULE_MS.join(','))
    .transform((s, ctx) => {
      const schedule = parseRetrySchedule(s);
      if (!schedule) {
        ctx.addIssue({ code: 'custom', message: 'WEBHOOK_RETRY_SCHEDULE_MS must be 1 to 20 comma-separated delays in ms' });
        return z.NEVER;
      }
      return schedule;
    }),
  WEBHOOK_DISABLE_AFTER_MS: int(1, 365 * 24 * 3_600_000).default(FIVE_DAYS_MS),
  /** Attempts in flight to one endpoint from one instance, so a slow endpoint holds only its own slots. */
  WEBHOOK_ENDPOINT_CONCURRENCY: int(1, 100).default(4),
  /** Attempts in flight from one instance, across endpoints. */
  WEBHOOK_MAX_IN_FLIGHT: int(1, 10_000).default(256),
};

export type WebhooksConfig = ReturnType<typeof loadWebhooksConfig>;

export function loadWebhooksConfig(env: Record<string, string | undefined> = process.env) {
  return loadConfig(webhooksConfigShape, env);
}
