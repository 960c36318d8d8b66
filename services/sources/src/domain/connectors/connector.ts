import type { CreateSourceBody, RemoteSourceType, SourceConfigDto, SourceType } from '@dap/contracts';
import type { DatasetStore, StagedFormat } from '@dap/datasets';
import type { Logger } from '@dap/logger';
import type { OutboundGuard } from '@dap/netguard';
import type { DownloadRunner } from '../../workers/download/download-worker.ts';

/**
 * A connector refuses a source (400 on create) or fails a sync with a reason the client can act on, naming
 * the body field at fault. The message is shown to the customer as is: it never carries a secret.
 */
export class ConnectorCheckError extends Error {
  readonly field: string;
  /** The SSRF guard refused the target (a 422 rather than a 400: the request is well formed, its target is not allowed). */
  readonly targetRefused: boolean;

  constructor(field: string, reason: string, opts: { targetRefused?: boolean } = {}) {
    super(reason);
    this.name = 'ConnectorCheckError';
    this.field = field;
    this.targetRefused = opts.targetRefused ?? false;
  }
}

export interface ConnectorContext {
  store: DatasetStore;
  accountId: string;
  sourceId: string;
}

export type BodyOf<T extends SourceType> = Extract<CreateSourceBody, { type: T }>;
export type UploadSourceType = Exclude<SourceType, RemoteSourceType>;

/** Upload sources carry their data in the request: it is checked, then staged once; every sync re-loads it. */
export interface UploadConnector<T extends UploadSourceType> {
  readonly type: T;
  readonly mode: 'upload';
  check(body: BodyOf<T>, ctx: ConnectorContext): Promise<void>;
  stage(body: BodyOf<T>, ctx: ConnectorContext): Promise<StagedFormat>;
}

/** Limits that bound every remote pull (config SOURCE_*). */
export interface RemoteLimits {
  maxBytes: number;
  connectTimeoutMs: number;
  checkTimeoutMs: number;
  urlTimeoutMs: number;
  idleTimeoutMs: number;
  dbTimeoutMs: number;
}

export interface RemoteContext {
  guard: OutboundGuard;
  limits: RemoteLimits;
  store: DatasetStore;
  logger: Logger;
  /** Aborted on timeout or shutdown; a connector closes its connection when it fires. */
  signal: AbortSignal;
}

/**
 * An incremental pull (database sources): the rows whose `cursorField` is at or past `since` (every row when
 * null), in cursor order, so the last row read carries the highest value.
 */
export interface IncrementalRead {
  cursorField: string;
  /** The last cursor value the previous sync saw, as the origin printed it; null for a full pull. */
  since: string | null;
}

export interface PullContext extends RemoteContext {
  accountId: string;
  sourceId: string;
  /** Set for a source that syncs incrementally: the pull reads in cursor order, past `since`. */
  incremental?: IncrementalRead;
  /** Runs URL downloads off the main thread; without it they run in this thread. */
  downloads?: DownloadRunner;
}

/** A DuckDB type the loader reads a staged column as, when the origin knows its types (databases). */
export type StagedColumnType = 'BIGINT' | 'DOUBLE' | 'BOOLEAN' | 'VARCHAR' | 'DATE' | 'TIMESTAMP';
export interface StagedColumn {
  name: string;
  type: StagedColumnType;
}

export interface PullResult {
  format: StagedFormat;
  /** Column types known at the origin; without them the loader infers types from the data. */
  columns?: StagedColumn[];
  /** Field names come from documents (JSON, MongoDB) and follow the same rules as uploaded JSON. */
  checkFieldNames?: boolean;
  /** Rows read, when the connector counts them (databases). */
  rows?: number;
  /** An incremental pull: the highest cursor value read, as the origin printed it (null: no row had one). */
  cursor?: string | null;
}

/**
 * Remote sources keep only connection details, sealed with the credentials key; every sync pulls the data
 * again. `specOf` normalizes a request body into the details to seal, `publicConfigOf` is what the API
 * shows (never a secret), `check` is a bounded probe run before the source is accepted, and `pull` streams
 * the data into the source's staging file.
 */
export interface RemoteConnector<T extends RemoteSourceType, S = unknown> {
  readonly type: T;
  readonly mode: 'remote';
  specOf(body: BodyOf<T>): S;
  /** Validates a decrypted spec read back from storage (a shape change or a tampered document fails here). */
  parseSpec(value: unknown): S;
  publicConfigOf(spec: S): SourceConfigDto;
  check(spec: S, ctx: RemoteContext): Promise<void>;
  pull(spec: S, ctx: PullContext): Promise<PullResult>;
}

export type AnyConnector = UploadConnector<UploadSourceType> | RemoteConnector<RemoteSourceType>;
