import { TOPICS, type DomainEvent } from '@dap/contracts';
import { runEventConsumer, type Eventing } from '@dap/kafka';
import type { Logger } from '@dap/logger';
import type { KeyVerifier } from '../auth/key-verifier.ts';

/**
 * Every gateway instance has its own consumer group, so each one hears every revocation and plan change and
 * drops the cached key at once (well inside the 2-s promise).
 */
export function consumeKeyEvents(eventing: Eventing, logger: Logger, verifier: KeyVerifier, instanceId: string) {
  return runEventConsumer(eventing.kafka, eventing.settings, eventing.producer, logger, {
    groupId: `gateway-${instanceId}`,
    deadLetterName: 'gateway',
    topics: [TOPICS.accounts],
    fromBeginning: false,
    // Start-up waits for the first fetch: a revocation published before it would be skipped.
    waitUntilFetchingMs: 15_000,
    handle: async (event: DomainEvent) => {
      switch (event.type) {
        case 'apikey.revoked':
        case 'apikey.updated':
          await verifier.evictKey(event.data.keyId);
          logger.info({ keyId: event.data.keyId }, 'revoked key evicted from cache');
          break;
        case 'account.plan_changed':
          await verifier.evictAccount(event.accountId);
          break;
        default:
          break;
      }
    },
  });
}
