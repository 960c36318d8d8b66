import { ALL_TOPICS } from '@dap/contracts';
import { kafkaSettingsOf } from '@dap/config';
import { listen } from '@dap/http';
import { connectEventing, runEventConsumer } from '@dap/kafka';
import { createLogger, type Logger } from '@dap/logger';
import { connectMongo, OutboxRelay } from '@dap/mongo';
import { createApp } from './app.ts';
import type { WebhooksConfig } from './config.ts';
import { Dispatcher } from './delivery/dispatcher.ts';
import { HttpSender } from './delivery/http-sender.ts';
import { SecretBox } from './domain/secret.ts';
import { WebhooksService } from './domain/webhooks.service.ts';
import { DELIVERY_GROUP_ID, deliveryFanOut } from './events/delivery.consumer.ts';
import { DeliveryRepository } from './persistence/delivery.repository.ts';
import { EndpointRepository } from './persistence/endpoint.repository.ts';

export const USER_AGENT = 'dap-webhooks/1.0 (+https://docs.dap.dev/webhooks)';

export async function startWebhooks(config: WebhooksConfig, deps: { logger?: Logger } = {}) {
  const logger = deps.logger ?? createLogger({ name: 'webhooks', level: config.LOG_LEVEL });
  const mongo = await connectMongo(config.MONGO_URL, config.MONGO_DB);
  const eventing = await connectEventing(kafkaSettingsOf(config), logger);
  let relay: OutboxRelay | null = null;
  const endpoints = new EndpointRepository(mongo.db, () => relay?.kick());
  const deliveries = new DeliveryRepository(mongo.db);
  await Promise.all([endpoints.init(), deliveries.init()]);
  relay = new OutboxRelay({ collections: [endpoints.coll.raw], publisher: eventing.producer, logger, intervalMs: 1_000 });

  const secrets = new SecretBox(config.WEBHOOK_SECRET_KEY);
  const sender = new HttpSender({ timeoutMs: config.WEBHOOK_TIMEOUT_MS, allowPrivateTargets: config.ALLOW_PRIVATE_TARGETS, userAgent: USER_AGENT });
  const dispatcher = new Dispatcher({
    deliveries,
    endpoints,
    sender,
    secrets,
    logger,
    retryScheduleMs: config.WEBHOOK_RETRY_SCHEDULE_MS,
    pollMs: config.WEBHOOK_POLL_MS,
    endpointConcurrency: config.WEBHOOK_ENDPOINT_CONCURRENCY,
    maxInFlight: config.WEBHOOK_MAX_IN_FLIGHT,
    disableAfterMs: config.WEBHOOK_DISABLE_AFTER_MS,
    leaseMs: 2 * config.WEBHOOK_TIMEOUT_MS + 10_000,
    userAgent: USER_AGENT,
  });
  const webhooks = new WebhooksService({ endpoints, deliveries, secrets, allowPrivateTargets: config.ALLOW_PRIVATE_TARGETS });

  const app = createApp({ logger, webhooks, internalSecret: config.INTERNAL_SECRET, bodyLimitBytes: config.BODY_LIMIT_BYTES, ready: mongo.ping });
  const server = await listen(app, config.HOST, config.PORT);
  // Picks up what is due (and claims a crashed instance left behind) before new events arrive.
  dispatcher.start();
  const consumer = await runEventConsumer(eventing.kafka, eventing.settings, eventing.producer, logger, {
    groupId: DELIVERY_GROUP_ID,
    topics: [...ALL_TOPICS],
    handle: deliveryFanOut({ endpoints, deliveries, dispatcher }),
  });
  relay.start();
  logger.info({ url: server.url }, 'webhooks listening');

  return {
    url: server.url,
    port: server.port,
    mongo,
    relay,
    dispatcher,
    endpoints,
    deliveries,
    async stop() {
      await server.close();
      await consumer.disconnect();
      await dispatcher.stop();
      await relay?.stop();
      try {
        await relay?.flush();
      } catch (err) {
        logger.warn({ err }, 'outbox flush at shutdown failed; the next start publishes it');
      }
      await eventing.close();
      sender.close();
      await mongo.close();
    },
  };
}

export type RunningWebhooks = Awaited<ReturnType<typeof startWebhooks>>;
