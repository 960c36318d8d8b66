import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Which stack `npm test` runs on (`TEST_STACK=auto|local|containers`, auto by default):
 * - `containers`: pinned images started through testcontainers (real MongoDB 7 instead of the local
 *   MongoDB-wire server), where a Docker engine answers;
 * - `local`: the processes of deploy/local/stack.sh, as on a machine without Docker.
 * Either way the tests read the same connection file, `.local/test/stack.env`.
 */
export type TestStackMode = 'local' | 'containers';

/** One version of each engine, here and in docker-compose.yml (test/deploy checks that they agree). */
export const PINNED_IMAGES = {
  mongodb: 'mongo:7.0.14',
  kafka: 'apache/kafka:3.9.2',
  redis: 'redis:7.4.1',
  postgres: 'postgres:16.4',
  mariadb: 'mariadb:11.4.3',
} as const;

/** The database user, password and name the tests expect (as the local stack creates them). */
const DB = { user: 'dap', password: 'dap-local-pw', name: 'dap' };

export class TestStackError extends Error {}

export function chooseTestStack(setting: string | undefined, dockerReachable: boolean): TestStackMode {
  const value = (setting ?? '').trim() || 'auto';
  switch (value) {
    case 'local':
      return 'local';
    case 'containers':
      if (!dockerReachable) throw new TestStackError('TEST_STACK=containers, but no Docker engine answers (DOCKER_HOST or /var/run/docker.sock); use TEST_STACK=local or auto');
      return 'containers';
    case 'auto':
      return dockerReachable ? 'containers' : 'local';
    default:
      throw new TestStackError(`TEST_STACK must be auto, local or containers (got ${JSON.stringify(value)})`);
  }
}

/** Where a Docker engine would answer: DOCKER_HOST, else the usual sockets. */
export function dockerEndpoint(env: Record<string, string | undefined>): { socketPath: string } | { host: string; port: number } | null {
  const host = env.DOCKER_HOST?.trim();
  if (host) {
    if (host.startsWith('unix://')) return { socketPath: host.slice('unix://'.length) };
    const tcp = /^tcp:\/\/([^:/]+):(\d+)\/?$/.exec(host);
    if (tcp) return { host: tcp[1]!, port: Number(tcp[2]) };
    return null;
  }
  for (const socketPath of ['/var/run/docker.sock', join(homedir(), '.docker/run/docker.sock')]) {
    if (existsSync(socketPath)) return { socketPath };
  }
  return null;
}

/** True when the engine answers its ping (`GET /_ping` → `OK`) within the timeout. */
export function dockerReachable(env: Record<string, string | undefined> = process.env, timeoutMs = 2_000): Promise<boolean> {
  const endpoint = dockerEndpoint(env);
  if (!endpoint) return Promise.resolve(false);
  return new Promise((resolve) => {
    const req = request({ ...endpoint, path: '/_ping', method: 'GET', timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c.slice(0, 16)));
      res.on('end', () => resolve(res.statusCode === 200 && body.trim() === 'OK'));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
    req.end();
  });
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

interface Stoppable {
  stop(): Promise<unknown>;
}

/** Starts the pinned images and returns the connection file's lines and how to stop them. */
async function startContainers(log: (msg: string) => void): Promise<{ env: Record<string, string>; stop: () => Promise<void> }> {
  // Loaded only here: the local mode (every machine without Docker) never loads testcontainers.
  const { GenericContainer, Wait } = await import('testcontainers');
  const { MongoDBContainer } = await import('@testcontainers/mongodb');
  const { RedisContainer } = await import('@testcontainers/redis');
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const { MariaDbContainer } = await import('@testcontainers/mariadb');

  // testcontainers' Kafka module drives Confluent's images; the Apache image is started as a generic container
  // whose advertised listener is the host port it is mapped to (chosen first, so the broker can name it).
  const kafkaPort = await freePort();
  const kafka = new GenericContainer(PINNED_IMAGES.kafka)
    .withExposedPorts({ container: 9092, host: kafkaPort })
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093',
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${kafkaPort}`,
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
    })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/));

  const started: Stoppable[] = [];
  const stop = async () => {
    await Promise.allSettled(started.splice(0).map((c) => c.stop()));
  };
  try {
    log(`starting ${Object.values(PINNED_IMAGES).join(', ')}...`);
    const [mongo, broker, redis, postgres, mariadb] = await Promise.all([
      new MongoDBContainer(PINNED_IMAGES.mongodb).start().then((c) => (started.push(c), c)),
      kafka.start().then((c) => (started.push(c), c)),
      new RedisContainer(PINNED_IMAGES.redis).start().then((c) => (started.push(c), c)),
      new PostgreSqlContainer(PINNED_IMAGES.postgres)
        .withUsername(DB.user)
        .withPassword(DB.password)
        .withDatabase(DB.name)
        .start()
        .then((c) => (started.push(c), c)),
      new MariaDbContainer(PINNED_IMAGES.mariadb)
        .withUsername(DB.user)
        .withUserPassword(DB.password)
        .withDatabase(DB.name)
        .start()
        .then((c) => (started.push(c), c)),
    ]);
    // The module's single-node replica set answers under the container's own name; connect to it directly.
    const mongoUrl = new URL(mongo.getConnectionString());
    mongoUrl.searchParams.set('directConnection', 'true');
    return {
      env: {
        REDIS_URL: redis.getConnectionUrl(),
        KAFKA_BROKERS: `127.0.0.1:${broker.getMappedPort(9092)}`,
        MONGO_URL: mongoUrl.toString(),
        POSTGRES_URL: postgres.getConnectionUri(),
        MYSQL_URL: mariadb.getConnectionUri().replace(/^mariadb:/, 'mysql:'),
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

export function stackEnvFile(root: string): string {
  return join(root, '.local', 'test', 'stack.env');
}

/** Runs `command` with the containers up and the connection file written; stops them afterwards. */
async function runWithContainers(root: string, command: string[]): Promise<number> {
  const log = (msg: string) => process.stdout.write(`[test-stack] ${msg}\n`);
  const stack = await startContainers(log);
  const file = stackEnvFile(root);
  mkdirSync(join(root, '.local', 'test'), { recursive: true });
  writeFileSync(
    file,
    Object.entries(stack.env)
      .map(([k, v]) => `${k}=${v}\n`)
      .join(''),
    { mode: 0o600 },
  );
  log(`containers up; connection file ${file}`);
  try {
    return await new Promise<number>((resolve) => {
      const child = spawn(command[0]!, command.slice(1), { stdio: 'inherit', cwd: root });
      const forward = (signal: NodeJS.Signals) => child.kill(signal);
      process.on('SIGINT', forward).on('SIGTERM', forward);
      child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    });
  } finally {
    log('stopping the containers...');
    await stack.stop();
  }
}

async function main(argv: string[]): Promise<number> {
  const [verb, ...rest] = argv;
  if (verb === 'mode') {
    process.stdout.write(`${chooseTestStack(process.env.TEST_STACK, await dockerReachable())}\n`);
    return 0;
  }
  if (verb === 'run-containers') {
    const command = rest[0] === '--' ? rest.slice(1) : rest;
    if (!command.length) throw new TestStackError('usage: test-stack.ts run-containers -- <command...>');
    return runWithContainers(process.cwd(), command);
  }
  throw new TestStackError('usage: test-stack.ts mode | run-containers -- <command...>');
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`[test-stack] ${err instanceof TestStackError ? err.message : String((err as Error).stack ?? err)}\n`);
      process.exit(2);
    },
  );
}
