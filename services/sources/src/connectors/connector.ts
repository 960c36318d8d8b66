import type { CreateSourceBody, SourceType } from '@dap/contracts';
import type { DatasetStore, StagedFormat } from '@dap/datasets';

/** A connector refuses a source with a reason the client can act on, naming the body field at fault. */
export class ConnectorCheckError extends Error {
  readonly field: string;

  constructor(field: string, reason: string) {
    super(reason);
    this.name = 'ConnectorCheckError';
    this.field = field;
  }
}

export interface ConnectorContext {
  store: DatasetStore;
  accountId: string;
  sourceId: string;
}

export type BodyOf<T extends SourceType> = Extract<CreateSourceBody, { type: T }>;

/**
 * One module per source type. `check` runs before a source is accepted and must stay cheap (a bounded probe,
 * never a full load). `stage` writes the raw data durably to the source's staging file, in a format
 * `DatasetStore.ingest` reads. Upload connectors stage once, on create, and every sync re-ingests that file;
 * remote connectors (HTTP, databases) will stage from their stored config at every sync instead.
 */
export interface Connector<T extends SourceType> {
  readonly type: T;
  readonly mode: 'upload' | 'remote';
  check(body: BodyOf<T>, ctx: ConnectorContext): Promise<void>;
  stage(body: BodyOf<T>, ctx: ConnectorContext): Promise<StagedFormat>;
  /** Optional: checks the whole staged data before each load (the create-time check may see only a prefix). */
  validateStaged?(ctx: ConnectorContext): Promise<void>;
  /** What the source document keeps to sync again later: never the raw data, secrets only encrypted. */
  configOf(body: BodyOf<T>): Record<string, unknown>;
}
