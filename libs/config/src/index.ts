import { z } from 'zod';

/** Reusable config pieces; each process combines the ones it needs and parses once at start-up. */
const port = z.coerce.number().int().min(0).max(65535);
const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

export const httpConfig = {
  HOST: z.string().default('127.0.0.1'),
  PORT: port,
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(10 * 1024 * 1024),
};
/** Streamed file uploads (the sources service's upload routes, and the gateway in front of them). */
export const uploadConfig = {
  /** Largest uploaded file; a larger declared Content-Length is refused up front, a body that grows past it is cut (413). */
  UPLOAD_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(1024 ** 4)
    .default(2 * 1024 ** 3),
  /**
   * How long one request may take to arrive whole: Node's default (and the JSON routes') 120 s would cut a
   * large upload on a slow link; a stalled one is still cut by the idle timeout.
   */
  UPLOAD_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(24 * 3_600_000)
    .default(3_600_000),
};
export const logConfig = {
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
};
/** An unset variable and an empty one (`KEY=` in a .env file or a manifest) mean the same: not set. */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

export const startupConfig = {
  /** How long start-up keeps retrying MongoDB and Kafka before the process gives up (a loaded machine or a rolling start). */
  STARTUP_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(30_000),
};
export const mongoConfig = {
  MONGO_URL: z.string().startsWith('mongodb'),
  MONGO_DB: z.string().min(1),
  ...startupConfig,
};
export const KAFKA_SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;
export const kafkaConfig = {
  KAFKA_BROKERS: z
    .string()
    .min(1)
    .transform((s) => s.split(',').map((b) => b.trim())),
  KAFKA_CLIENT_ID: z.string().min(1),
  /** Lets test runs isolate their topics on a shared broker. */
  KAFKA_TOPIC_PREFIX: z.string().default(''),
  /** TLS to the brokers (a private CA: NODE_EXTRA_CA_CERTS). */
  KAFKA_SSL: z.preprocess((v) => (v === '' ? undefined : v), bool.default(false)),
  /** SASL authentication; set together with KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD. */
  KAFKA_SASL_MECHANISM: optional(z.enum(KAFKA_SASL_MECHANISMS)),
  KAFKA_SASL_USERNAME: optional(z.string()),
  KAFKA_SASL_PASSWORD: optional(z.string()),
  ...startupConfig,
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
  /** Loopback and private targets are refused unless an operator allows them; link-local and cloud metadata always are. */
  ALLOW_PRIVATE_TARGETS: bool.default(false),
};

export { bool as boolFromEnv, port as portFromEnv };

export class ConfigError extends Error {}

interface Issue {
  path: string;
  message: string;
}

/** Rules across several variables of one piece; each applies when its piece is part of the shape parsed. */
const CROSS_CHECKS: { piece: string; check: (c: Record<string, unknown>) => Issue[] }[] = [
  {
    piece: 'KAFKA_SASL_MECHANISM',
    check: (c) => {
      const set = (k: string) => c[k] !== undefined;
      if (set('KAFKA_SASL_MECHANISM')) {
        return ['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'].filter((k) => !set(k)).map((k) => ({ path: k, message: 'required when KAFKA_SASL_MECHANISM is set' }));
      }
      return ['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'].filter(set).map((k) => ({ path: k, message: 'set KAFKA_SASL_MECHANISM too (plain, scram-sha-256 or scram-sha-512)' }));
    },
  },
];

/** Parses the environment once; a bad value fails start-up with every problem listed. */
export function loadConfig<S extends z.ZodRawShape>(shape: S, env: Record<string, string | undefined> = process.env): z.infer<z.ZodObject<S>> {
  const result = z.object(shape).safeParse(env);
  const issues: Issue[] = result.success
    ? CROSS_CHECKS.filter((r) => r.piece in shape).flatMap((r) => r.check(result.data as Record<string, unknown>))
    : result.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
  if (!result.success || issues.length) {
    throw new ConfigError(`invalid configuration:\n${issues.map((i) => `  ${i.path}: ${i.message}`).join('\n')}`);
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

export type KafkaSaslMechanism = (typeof KAFKA_SASL_MECHANISMS)[number];

/** The parts of a parsed config the Kafka client needs (the shape of @dap/kafka's KafkaSettings). */
export function kafkaSettingsOf(c: {
  KAFKA_BROKERS: string[];
  KAFKA_CLIENT_ID: string;
  KAFKA_TOPIC_PREFIX: string;
  KAFKA_SSL?: boolean;
  KAFKA_SASL_MECHANISM?: KafkaSaslMechanism;
  KAFKA_SASL_USERNAME?: string;
  KAFKA_SASL_PASSWORD?: string;
  STARTUP_TIMEOUT_MS?: number;
}) {
  const { KAFKA_SASL_MECHANISM: mechanism, KAFKA_SASL_USERNAME: username, KAFKA_SASL_PASSWORD: password } = c;
  let sasl: { mechanism: KafkaSaslMechanism; username: string; password: string } | undefined;
  if (mechanism) {
    if (username === undefined || password === undefined) {
      throw new ConfigError('invalid configuration:\n  KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD are required when KAFKA_SASL_MECHANISM is set');
    }
    sasl = { mechanism, username, password };
  }
  return {
    brokers: c.KAFKA_BROKERS,
    clientId: c.KAFKA_CLIENT_ID,
    topicPrefix: c.KAFKA_TOPIC_PREFIX,
    ssl: c.KAFKA_SSL ?? false,
    sasl,
    startupTimeoutMs: c.STARTUP_TIMEOUT_MS,
  };
}

export * from './startup.ts';
