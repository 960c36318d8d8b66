import { TOPICS } from '@dap/contracts';
import { runEventConsumer, type Consumer, type Eventing } from '@dap/kafka';
import type { Logger } from '@dap/logger';
import type { SourceProjectionRepository } from '@dap/mongo';

export const SOURCES_GROUP = 'models.sources';

/**
 * The service owns no sources: what it knows of them comes in here. Idempotent: the projection ignores an
 * event no newer than the last one it applied.
 */
export function runSourcesConsumer(eventing: Eventing, logger: Logger, sources: SourceProjectionRepository): Promise<Consumer> {
  return runEventConsumer(eventing.kafka, eventing.settings, eventing.producer, logger, {
    groupId: SOURCES_GROUP,
    topics: [TOPICS.sources],
    handle: async (event) => {
      await sources.applyEvent(event);
    },
  });
}
