import { randomBytes } from 'node:crypto';
import { makeEvent, newId, type DomainEvent, type EventOf, type EventType } from '@dap/contracts';
import { createKafka, EventProducer } from '@dap/kafka';
import { createLogger } from '@dap/logger';
import { connectMongo } from '@dap/mongo';
import { callerHeaders, http, stackEnv, startReceiver, TEST_INTERNAL_SECRET, testClock, uniqueSuffix, type ReceivedRequest } from '@dap/testing';
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

/** Config with delivery compressed for tests: the given retry schedule, 1-s attempts, a 200-ms poll. */
export function fastDeliveryConfig(retryScheduleMs: string, overrides: Record<string, string> = {}) {
  return testConfig({ WEBHOOK_RETRY_SCHEDULE_MS: retryScheduleMs, WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_POLL_MS: '200', ...overrides });
}
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

type Answer = { status: number; delayMs?: number; headers?: Record<string, string> };

/**
 * One describe block's delivery set-up: a receiver answering with `answer` (given the request and which
 * request to its path this is, from 1), the service, an event publisher and, with `watch`, a watcher on one of
 * the file's topics. Started in beforeAll and stopped, with the database dropped, in afterAll. The service
 * runs on `clock`, which `elapse` moves (retries, claims and secret overlaps come due without real waiting).
 */
export function deliveryStack(config: TestConfig, answer: (req: ReceivedRequest, nth: number) => Answer = () => ({ status: 200 }), opts: { watch?: string } = {}) {
  const tries = new Map<string, number>();
  const clock = testClock();
  let svc: RunningWebhooks | undefined;
  let events: Awaited<ReturnType<typeof eventPublisher>> | undefined;
  let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
  let watcher: Awaited<ReturnType<typeof topicWatcher>> | undefined;
  const started = <T>(value: T | undefined, what: string): T => {
    if (!value) throw new Error(`${what} is not started: use the stack inside a test`);
    return value;
  };

  beforeAll(async () => {
    receiver = await startReceiver((req) => {
      const n = (tries.get(req.path) ?? 0) + 1;
      tries.set(req.path, n);
      return answer(req, n);
    });
    svc = await startWebhooks(config, { logger: silent, now: clock.now });
    events = await eventPublisher(config);
    if (opts.watch) watcher = await topicWatcher(config, opts.watch);
  });

  afterAll(async () => {
    await watcher?.close();
    await events?.close();
    await svc?.stop();
    await dropTestDatabase(config);
    await receiver?.close(); // also clears the timers of answers still being held back
  });

  const stack = {
    get svc() {
      return started(svc, 'the service');
    },
    get events() {
      return started(events, 'the event publisher');
    },
    get receiver() {
      return started(receiver, 'the receiver');
    },
    get watcher() {
      return started(watcher, 'the topic watcher');
    },
    clock,
    /** Moves the service's clock on, then sends what fell due and waits until those attempts are recorded. */
    elapse: async (ms: number) => {
      clock.advance(ms);
      await stack.svc.dispatcher.runDue();
    },
    /** The requests the receiver got on one path, in order of arrival. */
    at: (path: string) => stack.receiver.received.filter((r) => r.path === path),
    /** A caller for a new account (or the one given) on this service. */
    client: (accountId?: Parameters<typeof clientFor>[1]) => clientFor(() => stack.svc, accountId),
    /** Starts the service again on the same database and topics, after a test stopped it. */
    restart: async () => {
      svc = await startWebhooks(config, { logger: silent, now: clock.now });
    },
    /** Registers an endpoint at `path` on the receiver: event filters as a list, or any other fields. */
    register: async (client: ReturnType<typeof clientFor>, path: string, fields: string[] | Record<string, unknown> = {}) => {
      const res = await client.call('POST', '/webhooks', { url: `${stack.receiver.url}${path}`, ...(Array.isArray(fields) ? { events: fields } : fields) });
      expect(res.status).toBe(201);
      return { id: res.body.id as string, secret: res.body.secret as string };
    },
  };
  return stack;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
