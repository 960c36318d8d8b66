import { z } from 'zod';

/** Reusable config pieces; each process combines the ones it needs and parses once at start-up. */
const port = z.coerce.number().int().min(0).max(65535);
const bool = z
  .enum(['true', 'false', '1', '0'])
  .transform((v) => v === 'true' || v === '1');

export const httpConfig = {
  HOST: z.string().default('127.0.0.1'),
  PORT: port,
  BODY_LIMIT_BYTES: z.coerce.number().int().positive().default(10 * 1024 * 1024),
};
export const logConfig = {
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
};
export const mongoConfig = {
  MONGO_URL: z.string().startsWith('mongodb'),
  MONGO_DB: z.string().min(1),
};
export const kafkaConfig = {
  KAFKA_BROKERS: z.string().min(1).transform((s) => s.split(',').map((b) => b.trim())),
  KAFKA_CLIENT_ID: z.string().min(1),
  /** Lets test runs isolate their topics on a shared broker. */
  KAFKA_TOPIC_PREFIX: z.string().default(''),
};
export const redisConfig = {
  REDIS_URL: z.string().startsWith('redis'),
};
export const internalAuthConfig = {
  INTERNAL_SECRET: z.string().min(32, 'INTERNAL_SECRET must be at least 32 characters'),
};
export const datasetConfig = {
  DATASET_DIR: z.string().min(1),
};
export const outboundConfig = {
  /** Loopback and private targets are refused unless an operator allows them (local stack only). */
  ALLOW_PRIVATE_TARGETS: bool.default(false),
};

export { bool as boolFromEnv, port as portFromEnv };

export class ConfigError extends Error {}

/** Parses the environment once; a bad value fails start-up with every problem listed. */
export function loadConfig<S extends z.ZodRawShape>(
  shape: S,
  env: Record<string, string | undefined> = process.env,
): z.infer<z.ZodObject<S>> {
  const result = z.object(shape).safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}

/** What every backend service reads: HTTP, logging, its MongoDB, Kafka and the gateway's signing secret. */
export function serviceConfigShape(service: string) {
  return {
    ...httpConfig,
    ...logConfig,
    ...mongoConfig,
    ...kafkaConfig,
    ...internalAuthConfig,
    MONGO_DB: z.string().min(1).default(`dap_${service}`),
    KAFKA_CLIENT_ID: z.string().min(1).default(service),
  };
}
export type ServiceConfig = z.infer<z.ZodObject<ReturnType<typeof serviceConfigShape>>>;

export function kafkaSettingsOf(c: { KAFKA_BROKERS: string[]; KAFKA_CLIENT_ID: string; KAFKA_TOPIC_PREFIX: string }) {
  return { brokers: c.KAFKA_BROKERS, clientId: c.KAFKA_CLIENT_ID, topicPrefix: c.KAFKA_TOPIC_PREFIX };
}
