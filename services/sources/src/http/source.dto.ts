import type { SourceDto } from '@dap/contracts';
import type { SourceDoc } from '../persistence/source.repository.ts';

const iso = (d: Date | string) => new Date(d).toISOString();

/** The public shape of a source: no account id, connector config, staging or lease internals. */
export function toSourceDto(doc: SourceDoc): SourceDto {
  return {
    id: doc._id,
    name: doc.name,
    type: doc.type,
    status: doc.status,
    error: doc.status === 'failed' ? (doc.error ?? 'the sync failed') : null,
    schema: doc.schema.map((c) => ({ name: c.name, type: c.type })),
    rowCount: doc.rowCount,
    lastSyncedAt: doc.lastSyncedAt ? iso(doc.lastSyncedAt) : null,
    createdAt: iso(doc.createdAt),
    updatedAt: iso(doc.updatedAt),
  };
}
