import { hostname } from 'node:os';
import { z } from 'zod';
import { ConfigError, loadConfig, outboundConfig, serviceConfigShape } from '@dap/config';
import { keySchema } from '@dap/crypto';

/** The retry schedule the README documents: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_RETRY_SCHEDULE_MS = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000] as const;
const FIVE_DAYS_MS = 5 * 24 * 3_600_000;
const ONE_DAY_MS = 24 * 3_600_000;

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

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
  WEBHOOK_SECRET_KEY: keySchema,
  WEBHOOK_TIMEOUT_MS: int(50, 120_000).default(15_000),
  /** How often the claim query looks for due retries and leftovers (retries this process scheduled wake it on time). */
  WEBHOOK_POLL_MS: int(10, 60_000).default(2_000),
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
  /** After a rotation, deliveries are signed with the old secret too for this long. */
  WEBHOOK_SECRET_OVERLAP_MS: int(0, 30 * ONE_DAY_MS).default(ONE_DAY_MS),
  /**
   * How long a claim on a delivery lasts before another instance may take it over (a crashed owner's
   * claims lapse after this). Must exceed the attempt timeout; default 2 × timeout + 10 s.
   */
  WEBHOOK_CLAIM_TTL_MS: int(1_000, 3_600_000).optional(),
  /** Names this instance's claims; a restart under the same id takes its dead predecessor's claims back at once. */
  INSTANCE_ID: z.string().min(1).max(200).default(hostname()),
  /** The longest a receiver's Retry-After (on a 429 or 503) holds its endpoint; longer asks are cut to this. */
  WEBHOOK_MAX_RETRY_AFTER_MS: int(0, 24 * 3_600_000).default(3_600_000),
  /** Kafka partitions whose events are fanned out at the same time. */
  WEBHOOK_CONSUMER_CONCURRENCY: int(1, 64).default(3),
  /** Handler attempts before an event goes to the dead-letter topic. */
  WEBHOOK_CONSUMER_MAX_ATTEMPTS: int(1, 20).default(5),
};

/** The claim lease: the configured TTL, which must outlast an attempt, or 2 × timeout + 10 s. */
export function claimTtlMsOf(c: { WEBHOOK_CLAIM_TTL_MS?: number | undefined; WEBHOOK_TIMEOUT_MS: number }): number {
  if (c.WEBHOOK_CLAIM_TTL_MS === undefined) return 2 * c.WEBHOOK_TIMEOUT_MS + 10_000;
  if (c.WEBHOOK_CLAIM_TTL_MS <= c.WEBHOOK_TIMEOUT_MS + 500) {
    throw new ConfigError('invalid configuration:\n  WEBHOOK_CLAIM_TTL_MS: must exceed WEBHOOK_TIMEOUT_MS by more than 500 ms');
  }
  return c.WEBHOOK_CLAIM_TTL_MS;
}

export type WebhooksConfig = ReturnType<typeof loadWebhooksConfig>;

export function loadWebhooksConfig(env: Record<string, string | undefined> = process.env) {
  const config = loadConfig(webhooksConfigShape, env);
  claimTtlMsOf(config); // fails start-up on a lease shorter than an attempt
  return config;
}
