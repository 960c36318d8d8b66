import { TOPICS } from '@dap/contracts';
import { runEventConsumer, type Consumer, type Eventing } from '@dap/kafka';
import type { Logger } from '@dap/logger';
import { projectionHandler, type ProjectionDeps } from './projection.handlers.ts';

export const PROJECTION_GROUP = 'analytics.projections';

/** The service owns no sources: everything the overview and the query engine know comes in here. */
export function runProjectionConsumer(eventing: Eventing, logger: Logger, deps: ProjectionDeps): Promise<Consumer> {
  return runEventConsumer(eventing.kafka, eventing.settings, eventing.producer, logger, {
    groupId: PROJECTION_GROUP,
    topics: [TOPICS.sources, TOPICS.models, TOPICS.webhooks, TOPICS.deliveries, TOPICS.analytics],
    handle: projectionHandler(deps),
  });
}
