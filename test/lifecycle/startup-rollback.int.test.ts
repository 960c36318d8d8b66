import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import diagnostics from 'node:diagnostics_channel';
import { createServer, Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAccountsConfig } from '../../services/accounts/src/config.ts';
import { startAccounts } from '../../services/accounts/src/index.ts';
import { loadAnalyticsConfig } from '../../services/analytics/src/config.ts';
import { startAnalytics } from '../../services/analytics/src/index.ts';
import { createLogger } from '@dap/logger';
import { loadGatewayConfig } from '../../gateway/src/config.ts';
import { startGateway } from '../../gateway/src/index.ts';
import { loadModelsConfig } from '../../services/models/src/config.ts';
import { startModels } from '../../services/models/src/index.ts';
import { loadSourcesConfig } from '../../services/sources/src/config.ts';
import { startSources } from '../../services/sources/src/index.ts';
import { stackEnv, TEST_INTERNAL_SECRET, uniqueSuffix, waitFor } from '@dap/testing';
import { loadWebhooksConfig } from '../../services/webhooks/src/config.ts';
import { startWebhooks } from '../../services/webhooks/src/index.ts';

// Every service builds itself through @dap/lifecycle: when start-up fails part way (here: Kafka is unreachable,
// after MongoDB, or the gateway's Redis, has connected), what was opened is closed again, so no socket to the
// store and no listening server is left.

const logger = createLogger({ name: 'rollback-test', level: 'silent' });
const stack = stackEnv();
let dataDir: string;
let deadKafka: string;

/** Watches the TCP connections made to the store (MongoDB; Redis for the gateway) and the servers that listen. */
function watchHandles(storeUrl: string) {
  const storePort = Number(new URL(storeUrl).port);
  const storeSockets: Socket[] = [];
  const onSocket = ({ socket }: { socket: Socket }) =>
    socket.once('connect', () => {
      if (socket.remotePort === storePort) storeSockets.push(socket);
    });
  diagnostics.subscribe('net.client.socket', onSocket as (m: unknown) => void);
  const listen = jest.spyOn(Server.prototype, 'listen'); // calls through; records each server it was called on
  return {
    storeSockets,
    get servers(): Server[] {
      return listen.mock.contexts as Server[];
    },
    stop() {
      diagnostics.unsubscribe('net.client.socket', onSocket as (m: unknown) => void);
      listen.mockRestore();
    },
  };
}

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

function env(name: string, kafka: string): Record<string, string> {
  const suffix = uniqueSuffix();
  return {
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    MONGO_URL: stack.MONGO_URL,
    MONGO_DB: `t${suffix}_${name}`,
    KAFKA_BROKERS: kafka,
    KAFKA_TOPIC_PREFIX: `t${suffix}.`,
    INTERNAL_SECRET: TEST_INTERNAL_SECRET,
    // Short against the unreachable Kafka (the case under test); the real one may take seconds to create topics under load.
    STARTUP_TIMEOUT_MS: kafka === deadKafka ? '1500' : '30000',
    DATASET_DIR: join(dataDir, name, suffix),
    INSTANCE_ID: `rollback-${suffix}`,
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'),
    SOURCE_CREDENTIALS_KEY: randomBytes(32).toString('base64'),
    PREDICT_WORKERS: '0',
    TRAIN_WORKERS: '0',
  };
}

const services: Record<string, (kafka: string) => Promise<{ stop(): Promise<void> }>> = {
  gateway: (k) =>
    startGateway(
      loadGatewayConfig({
        ...env('gateway', k),
        REDIS_URL: stack.REDIS_URL,
        ACCOUNTS_URL: 'http://127.0.0.1:1',
        SOURCES_URL: 'http://127.0.0.1:1',
        ANALYTICS_URL: 'http://127.0.0.1:1',
        MODELS_URL: 'http://127.0.0.1:1',
        WEBHOOKS_URL: 'http://127.0.0.1:1',
      }),
      { logger },
    ),
  accounts: (k) => startAccounts(loadAccountsConfig(env('accounts', k)), { logger }),
  analytics: (k) => startAnalytics(loadAnalyticsConfig(env('analytics', k)), { logger }),
  models: (k) => startModels(loadModelsConfig(env('models', k)), { logger }),
  sources: (k) => startSources(loadSourcesConfig(env('sources', k)), { logger }),
  webhooks: (k) => startWebhooks(loadWebhooksConfig(env('webhooks', k)), { logger }),
};

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'dap-rollback-'));
  deadKafka = `127.0.0.1:${await closedPort()}`;
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe.each(Object.keys(services))('%s start-up', (name) => {
  const start = services[name]!;

  it('holds store connections and a listening server while running, and releases them on stop (the positive control)', async () => {
    const watch = watchHandles(name === 'gateway' ? stack.REDIS_URL : stack.MONGO_URL);
    try {
      const svc = await start(stack.KAFKA_BROKERS);
      expect(watch.storeSockets.filter((s) => !s.destroyed).length).toBeGreaterThan(0);
      expect(watch.servers.filter((s) => s.listening).length).toBeGreaterThan(0);
      await svc.stop();
      await waitFor(() => watch.storeSockets.every((s) => s.destroyed), { timeoutMs: 5_000, what: 'store sockets closed' });
      expect(watch.servers.filter((s) => s.listening)).toHaveLength(0);
    } finally {
      watch.stop();
    }
  });

  it('closes its store client (MongoDB; Redis for the gateway) and servers when Kafka is unreachable', async () => {
    const watch = watchHandles(name === 'gateway' ? stack.REDIS_URL : stack.MONGO_URL);
    try {
      await expect(start(deadKafka)).rejects.toThrow(/Kafka/);
      // The store had connected before Kafka was tried: those connections existed, and are closed now.
      expect(watch.storeSockets.length).toBeGreaterThan(0);
      await waitFor(() => watch.storeSockets.every((s) => s.destroyed), { timeoutMs: 5_000, what: 'store sockets closed' });
      expect(watch.servers.filter((s) => s.listening)).toHaveLength(0);
    } finally {
      watch.stop();
    }
  });
});
