import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { parseCidr, type Endpoint } from '@dap/netguard';

/** Reusable config pieces; each process combines the ones it needs and parses once at start-up. */
const port = z.coerce.number().int().min(0).max(65535);
const bool = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
/** A limit on the size of a file or body, in bytes: from 1 KiB to 1 TiB. */
const sizeLimit = z.coerce
  .number()
  .int()
  .min(1_024)
  .max(1024 ** 4);

export const httpConfig = {
  HOST: z.string().default('127.0.0.1'),
  PORT: port,
  /** Prometheus metrics on a port of their own, reached by the cluster's scraper only; unset: not served. */
  METRICS_PORT: z.preprocess((v) => (v === '' ? undefined : v), port.optional()),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(10 * 1024 * 1024),
};
/** Streamed file uploads (the sources service's upload routes, and the gateway in front of them). */
export const uploadConfig = {
  /** Largest uploaded file; a larger declared Content-Length is refused up front, a body that grows past it is cut (413). */
  UPLOAD_LIMIT_BYTES: sizeLimit.default(2 * 1024 ** 3),
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

/** How the topics of one family are created: partitions, and replication left unset means "fit the cluster". */
export interface TopicLayout {
  partitions: number;
  /** Unset: 3, or the number of brokers when the cluster has fewer (a one-broker local stack gets 1). */
  replicationFactor?: number;
  /** Unset: one less than the replication factor, at most 2 and at least 1. */
  minInsyncReplicas?: number;
}
export type TopicFamily = 'events' | 'deadLetters';
/**
 * Domain-event topics get 12 partitions: a consumer group spreads over at most as many replicas as there are
 * partitions, and 12 covers the largest autoscaled group (models, up to 8) with room, dividing evenly among
 * 2, 3, 4 or 6 replicas. Dead letters are few and read by operators.
 */
export const DEFAULT_TOPIC_LAYOUTS: Record<TopicFamily, TopicLayout> = { events: { partitions: 12 }, deadLetters: { partitions: 3 } };

const partitionCount = z.coerce.number().int().min(1).max(10_000);
const replicaCount = optional(z.coerce.number().int().min(1).max(32));
/** Per topic family: KAFKA_EVENTS_* for the domain-event topics, KAFKA_DLQ_* for the dead-letter topics. */
const kafkaTopicConfig = {
  KAFKA_EVENTS_PARTITIONS: partitionCount.default(DEFAULT_TOPIC_LAYOUTS.events.partitions),
  KAFKA_EVENTS_REPLICATION_FACTOR: replicaCount,
  KAFKA_EVENTS_MIN_INSYNC_REPLICAS: replicaCount,
  KAFKA_DLQ_PARTITIONS: partitionCount.default(DEFAULT_TOPIC_LAYOUTS.deadLetters.partitions),
  KAFKA_DLQ_REPLICATION_FACTOR: replicaCount,
  KAFKA_DLQ_MIN_INSYNC_REPLICAS: replicaCount,
};
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
  ...kafkaTopicConfig,
  ...startupConfig,
};
export const redisConfig = {
  /** `redis://`, `rediss://` (TLS), or `redis+sentinel://[user:password@]host:26379[,…]/<master name>[/<db>]`. */
  REDIS_URL: z.string().regex(/^rediss?(\+sentinel)?:\/\//, 'a redis://, rediss://, redis+sentinel:// or rediss+sentinel:// URL'),
  /** Sentinels (host:port, comma-separated) naming the master; REDIS_URL then gives only credentials, database and TLS. */
  REDIS_SENTINELS: optional(
    z.string().transform((s) =>
      s
        .split(',')
        .map((h) => h.trim())
        .filter(Boolean),
    ),
  ),
  REDIS_SENTINEL_NAME: optional(z.string()),
  /** For Sentinels that require a password of their own. */
  REDIS_SENTINEL_PASSWORD: optional(z.string()),
};

/** What `createRedis` of @dap/redis takes. */
export function redisTargetOf(c: { REDIS_URL: string; REDIS_SENTINELS?: string[]; REDIS_SENTINEL_NAME?: string; REDIS_SENTINEL_PASSWORD?: string }) {
  return { url: c.REDIS_URL, sentinels: c.REDIS_SENTINELS, sentinelName: c.REDIS_SENTINEL_NAME, sentinelPassword: c.REDIS_SENTINEL_PASSWORD };
}
export const internalAuthConfig = {
  INTERNAL_SECRET: z.string().min(32, 'INTERNAL_SECRET must be at least 32 characters'),
};
export const datasetConfig = {
  DATASET_DIR: z.string().min(1),
};
/** A DuckDB size setting (a memory limit, a spill cap): a number and a unit, like 512MB or 4GiB. */
export const duckdbSize = z.string().regex(/^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i, 'a size like 512MB or 4GB');

/** For the processes that run DuckDB: where a query or load spills once it outgrows its memory limit. */
export const duckdbSpillConfig = {
  /**
   * A writable directory on a volume with room to spill (an emptyDir in Kubernetes): without it DuckDB spills
   * into `.tmp` under the working directory, which the images keep read-only. Each DuckDB instance takes a
   * subdirectory of its own and removes it when it closes.
   */
  DUCKDB_TEMP_DIR: z.string().min(1).default(join(tmpdir(), 'dap-duckdb')),
  /** The most DuckDB may spill (e.g. 4GB); keep it under the volume's size. DuckDB's default: 90% of free space. */
  DUCKDB_MAX_TEMP_SIZE: optional(duckdbSize),
};

/** `host:port`, `[v6]:port`: one of the platform's own endpoints. */
function parseEndpoint(value: string): Endpoint | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[2]) : 0;
  return m && port >= 1 && port <= 65535 ? { host: m[1]!.replace(/^\[|\]$/g, ''), port } : null;
}

