import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { repoRoot } from '@dap/testing';
import { freePort } from '../../deploy/local/supervisor.ts';
import type { StackUrls } from '../system.ts';

/**
 * A Redis, Kafka and MongoDB-wire server of the fault run's own, on free ports and in a folder of its own,
 * started the way deploy/local/stack.sh starts the shared ones (same jars, same launcher, same Kafka
 * settings). Stopping and starting these disturbs nobody: the dev and test profiles are never touched.
 * Every pid is written under `<dir>/pids` so deploy/local/faults.sh can clean up after a crashed run.
 */
export type Component = 'redis' | 'kafka' | 'mongo';

export interface PrivateStack {
  urls: StackUrls;
  dir: string;
  stop(c: Component, signal?: NodeJS.Signals): Promise<void>;
  start(c: Component): Promise<void>;
  isUp(c: Component): boolean;
  close(): Promise<void>;
}

const root = repoRoot();
const jars = join(root, '.cache', 'jars');

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

async function until(what: string, fn: () => Promise<boolean> | boolean, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) throw new Error(`${what}: the process exited with ${child.exitCode}`);
    try {
      if (await fn()) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what}: not ready within ${timeoutMs} ms`);
}

export async function startPrivateStack(dir: string): Promise<PrivateStack> {
  if (!existsSync(join(jars, 'kafka')) || !existsSync(join(jars, 'mongo-launcher'))) {
    throw new Error('the stack jars are missing: run `bash deploy/local/stack.sh install` first');
  }
  rmSync(dir, { recursive: true, force: true });
  for (const d of ['pids', 'logs', 'redis', 'mongo', 'kafka/data']) mkdirSync(join(dir, d), { recursive: true });
  const ports = { redis: await freePort(), kafka: await freePort(), controller: await freePort(), mongo: await freePort() };
  const children = new Map<Component, ChildProcess>();
  const useMongod = spawnSync('sh', ['-c', 'command -v mongod'], { encoding: 'utf8' }).stdout.trim() !== '';

  const props = join(dir, 'kafka', 'server.properties');
  writeFileSync(
    props,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@127.0.0.1:${ports.controller}`,
      'controller.listener.names=CONTROLLER',
      `listeners=PLAINTEXT://127.0.0.1:${ports.kafka},CONTROLLER://127.0.0.1:${ports.controller}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${ports.kafka}`,
      'inter.broker.listener.name=PLAINTEXT',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      `log.dirs=${join(dir, 'kafka', 'data')}`,
      'auto.create.topics.enable=true',
      'num.partitions=3',
      'offsets.topic.replication.factor=1',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'min.insync.replicas=1',
      'group.initial.rebalance.delay.ms=0',
      '',
    ].join('\n'),
  );
  // Kafka's cluster id: a random UUID in unpadded base64url, which is what StorageTool random-uuid prints.
  const clusterId = randomBytes(16).toString('base64url');
  const format = spawnSync(
    'java',
    [
      '-Xms64m',
      '-Xmx256m',
      `-Dlog4j.configuration=file:${join(root, 'deploy/local/kafka-tools-log4j.properties')}`,
      '-cp',
      `${jars}/kafka/*`,
      'kafka.tools.StorageTool',
      'format',
      '-t',
      clusterId,
      '-c',
      props,
      '--ignore-formatted',
    ],
    { encoding: 'utf8' },
  );
  if (format.status !== 0) throw new Error(`kafka storage format failed: ${format.stderr || format.stdout}`);

  const commands: Record<Component, () => [string, string[]]> = {
    redis: () => ['redis-server', ['--port', String(ports.redis), '--bind', '127.0.0.1', '--dir', join(dir, 'redis'), '--save', '', '--appendonly', 'no', '--daemonize', 'no']],
    mongo: () =>
      useMongod
        ? ['mongod', ['--port', String(ports.mongo), '--bind_ip', '127.0.0.1', '--dbpath', join(dir, 'mongo')]]
        : [
            'java',
            [
              // As deploy/local/stack.sh starts it.
              '-Xms256m',
              '-Xmx1g',
              '-XX:+UseG1GC',
              '-XX:MaxGCPauseMillis=20',
              '-Dorg.slf4j.simpleLogger.log.de.bwaldvogel.mongo.wire.MongoWireProtocolHandler=warn',
              '-cp',
              `${jars}/mongo/*:${jars}/mongo-launcher`,
              'MongoLauncher',
              '127.0.0.1',
              String(ports.mongo),
              join(dir, 'mongo', 'mongo.h2'),
            ],
          ],
    kafka: () => [
      'java',
      [
        '-Xms256m',
        '-Xmx512m',
        '-XX:+UseG1GC',
        '-Djava.awt.headless=true',
        `-Dkafka.logs.dir=${join(dir, 'logs')}`,
        `-Dlog4j.configuration=file:${join(root, 'deploy/local/kafka-log4j.properties')}`,
        '-cp',
        `${jars}/kafka/*`,
        'kafka.Kafka',
        props,
      ],
    ],
  };

  const kafkaReady = async () => {
    const kafka = new Kafka({ brokers: [`127.0.0.1:${ports.kafka}`], clientId: 'faults-probe', logLevel: logLevel.NOTHING, retry: { retries: 0 }, connectionTimeout: 1_000 });
    const admin = kafka.admin();
    try {
      await admin.connect();
      await admin.listTopics();
      return true;
    } finally {
      await admin.disconnect().catch(() => {});
    }
  };
  const ready: Record<Component, () => Promise<boolean>> = {
    redis: () => portOpen(ports.redis),
    mongo: async () => (await portOpen(ports.mongo)) && (useMongod || /MongoLauncher: listening on/.test(readFileSync(join(dir, 'logs', 'mongo.log'), 'utf8'))),
    kafka: async () => (await portOpen(ports.kafka)) && (await kafkaReady()),
  };

  const running = (c: Component) => {
    const child = children.get(c);
    return Boolean(child && child.exitCode === null && child.signalCode === null);
  };
  const start = async (c: Component) => {
    if (running(c)) return;
    const [cmd, args] = commands[c]();
    const log = createWriteStream(join(dir, 'logs', `${c}.log`), { flags: 'a' });
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    writeFileSync(join(dir, 'pids', `${c}.pid`), String(child.pid));
    // Redis rewrites its process title to `redis-server 127.0.0.1:<port>`: faults.sh matches on that.
    if (c === 'redis') writeFileSync(join(dir, 'pids', 'redis.marker'), `127.0.0.1:${ports.redis}`);
    children.set(c, child);
    await until(`private ${c}`, ready[c], 90_000, child);
  };
  const stop = async (c: Component, signal: NodeJS.Signals = 'SIGTERM') => {
    const child = children.get(c);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
    rmSync(join(dir, 'pids', `${c}.pid`), { force: true });
  };

  try {
    await Promise.all((['redis', 'mongo', 'kafka'] as const).map(start));
  } catch (err) {
    for (const c of children.keys()) await stop(c, 'SIGKILL');
    throw err;
  }
  return {
    dir,
    urls: { REDIS_URL: `redis://127.0.0.1:${ports.redis}`, KAFKA_BROKERS: `127.0.0.1:${ports.kafka}`, MONGO_URL: `mongodb://127.0.0.1:${ports.mongo}` },
    start,
    stop,
    isUp: running,
    close: async () => {
      for (const c of ['kafka', 'mongo', 'redis'] as const) await stop(c);
    },
  };
}
