import { TOPICS, type DomainEvent, type EventOf } from '@dap/contracts';
import { runEventConsumer, type Consumer, type Eventing } from '@dap/kafka';
import type { Logger } from '@dap/logger';
import { normaliseSchema, type SourceChange, type SourceProjectionRepository } from '../persistence/source-projection.repository.ts';

export const SOURCES_GROUP = 'models.sources';

type SourceEventType = 'source.created' | 'source.ready' | 'source.failed' | 'source.deleted';

/** What each source event changes in the projection. */
const CHANGES: { [T in SourceEventType]: (e: EventOf<T>) => SourceChange } = {
  'source.created': (e) => ({ name: e.data.name, status: 'pending' }),
  'source.ready': (e) => ({ name: e.data.name, status: 'ready', schema: normaliseSchema(e.data.schema), rowCount: e.data.rowCount }),
  'source.failed': (e) => ({ name: e.data.name, status: 'failed' }),
  'source.deleted': () => ({ deleted: true }),
};

function isSourceEvent(e: DomainEvent): e is EventOf<SourceEventType> {
  return e.type in CHANGES;
}

/** Idempotent: the projection ignores an event no newer than the last one it applied. */
export function sourceEventHandler(sources: SourceProjectionRepository): (event: DomainEvent) => Promise<void> {
  return async (event) => {
    if (!isSourceEvent(event)) return;
    const change = (CHANGES[event.type] as (e: DomainEvent) => SourceChange)(event);
    await sources.apply(event.accountId, event.data.id, event.id, change, new Date());
  };
}

/** The service owns no sources: what it knows of them comes in here. */
export function runSourcesConsumer(eventing: Eventing, logger: Logger, sources: SourceProjectionRepository): Promise<Consumer> {
  return runEventConsumer(eventing.kafka, eventing.settings, eventing.producer, logger, {
    groupId: SOURCES_GROUP,
    topics: [TOPICS.sources],
    handle: sourceEventHandler(sources),
  });
}