const commaList = (s: string) =>
  s
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);

export const outboundConfig = {
  /**
   * Which loopback, private and unique-local ranges outbound connections (sources, webhooks) may reach: a
   * comma-separated list of CIDRs (`10.20.0.0/16,fd00:1::/32`); `true` means every such range and `false`
   * (the default) none. Link-local and cloud metadata are refused whatever the list says.
   */
  ALLOW_PRIVATE_TARGETS: z
    .string()
    .default('false')
    .transform((s, ctx): boolean | string[] => {
      const v = s.trim().toLowerCase();
      if (v === '' || v === 'false' || v === '0') return false;
      if (v === 'true' || v === '1') return true;
      const cidrs = commaList(s);
      const bad = cidrs.filter((c) => !parseCidr(c));
      if (bad.length) ctx.addIssue({ code: 'custom', message: `not a CIDR range: ${bad.join(', ')}; give true, false or CIDRs such as 10.0.0.0/8,fd00::/8` });
      return cidrs;
    }),
  /**
   * The platform's endpoints this process does not know from its own settings (Redis, the gateway, the other
   * services), as `host:port,…`; outbound connections never reach them, nor MongoDB, Kafka or this process.
   */
  PLATFORM_ENDPOINTS: z
    .string()
    .default('')
    .transform((s, ctx) => {
      const parts = commaList(s);
      const parsed = parts.map(parseEndpoint);
      const bad = parts.filter((_, i) => !parsed[i]);
      if (bad.length) ctx.addIssue({ code: 'custom', message: `not host:port: ${bad.join(', ')}` });
      return parsed.filter((e): e is Endpoint => e !== null);
    }),
};

/**
 * The hosts and ports a URL names, several where the scheme allows a list (`mongodb://u:p@a:1,b:2/db`,
 * `redis+sentinel://s1:26379,s2/master`), which `new URL` refuses; a host without a port gets `defaultPort`.
 */
