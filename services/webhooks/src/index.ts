import { isPublicEventType, PUBLIC_EVENT_TYPES, topicOf } from '@dap/contracts';
import { platformEndpointsOf } from '@dap/config';
import { startService } from '@dap/lifecycle';
import { addressOf, openHttpServer } from '@dap/http';
import { openEventing, runEventConsumer } from '@dap/kafka';
import type { Logger } from '@dap/logger';
import { openMongo, outboxRelayOf, startOutboxRelay, type OutboxRelay } from '@dap/mongo';
import { OutboundGuard } from '@dap/netguard';
import { createApp } from './app.ts';
import { claimTtlMsOf, type WebhooksConfig } from './config.ts';
import { Dispatcher, UNSTORED_DRAIN_MS } from './workers/dispatcher.ts';
import { HttpSender } from './workers/http-sender.ts';
import { SecretBox } from './domain/secret.ts';
import { WebhooksService } from './domain/webhooks.service.ts';
import { DELIVERY_GROUP_ID, deliveryFanOutBatch } from './events/delivery.consumer.ts';
import { webhooksOutbox } from './events/outbox.ts';
import { DeliveryRepository, type OutboxEntry } from './persistence/delivery.repository.ts';
import { EndpointRepository } from './persistence/endpoint.repository.ts';
import { RateSlots } from './persistence/rate-slots.ts';

export const USER_AGENT = 'dap-webhooks/1.0 (+https://docs.dap.dev/webhooks)';

/** `now`: the clock of due times, claims, backoff and secret overlaps, for tests that move it; the system clock otherwise. */
export async function startWebhooks(config: WebhooksConfig, deps: { logger?: Logger; now?: () => number } = {}) {
  return startService('webhooks', config, deps, async (life, logger) => {
    const mongo = await openMongo(life, config, logger);
    const eventing = await openEventing(life, config, logger);
    let relay: OutboxRelay<OutboxEntry> | null = null;
    const endpoints = new EndpointRepository(mongo.db, () => relay?.kick());
    const outbox = outboxRelayOf(mongo.db, webhooksOutbox(mongo.db, config), eventing.producer, logger);
    relay = outbox;
    const deliveries = new DeliveryRepository(mongo.db, outbox, deps.now);
    await Promise.all([endpoints.ensureIndexes(), deliveries.ensureIndexes(), outbox.ensureIndexes()]);
    const secrets = new SecretBox(config.WEBHOOK_SECRET_KEY);
    const resealed = await endpoints.resealLegacySecrets((sealed, id) => secrets.resealLegacy(sealed, id));
    if (resealed > 0) logger.info({ resealed }, 'endpoint secrets re-sealed in the current form');
    await startOutboxRelay(life, outbox, logger);

    const guard = new OutboundGuard({ allowPrivate: config.ALLOW_PRIVATE_TARGETS, platform: platformEndpointsOf(config) });
    const sender = await life.open(
      'http sender',
      () => new HttpSender({ timeoutMs: config.WEBHOOK_TIMEOUT_MS, guard, userAgent: USER_AGENT }),
      (s) => s.close(),
    );
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
      leaseMs: claimTtlMsOf(config),
      userAgent: USER_AGENT,
      instanceId: config.INSTANCE_ID,
      attemptTimeoutMs: config.WEBHOOK_TIMEOUT_MS,
      rateSlots: new RateSlots(mongo.db),
      maxRetryAfterMs: config.WEBHOOK_MAX_RETRY_AFTER_MS,
      now: deps.now,
    });
    const webhooks = new WebhooksService({
      endpoints,
      deliveries,
      secrets,
      guard,
      secretOverlapMs: config.WEBHOOK_SECRET_OVERLAP_MS,
      onDue: () => dispatcher.kick(),
      onEndpointChanged: (id) => dispatcher.forgetEndpoint(id),
      sendingUnstored: (id) => dispatcher.sendingUnstored(id),
      now: deps.now,
    });

    const app = createApp({ logger, webhooks, internalSecret: config.INTERNAL_SECRET, bodyLimitBytes: config.BODY_LIMIT_BYTES, ready: mongo.ping });
    // Takes back this instance's claims from before a crash and sends what is due, before new events arrive.
    await life.open(
      'dispatcher',
      () => dispatcher.start(),
      () => dispatcher.stop(),
    );
    const server = await openHttpServer(life, app, config);
    // The port is known only now when the config says 0 (tests); the service's own port is the platform's too.
    guard.platform.add({ host: config.HOST, port: server.port });
    const consumer = await life.open(
      'delivery consumer',
      () =>
        runEventConsumer(eventing.kafka, eventing.settings, eventing.producer, logger, {
          groupId: DELIVERY_GROUP_ID,
          // Only topics that carry events a webhook can subscribe to (not the gateway's usage or the accounts' key events).
          topics: [...new Set(PUBLIC_EVENT_TYPES.map(topicOf))],
          handleBatch: deliveryFanOutBatch({ endpoints, deliveries, dispatcher, now: deps.now }),
          accepts: isPublicEventType,
          partitionsConsumedConcurrently: config.WEBHOOK_CONSUMER_CONCURRENCY,
          maxAttempts: config.WEBHOOK_CONSUMER_MAX_ATTEMPTS,
          // Deliveries are sent before they are stored: an offset is committed once they are (see the README).
          commitWhenDurable: { drainMs: UNSTORED_DRAIN_MS },
        }),
      (c) => c.disconnect(),
    );
    // A rebalance gives this process events other processes may have sent and stored without committing.
    consumer.on(consumer.events.GROUP_JOIN, () => dispatcher.partitionsAssigned());
    logger.info({ url: server.url }, 'webhooks listening');
    logger.info({ privateTargets: guard.allowed.cidrs, platformEndpoints: guard.platform.describe() }, 'outbound connections: private ranges allowed, platform endpoints refused');

    return {
      ...addressOf(server),
      mongo,
      relay: outbox,
      dispatcher,
      endpoints,
      deliveries,
      /** Reverse order: consumer, server, dispatcher, sender, outbox relay (flushed), Kafka, MongoDB. */
      stop: () => life.stop(),
    };
  });
}

export type RunningWebhooks = Awaited<ReturnType<typeof startWebhooks>>;
