import type { DomainEvent, EventOf } from '@dap/contracts';
import type { ActivityRepository } from '../persistence/activity.repository.ts';
import { normaliseSchema, type SourceChange, type SourceProjectionRepository } from '../persistence/source-projection.repository.ts';

export interface ProjectionDeps {
  sources: SourceProjectionRepository;
  activity: ActivityRepository;
}

type SourceEventType = 'source.created' | 'source.ready' | 'source.failed' | 'source.deleted';

/** What each source event changes in the projection. */
const SOURCE_CHANGES: { [T in SourceEventType]: (e: EventOf<T>) => SourceChange } = {
  'source.created': (e) => ({ name: e.data.name, type: e.data.type, status: 'pending', error: null }),
  'source.ready': (e) => ({
    name: e.data.name,
    type: e.data.type,
    status: 'ready',
    error: null,
    schema: normaliseSchema(e.data.schema),
    rowCount: e.data.rowCount,
  }),
  'source.failed': (e) => ({ name: e.data.name, status: 'failed', error: e.data.error }),
  'source.deleted': () => ({ deleted: true }),
};

function isSourceEvent(e: DomainEvent): e is EventOf<SourceEventType> {
  return e.type in SOURCE_CHANGES;
}

/**
 * Applies one event to the projections. Idempotent: activity is keyed by event id, and the source
 * projection ignores an event no newer than the last one it applied. Every other type only counts as
 * activity (models, predictions, webhooks, our own reports).
 */
export function projectionHandler(deps: ProjectionDeps): (event: DomainEvent) => Promise<void> {
  return async (event) => {
    if (isSourceEvent(event)) {
      const change = (SOURCE_CHANGES[event.type] as (e: DomainEvent) => SourceChange)(event);
      await deps.sources.apply(event.accountId, event.data.id, event.id, change, new Date());
    }
    await deps.activity.record(event);
  };
}