export function hostsOfUrl(url: string, defaultPort: number): Endpoint[] {
  const rest = url.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  const authority = rest.split(/[/?#]/)[0] ?? '';
  const hosts = authority.slice(authority.lastIndexOf('@') + 1);
  return commaList(hosts)
    .map((h) => parseEndpoint(h) ?? (h ? { host: h.replace(/^\[|\]$/g, ''), port: defaultPort } : null))
    .filter((e): e is Endpoint => e !== null);
}

/**
 * Every endpoint of the platform that a process's configuration names: its own HTTP address, its MongoDB,
 * Kafka brokers and Redis, and PLATFORM_ENDPOINTS. The SSRF guard refuses them whatever private ranges
 * ALLOW_PRIVATE_TARGETS allows (docs/architecture.md, outbound connections).
 */
export function platformEndpointsOf(c: {
  HOST?: string;
  PORT?: number;
  MONGO_URL?: string;
  KAFKA_BROKERS?: string[];
  REDIS_URL?: string;
  REDIS_SENTINELS?: string[];
  PLATFORM_ENDPOINTS?: Endpoint[];
}): Endpoint[] {
  const out: Endpoint[] = [];
  if (c.HOST && c.PORT) out.push({ host: c.HOST, port: c.PORT });
  if (c.MONGO_URL) out.push(...hostsOfUrl(c.MONGO_URL, 27017));
  for (const b of c.KAFKA_BROKERS ?? []) {
    const e = parseEndpoint(b);
    if (e) out.push(e);
  }
  // Redis, or its Sentinels (the master and replicas they name are discovered: list them in PLATFORM_ENDPOINTS).
  if (c.REDIS_URL) out.push(...hostsOfUrl(c.REDIS_URL, /^rediss?\+sentinel:/.test(c.REDIS_URL) ? 26379 : 6379));
  for (const s of c.REDIS_SENTINELS ?? []) out.push(...hostsOfUrl(s, 26379));
  out.push(...(c.PLATFORM_ENDPOINTS ?? []));
  return out;
}

export { bool as boolFromEnv, port as portFromEnv, sizeLimit as sizeLimitFromEnv };

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
  {
    piece: 'REDIS_SENTINELS',
    check: (c) => {
      const sentinels = c.REDIS_SENTINELS !== undefined;
      const name = c.REDIS_SENTINEL_NAME !== undefined;
      if (sentinels !== name) return [{ path: sentinels ? 'REDIS_SENTINEL_NAME' : 'REDIS_SENTINELS', message: 'REDIS_SENTINELS and REDIS_SENTINEL_NAME go together' }];
      if (sentinels && String(c.REDIS_URL).includes('+sentinel:')) return [{ path: 'REDIS_SENTINELS', message: 'name the Sentinels in REDIS_URL or in REDIS_SENTINELS, not both' }];
      return [];
    },
  },
  ...(['KAFKA_EVENTS', 'KAFKA_DLQ'] as const).map((family) => ({
    piece: `${family}_PARTITIONS`,
    check: (c: Record<string, unknown>): Issue[] => {
      const rf = c[`${family}_REPLICATION_FACTOR`] as number | undefined;
      const isr = c[`${family}_MIN_INSYNC_REPLICAS`] as number | undefined;
      return rf !== undefined && isr !== undefined && isr > rf
        ? [{ path: `${family}_MIN_INSYNC_REPLICAS`, message: `at most ${family}_REPLICATION_FACTOR (${rf}): no write could ever be acknowledged` }]
        : [];
    },
  })),
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

/** `k=v,k2=v2` (OTEL_EXPORTER_OTLP_HEADERS): values may be percent-encoded, as the OpenTelemetry spec has it. */
const otlpHeaders = z.string().transform((raw, ctx) => {
  const out: Record<string, string> = {};
  for (const pair of commaList(raw)) {
    const i = pair.indexOf('=');
    const key = i > 0 ? pair.slice(0, i).trim() : '';
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(key)) {
      ctx.addIssue({ code: 'custom', message: `headers like key=value,key2=value2; not ${JSON.stringify(pair.slice(0, 40))}` });
      return z.NEVER;
    }
    try {
      out[key.toLowerCase()] = decodeURIComponent(pair.slice(i + 1).trim());
    } catch {
      ctx.addIssue({ code: 'custom', message: `the value of ${key} is not valid percent-encoding` });
      return z.NEVER;
    }
  }
  return out;
});

/**
 * OpenTelemetry tracing, under the standard variable names. With no endpoint nothing is recorded or exported;
 * a client's `traceparent` is still passed on to events and webhook deliveries (see docs/architecture.md).
 */
export const tracingConfig = {
  /** An OTLP/HTTP (JSON) receiver's base URL, e.g. http://otel-collector:4318; spans go to `<url>/v1/traces`. */
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(
    z
      .string()
      .url()
      .regex(/^https?:\/\//, 'an http(s) URL'),
  ),
  /** The full traces URL, when it is not `<endpoint>/v1/traces`. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optional(
    z
      .string()
      .url()
      .regex(/^https?:\/\//, 'an http(s) URL'),
  ),
  OTEL_EXPORTER_OTLP_HEADERS: optional(otlpHeaders),
  /** The service name spans are reported under; default the process's own (gateway, sources…). */
  OTEL_SERVICE_NAME: optional(z.string().min(1).max(200)),
  /** The share of new traces recorded (0 to 1); a request whose `traceparent` is sampled or not keeps that decision. */
  OTEL_TRACES_SAMPLER_ARG: z.preprocess((v) => (v === '' ? undefined : v), z.coerce.number().min(0).max(1).default(1)),
  /** How long finished spans wait to be exported in one batch (ms). */
  OTEL_BSP_SCHEDULE_DELAY: z.preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(10).max(600_000).default(5_000)),
};

/** The settings `startTracing` of @dap/tracing takes. */
export function tracingSettingsOf(
  c: {
    OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string | undefined;
    OTEL_EXPORTER_OTLP_HEADERS?: Record<string, string> | undefined;
    OTEL_SERVICE_NAME?: string | undefined;
    OTEL_TRACES_SAMPLER_ARG: number;
    OTEL_BSP_SCHEDULE_DELAY: number;
  },
  service: string,
) {
  return {
    serviceName: c.OTEL_SERVICE_NAME ?? service,
    endpoint: c.OTEL_EXPORTER_OTLP_ENDPOINT,
    tracesEndpoint: c.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    headers: c.OTEL_EXPORTER_OTLP_HEADERS,
    sampleRatio: c.OTEL_TRACES_SAMPLER_ARG,
    exportDelayMs: c.OTEL_BSP_SCHEDULE_DELAY,
  };
}

/** What every backend service reads: HTTP, logging, its MongoDB, Kafka and the gateway's signing secret. */
export function serviceConfigShape(service: string) {
  return {
    ...httpConfig,
    ...logConfig,
    ...mongoConfig,
    ...kafkaConfig,
    ...internalAuthConfig,
    ...tracingConfig,
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
  KAFKA_EVENTS_PARTITIONS?: number;
  KAFKA_EVENTS_REPLICATION_FACTOR?: number;
  KAFKA_EVENTS_MIN_INSYNC_REPLICAS?: number;
  KAFKA_DLQ_PARTITIONS?: number;
  KAFKA_DLQ_REPLICATION_FACTOR?: number;
  KAFKA_DLQ_MIN_INSYNC_REPLICAS?: number;
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
    topics: {
      events: layoutOf(c.KAFKA_EVENTS_PARTITIONS ?? DEFAULT_TOPIC_LAYOUTS.events.partitions, c.KAFKA_EVENTS_REPLICATION_FACTOR, c.KAFKA_EVENTS_MIN_INSYNC_REPLICAS),
      deadLetters: layoutOf(c.KAFKA_DLQ_PARTITIONS ?? DEFAULT_TOPIC_LAYOUTS.deadLetters.partitions, c.KAFKA_DLQ_REPLICATION_FACTOR, c.KAFKA_DLQ_MIN_INSYNC_REPLICAS),
    } satisfies Record<TopicFamily, TopicLayout>,
    startupTimeoutMs: c.STARTUP_TIMEOUT_MS,
  };
}

/** A layout without the keys left unset (the type has them optional, not undefined). */
function layoutOf(partitions: number, replicationFactor: number | undefined, minInsyncReplicas: number | undefined): TopicLayout {
  return { partitions, ...(replicationFactor !== undefined ? { replicationFactor } : {}), ...(minInsyncReplicas !== undefined ? { minInsyncReplicas } : {}) };
}

export * from './startup.ts';
