import { startService } from '@dap/lifecycle';
import { addressOf, openHttpServer } from '@dap/http';
import { openEventing } from '@dap/kafka';
import type { Logger } from '@dap/logger';
import { connectMongo, outboxRelayOf, startOutboxRelay, type MongoHandle, type OutboxRelay, type WrittenEvents } from '@dap/mongo';
import { createApp } from './app.ts';
import type { AccountsConfig } from './config.ts';
import { AccountsService } from './domain/accounts.service.ts';
import { ACCOUNTS_OUTBOX } from './events/outbox.ts';
import { AccountRepository } from './persistence/account.repository.ts';
import { ApiKeyRepository } from './persistence/api-key.repository.ts';
import { IdentityService } from './domain/identity.service.ts';
import { ResetTokenRepository } from './persistence/reset-token.repository.ts';
import { SessionRepository } from './persistence/session.repository.ts';
import { UserRepository } from './persistence/user.repository.ts';

export interface AccountsDomain {
  mongo: MongoHandle;
  accounts: AccountsService;
  identity: IdentityService;
  accountRepo: AccountRepository;
  keyRepo: ApiKeyRepository;
}

/** The domain on its database alone; the CLI uses it, and the service's relay publishes what it writes. */
export async function openAccountsDomain(
  config: Pick<AccountsConfig, 'MONGO_URL' | 'MONGO_DB'> & { STARTUP_TIMEOUT_MS?: number },
  onEvents: (written: WrittenEvents) => void = () => {},
  logger?: Logger,
  now?: () => number,
): Promise<AccountsDomain> {
  const mongo = await connectMongo(config.MONGO_URL, config.MONGO_DB, { logger, startupTimeoutMs: config.STARTUP_TIMEOUT_MS });
  const accountRepo = new AccountRepository(mongo.db, onEvents);
  const keyRepo = new ApiKeyRepository(mongo.db, onEvents);
  const users = new UserRepository(mongo.db);
  const sessions = new SessionRepository(mongo.db);
  const resets = new ResetTokenRepository(mongo.db);
  await Promise.all([accountRepo.ensureIndexes(), keyRepo.ensureIndexes(), users.ensureIndexes(), sessions.ensureIndexes(), resets.ensureIndexes()]);
  const accounts = new AccountsService(accountRepo, keyRepo, now);
  return { mongo, accounts, identity: new IdentityService(accounts, users, sessions, resets), accountRepo, keyRepo };
}

/** `now`: the clock of key expiry and grace periods, for tests that move it; the system clock otherwise. */
export async function startAccounts(config: AccountsConfig, deps: { logger?: Logger; now?: () => number } = {}) {
  return startService('accounts', config, deps, async (life, logger) => {
    let relay: OutboxRelay | null = null;
    const domain = await life.open(
      'mongodb',
      () => openAccountsDomain(config, (w) => relay?.written(w), logger, deps.now),
      (d) => d.mongo.close(),
    );
    const eventing = await openEventing(life, config, logger);
    const outbox = outboxRelayOf(domain.mongo.db, ACCOUNTS_OUTBOX, eventing.producer, logger);
    relay = outbox;
    const app = createApp({
      logger,
      accounts: domain.accounts,
      identity: domain.identity,
      secureCookies: config.COOKIE_SECURE,
      internalSecret: config.INTERNAL_SECRET,
      bodyLimitBytes: config.BODY_LIMIT_BYTES,
      ready: domain.mongo.ping,
    });
    await startOutboxRelay(life, outbox, logger);
    const server = await openHttpServer(life, app, config);
    logger.info({ url: server.url }, 'accounts listening');
    return {
      ...domain,
      ...addressOf(server),
      relay: outbox,
      /** Reverse order of start-up: server, relay (flushed), Kafka, MongoDB. */
      stop: () => life.stop(),
    };
  });
}
