import { TOPICS } from '@dap/contracts';
import { runEventConsumer, type Consumer, type Eventing } from '@dap/kafka';
import type { Logger } from '@dap/logger';
import type { UsageStatsRepository } from '../persistence/usage-stats.repository.ts';
import type { UsageRepository } from '../persistence/usage.repository.ts';
import { usageHandler } from './usage.handlers.ts';

export const USAGE_GROUP = 'analytics.usage';

/**
 * Its own consumer group: the gateway's steady stream of usage counts never queues in front of the source
 * events the query engine waits for.
 */
export function runUsageConsumer(eventing: Eventing, logger: Logger, usage: UsageRepository, stats: UsageStatsRepository): Promise<Consumer> {
  return runEventConsumer(eventing.kafka, eventing.settings, eventing.producer, logger, {
    groupId: USAGE_GROUP,
    topics: [TOPICS.gateway],
    handle: usageHandler(usage, stats),
  });
}
