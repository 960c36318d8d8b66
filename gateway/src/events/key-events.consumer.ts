import { TOPICS, type DomainEvent } from '@dap/contracts';
import { tailTopics, type Eventing } from '@dap/kafka';
import type { Logger } from '@dap/logger';
import type { KeyVerifier } from '../auth/key-verifier.ts';

/**
 * Every gateway reads every partition of the accounts topic from its end, without a consumer group, so each
 * one hears every revocation and plan change and drops the cached key at once (well inside the 2-s promise),
 * and a gateway that stops or dies leaves no consumer group behind (README.md, "Key revocations without consumer groups").
 */
export function consumeKeyEvents(eventing: Eventing, logger: Logger, verifier: KeyVerifier) {
  return tailTopics(eventing.kafka, eventing.settings, logger, {
    topics: [TOPICS.accounts],
    // Eviction is idempotent and cheap; a failure (Redis away) is already absorbed by the verifier.
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
