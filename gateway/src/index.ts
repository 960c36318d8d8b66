import { randomBytes } from 'node:crypto';
import { Agent } from 'node:http';
import type { Express } from 'express';
import { redisTargetOf } from '@dap/config';
import { startService } from '@dap/lifecycle';
import { PLAN_LIMITS, type Plan } from '@dap/contracts';
import { createMetrics, DEFAULT_REQUEST_TIMEOUT_MS, listen } from '@dap/http';
import { openEventing } from '@dap/kafka';
import type { Logger } from '@dap/logger';
import { createRedis } from '@dap/redis';
import { createApp } from './app.ts';
import { AuthFailureLimiter } from './auth/auth-failure.limiter.ts';
import { clientAddressOf } from './auth/client-address.ts';
import { KeyVerifier } from './auth/key-verifier.ts';
import { SessionVerifier } from './auth/session-verifier.ts';
import type { GatewayConfig } from './config.ts';
import { consumeKeyEvents } from './events/key-events.consumer.ts';
import { idempotency } from './idempotency/idempotency.ts';
import { serviceProxy, upstreamError } from './proxy/service-proxy.ts';
import { forwardBuffered, type Targets } from './proxy/upstream.ts';
import { FailOpenLimiter, InMemoryLimiter, SlidingWindowLimiter } from './rate-limit/sliding-window.limiter.ts';
import { LeasingLimiter } from './rate-limit/leasing.limiter.ts';
import { UsageRecorder, usageCallOf } from './usage/usage-recorder.ts';

export function planLimits(override: string | undefined): Record<Plan, number> {
  const limits = { ...PLAN_LIMITS };
  for (const pair of override?.split(',') ?? []) {
    const [plan, n] = pair.split('=') as [Plan, string];
    limits[plan] = Number(n);
  }
  return limits;
}

