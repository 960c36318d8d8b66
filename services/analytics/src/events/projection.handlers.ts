import type { DomainEvent } from '@dap/contracts';
import type { SourceProjectionRepository } from '@dap/mongo';
import type { ActivityRepository } from '../persistence/activity.repository.ts';

export interface ProjectionDeps {
  sources: SourceProjectionRepository;
  activity: ActivityRepository;
}

/**
 * Applies one event to the projections. Idempotent: activity is keyed by event id, and the source
 * projection ignores an event no newer than the last one it applied. Every other type only counts as
 * activity (models, predictions, webhooks, our own reports).
 */
export function projectionHandler(deps: ProjectionDeps): (event: DomainEvent) => Promise<void> {
  return async (event) => {
    await deps.sources.applyEvent(event);
    await deps.activity.record(event);
  };
}
