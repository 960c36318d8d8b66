import { randomBytes } from 'node:crypto';
import { makeEvent, newId, type DomainEvent, type EventOf, type EventType } from '@dap/contracts';
import { createKafka, EventProducer } from '@dap/kafka';
import { createLogger } from '@dap/logger';
import { connectMongo } from '@dap/mongo';
import { callerHeaders, http, stackEnv, TEST_INTERNAL_SECRET, uniqueSuffix } from '@dap/testing';
import { loadWebhooksConfig } from '../src/config.ts';
import { startWebhooks, type RunningWebhooks } from '../src/index.ts';

export const silent = createLogger({ name: 'webhooks-test', level: 'silent' });

/** Environment for one test file: its own database, topics and consumer group on the shared test stack. */
export function testEnv(overrides: Record<string, string> = {}): Record<string, string> {
  const env = stackEnv();
  const suffix = uniqueSuffix();
  return {
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'silent',
    MONGO_URL: env.MONGO_URL,
    MONGO_DB: `t${suffix}_webhooks`,
    KAFKA_BROKERS: env.KAFKA_BROKERS,
    KAFKA_TOPIC_PREFIX: `t${suffix}.`,
    INTERNAL_SECRET: TEST_INTERNAL_SECRET,
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
    ALLOW_PRIVATE_TARGETS: 'true',
    PLATFORM_ENDPOINTS: new URL(env.REDIS_URL).host,
    ...overrides,
  };
}

/** Parsed config for one test file (see testEnv). */
export function testConfig(overrides: Record<string, string> = {}) {
  return loadWebhooksConfig(testEnv(overrides));
}
export type TestConfig = ReturnType<typeof testConfig>;
export { callerHeaders };

/** A caller bound to one account and one running service. */
export function clientFor(svc: () => Pick<RunningWebhooks, 'url'>, accountId = newId('acct')) {
  const call = (method: string, path: string, body?: unknown, extra: Record<string, string> = {}) =>
    http(method, `${svc().url}/v1${path}`, { body, headers: { ...callerHeaders(accountId), ...extra } });
  return { accountId, call };
}

/** Publishes domain events the way the other services' outbox relays do. */
export async function eventPublisher(config: TestConfig) {
  const settings = { brokers: config.KAFKA_BROKERS, clientId: 'webhooks-test', topicPrefix: config.KAFKA_TOPIC_PREFIX };
  const producer = new EventProducer(createKafka(settings, silent), settings);
  await producer.connect();
  return {
    async publish<T extends EventType>(type: T, accountId: string, data: EventOf<T>['data'], requestId: string | null = null): Promise<EventOf<T> & { publishedAt: number }> {
      const event = makeEvent(type, { accountId, subject: (data as { id?: string }).id ?? 'subject', requestId, data });
      const publishedAt = Date.now();
      await producer.publish([event as DomainEvent]);
      return { ...event, publishedAt };
    },
    /** Sends an already published event again, as a relay does after a crash. */
    republish: (event: DomainEvent) => producer.publish([event]),
    close: () => producer.disconnect(),
  };
}

/** Collects every event published on one of this file's topics (e.g. webhooks.events), from the beginning. */
export async function topicWatcher(config: TestConfig, topic: string) {
  const kafka = createKafka({ brokers: config.KAFKA_BROKERS, clientId: 'watch', topicPrefix: config.KAFKA_TOPIC_PREFIX }, silent);
  const consumer = kafka.consumer({ groupId: `${config.KAFKA_TOPIC_PREFIX}watch-${uniqueSuffix()}`, maxWaitTimeInMs: 50 });
  const seen: DomainEvent[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic: `${config.KAFKA_TOPIC_PREFIX}${topic}`, fromBeginning: true });
  await consumer.run({ eachMessage: async ({ message }) => void seen.push(JSON.parse(message.value!.toString())) });
  return { seen, close: () => consumer.disconnect() };
}

export { startWebhooks };

/** Drops the file's database once the service is stopped, so test runs leave nothing behind. */
export async function dropTestDatabase(config: TestConfig): Promise<void> {
  const mongo = await connectMongo(config.MONGO_URL, config.MONGO_DB);
  try {
    await mongo.db.dropDatabase();
  } finally {
    await mongo.close();
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