/** `now`: the clock of key expiry and of rate-limit windows, for tests that move it; otherwise the system's and Redis's. */
export async function startGateway(config: GatewayConfig, deps: { logger?: Logger; extraRoutes?: (app: Express) => void; now?: () => number } = {}) {
  const instanceId = randomBytes(4).toString('hex');
  return startService('gateway', config, deps, async (life, logger) => {
    const redis = await life.open(
      'redis',
      () => createRedis(redisTargetOf(config), { autoPipelining: true }),
      (r) => r.disconnect(),
    );
    redis.on('error', (err) => logger.debug({ err: err.message }, 'redis connection error'));
    const metrics = createMetrics({ service: 'gateway' });
    const fallbacks = metrics.counter({ name: 'dap_rate_limit_fallback_total', help: 'Limiter checks decided by the in-memory fallback because Redis was unreachable.' });
    const stats = { limiterFallbacks: 0 };
    let lastFallbackLog = 0;
    const window = new SlidingWindowLimiter(redis, config.RATE_LIMIT_WINDOW_MS, deps.now);
    const leasing =
      config.RATE_LIMIT_LEASE_MS > 0
        ? new LeasingLimiter(window, {
            holdMs: config.RATE_LIMIT_LEASE_MS,
            clock: deps.now,
            onReleaseError: (err) => logger.debug({ err: (err as Error).message }, 'could not hand back unused rate-limit permits; they lapse with the window'),
          })
        : null;
    if (leasing) {
      life.runEvery('rate-limit lease sweep', config.RATE_LIMIT_LEASE_MS, () => leasing.sweep());
      // Stopped after the server and before Redis: the permits no request will use go back to the window.
      life.onStop('rate-limit leases', () => leasing.stop());
    }
    const limiter = new FailOpenLimiter(leasing ?? window, new InMemoryLimiter(config.RATE_LIMIT_WINDOW_MS), (err) => {
      stats.limiterFallbacks++;
      fallbacks.inc();
      if (Date.now() - lastFallbackLog > 10_000) {
        lastFallbackLog = Date.now();
        logger.warn({ err: (err as Error).message, fallbacks: stats.limiterFallbacks }, 'redis unavailable: rate limiting with the per-instance fallback');
      }
    });
    const keys = new KeyVerifier({
      accountsUrl: config.ACCOUNTS_URL,
      internalSecret: config.INTERNAL_SECRET,
      ttlMs: config.KEY_CACHE_TTL_MS,
      maxEntries: config.KEY_CACHE_MAX_ENTRIES,
      redis,
      now: deps.now,
    });
    // Stopped after the server (registered later, so closed earlier) and before Redis: no request starts a
    // refresh any more, and none under way outlives the client it writes to.
    life.onStop('key refreshes', () => keys.stop());
    const sessions = new SessionVerifier({ accountsUrl: config.ACCOUNTS_URL, internalSecret: config.INTERNAL_SECRET });
    const failures = new AuthFailureLimiter(redis, config.AUTH_FAILURES_PER_MINUTE);
    const eventing = await openEventing(life, config, logger);
    await life.open(
      'key events',
      () => consumeKeyEvents(eventing, logger, keys),
      (k) => k.stop(),
    );
    const usageOverflow = metrics.counter({
      name: 'dap_usage_overflow_total',
      help: "Calls counted on an account's `other` usage line because a flush held USAGE_MAX_LINES distinct lines.",
    });
    const usage = new UsageRecorder({
      publish: (events) => eventing.producer.publish(events),
      logger,
      intervalMs: config.USAGE_FLUSH_MS,
      maxLines: config.USAGE_MAX_LINES,
      onOverflow: () => usageOverflow.inc(),
    });
    usage.start();
    life.onStop('usage recorder', () => usage.stop());

    const targets: Targets = {
      accounts: config.ACCOUNTS_URL,
      sources: config.SOURCES_URL,
      analytics: config.ANALYTICS_URL,
      models: config.MODELS_URL,
      webhooks: config.WEBHOOKS_URL,
    };
    const agent = await life.open(
      'upstream agent',
      () => new Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, keepAliveMsecs: 10_000 }),
      (a) => a.destroy(),
    );
    const proxy = serviceProxy({ targets, internalSecret: config.INTERNAL_SECRET, timeoutMs: config.UPSTREAM_TIMEOUT_MS, agent, logger });
    const idem = idempotency({
      redis,
      bodyLimit: config.BODY_LIMIT_BYTES,
      logger,
      secret: config.INTERNAL_SECRET,
      forward: (req, body) =>
        forwardBuffered({
          req,
          body,
          target: targets[req.operation!.service as keyof Targets],
          internalSecret: config.INTERNAL_SECRET,
          agent,
          timeoutMs: config.UPSTREAM_TIMEOUT_MS,
        }).catch((err: Error) => {
          throw upstreamError(err);
        }),
    });

    let publicUrl = '';
    const app = createApp({
      logger,
      metrics,
      keys,
      sessions,
      failures,
      trustProxy: config.TRUST_PROXY,
      limiter,
      limits: planLimits(config.PLAN_LIMITS_OVERRIDE),
      publicPerMinute: config.PUBLIC_REQUESTS_PER_MINUTE,
      dashboardPerMinute: config.DASHBOARD_REQUESTS_PER_MINUTE,
      proxy,
      idempotency: idem,
      windowMs: config.RATE_LIMIT_WINDOW_MS,
      bodyLimitBytes: config.BODY_LIMIT_BYTES,
      uploads: { limitBytes: config.UPLOAD_LIMIT_BYTES, idleTimeoutMs: config.UPLOAD_IDLE_TIMEOUT_MS },
      requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS,
      corsOrigins: config.DASHBOARD_ORIGINS.split(',')
        .map((o) => o.trim())
        .filter(Boolean),
      publicUrl: () => publicUrl,
      ready: async () => void (await redis.ping()),
      onResponse: (req, res) => {
        const p = req.principal;
        if (p && p.kind !== 'anonymous') usage.record(usageCallOf(p, req.operation, res.statusCode));
        // A wrong password at login, or a wrong current password with a valid session, counts like a wrong key.
        if (req.operation?.auth === 'public' && res.statusCode === 401) void failures.recordFailure(clientAddressOf(req));
        else if (req.operation?.checksPassword && p?.kind === 'session' && res.statusCode === 403) void failures.recordFailure(clientAddressOf(req));
      },
      ...(deps.extraRoutes ? { extraRoutes: deps.extraRoutes } : {}),
    });
    const server = await life.open(
      'http server',
      () => listen(app, config.HOST, config.PORT, { metricsPort: config.METRICS_PORT, requestTimeoutMs: config.UPLOAD_TIMEOUT_MS }),
      (s) => s.close(),
    );
    publicUrl = server.url;
    logger.info({ url: server.url, instanceId }, 'gateway listening');
    return {
      url: server.url,
      port: server.port,
      metricsUrl: server.metricsUrl,
      keys,
      stats,
      usage,
      /** Reverse order: server, upstream agent, usage recorder (flushed), key events, Kafka, Redis, tracing. */
      stop: () => life.stop(),
    };
  });
}
