import { sourceConfigSchema, type SourceConfigDto, type SourceDto, type SourceSyncDto } from '@dap/contracts';
import type { SourceDoc } from '../persistence/source.repository.ts';
import { nextSyncAt } from '../domain/schedule.ts';

const iso = (d: Date | string) => new Date(d).toISOString();

/** Only the documented, non-secret config keys ever leave (zod drops any other key). */
function publicConfig(config: unknown): SourceConfigDto {
  const parsed = sourceConfigSchema.safeParse(config ?? {});
  return parsed.success ? parsed.data : {};
}

/** The last finished sync; a document from before `lastSync` was stored reads it from its settled status. */
function lastSyncOf(doc: SourceDoc): SourceSyncDto | null {
  if (doc.lastSync) {
    const { mode, rowsPulled, rowsMerged } = doc.lastSync;
    return {
      status: doc.lastSync.status,
      error: doc.lastSync.error,
      at: iso(doc.lastSync.at),
      ...(mode ? { mode } : {}),
      ...(rowsPulled !== undefined ? { rowsPulled } : {}),
      ...(rowsMerged !== undefined ? { rowsMerged } : {}),
    };
  }
  if (doc.lastSync === undefined && doc.status === 'ready' && doc.lastSyncedAt) return { status: 'succeeded', error: null, at: iso(doc.lastSyncedAt) };
  if (doc.lastSync === undefined && doc.status === 'failed') return { status: 'failed', error: doc.error ?? 'the sync failed', at: iso(doc.updatedAt) };
  return null;
}

/** The public shape of a source: no account id, credentials, staging or lease internals; config holds no secret. */
export function toSourceDto(doc: SourceDoc): SourceDto {
  const next = nextSyncAt(doc);
  return {
    id: doc._id,
    name: doc.name,
    type: doc.type,
    config: publicConfig(doc.config),
    status: doc.status,
    error: doc.status === 'failed' ? (doc.error ?? 'the sync failed') : null,
    schema: doc.schema.map((c) => ({ name: c.name, type: c.type })),
    rowCount: doc.rowCount,
    lastSyncedAt: doc.lastSyncedAt ? iso(doc.lastSyncedAt) : null,
    lastSync: lastSyncOf(doc),
    schedule: doc.schedule ?? null,
    schemaPolicy: doc.schemaPolicy ?? 'evolve',
    quarantine: doc.quarantine ? { rowCount: doc.quarantine.rowCount, at: iso(doc.quarantine.at) } : null,
    incremental: doc.incremental ? { cursorField: doc.incremental.cursorField, primaryKey: doc.incremental.primaryKey ?? null, cursor: doc.cursor ?? null } : null,
    nextSyncAt: next ? iso(next) : null,
    createdAt: iso(doc.createdAt),
    updatedAt: iso(doc.updatedAt),
  };
}
