import { randomBytes } from 'node:crypto';
import { kafkaSettingsOf } from '@dap/config';
import { listen } from '@dap/http';
import { connectEventing } from '@dap/kafka';
import { createLogger, type Logger } from '@dap/logger';
import { createRedis } from '@dap/redis';
import { createApp } from './app.ts';
import { KeyVerifier } from './auth/key-verifier.ts';
import type { GatewayConfig } from './config.ts';
import { consumeKeyEvents } from './events/key-events.consumer.ts';
import { serviceProxy } from './proxy/service-proxy.ts';
import { FailOpenLimiter, InMemoryLimiter, SlidingWindowLimiter } from './rate-limit/sliding-window.limiter.ts';

export async function startGateway(config: GatewayConfig, deps: { logger?: Logger } = {}) {
  const logger = deps.logger ?? createLogger({ name: 'gateway', level: config.LOG_LEVEL });
  const instanceId = randomBytes(4).toString('hex');
  const redis = createRedis(config.REDIS_URL);
  redis.on('error', (err) => logger.debug({ err: err.message }, 'redis connection error'));
  const stats = { limiterFallbacks: 0 };
  let lastFallbackLog = 0;
  const limiter = new FailOpenLimiter(new SlidingWindowLimiter(redis, config.RATE_LIMIT_WINDOW_MS), new InMemoryLimiter(config.RATE_LIMIT_WINDOW_MS), (err) => {
    stats.limiterFallbacks++;
    if (Date.now() - lastFallbackLog > 10_000) {
      lastFallbackLog = Date.now();
      logger.warn({ err: (err as Error).message, fallbacks: stats.limiterFallbacks }, 'redis unavailable: rate limiting with the per-instance fallback');
    }
  });
  const verifier = new KeyVerifier({ accountsUrl: config.ACCOUNTS_URL, internalSecret: config.INTERNAL_SECRET, ttlMs: config.KEY_CACHE_TTL_MS });
  const eventing = await connectEventing(kafkaSettingsOf(config), logger);
  const consumer = await consumeKeyEvents(eventing, logger, verifier, instanceId);
  const proxy = serviceProxy({
    targets: { sources: config.SOURCES_URL, analytics: config.ANALYTICS_URL, models: config.MODELS_URL, webhooks: config.WEBHOOKS_URL },
    internalSecret: config.INTERNAL_SECRET,
    timeoutMs: config.UPSTREAM_TIMEOUT_MS,
    logger,
  });
  let publicUrl = '';
  const app = createApp({
    logger,
    verifier,
    limiter,
    proxy,
    windowMs: config.RATE_LIMIT_WINDOW_MS,
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    publicUrl: () => publicUrl,
    ready: async () => void (await redis.ping()),
  });
  const server = await listen(app, config.HOST, config.PORT);
  publicUrl = server.url;
  logger.info({ url: server.url, instanceId }, 'gateway listening');
  return {
    url: server.url,
    port: server.port,
    verifier,
    stats,
    async stop() {
      await server.close();
      await consumer.disconnect();
      await eventing.close();
      redis.disconnect();
    },
  };
}
