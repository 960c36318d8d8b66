import { makeEvent, type Column, type SyncMode } from '@dap/contracts';
import type { SourceDoc } from '../persistence/source.repository.ts';
import type { SchemaDiff } from './schema-drift.ts';

/** Each state change of a source and the event announcing it are built here and stored in one write. */
export const sourceCreated = (accountId: string, doc: Pick<SourceDoc, '_id' | 'name' | 'type'>, requestId: string | null) =>
  makeEvent('source.created', { accountId, subject: doc._id, requestId, data: { id: doc._id, name: doc.name, type: doc.type } });

/** `sync`: how the sync pulled, the rows it read and the rows of those written into the data. */
export const sourceReady = (doc: SourceDoc, result: { rowCount: number; schema: Column[] }, sync?: { mode: SyncMode; rowsPulled: number; rowsMerged: number }) =>
  makeEvent('source.ready', {
    accountId: doc.accountId,
    subject: doc._id,
    requestId: doc.requestId,
    data: { id: doc._id, name: doc.name, type: doc.type, rowCount: result.rowCount, schema: result.schema, ...(sync ? { sync } : {}) },
  });

/** `keepsData`: the source stays ready on its last good data (`doc`'s schema and row count). */
export const sourceFailed = (doc: SourceDoc, error: string, keepsData = false) =>
  makeEvent('source.failed', {
    accountId: doc.accountId,
    subject: doc._id,
    requestId: doc.requestId,
    data: { id: doc._id, name: doc.name, error, ...(keepsData ? { kept: { rowCount: doc.rowCount, schema: doc.schema } } : {}) },
  });

/** `applied`: the new data and schema were published (evolve); false when the policy refused them (freeze). */
export const sourceSchemaChanged = (doc: SourceDoc, diff: SchemaDiff, applied: boolean, rows: { read: number; loaded: number; quarantined: number } | null = null) =>
  makeEvent('source.schema_changed', {
    accountId: doc.accountId,
    subject: doc._id,
    requestId: doc.requestId,
    data: { id: doc._id, name: doc.name, policy: doc.schemaPolicy ?? 'evolve', applied, ...diff, ...(rows ? { rows } : {}) },
  });

export const sourceDeleted = (accountId: string, id: string, requestId: string | null) => makeEvent('source.deleted', { accountId, subject: id, requestId, data: { id } });
