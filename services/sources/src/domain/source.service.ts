import { open, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  decodeCursor,
  FILE_FORMATS,
  isId,
  newId,
  toPage,
  type CallerContext,
  type CreateSourceBody,
  type FileFormat,
  type ListQuery,
  type Page,
  type RemoteSourceType,
  type SourceConfigDto,
  type SyncMode,
  type UpdateSourceBody,
} from '@dap/contracts';
import type { DatasetStore, StagedFormat } from '@dap/datasets';
import type { Logger } from '@dap/logger';
import { DisallowedTargetError, type OutboundGuard } from '@dap/netguard';
import { ConnectorCheckError, connectorFor, type BodyOf, type RemoteConnector, type RemoteLimits, type UploadConnector } from './connectors/index.ts';
import type { UploadSourceType } from './connectors/connector.ts';
import type { SourceDoc, SourceRepository } from '../persistence/source.repository.ts';
import { credentialsContext, type CredentialCipher } from '../persistence/credentials.ts';
import { checkFileHead, FILE_PROBE_BYTES } from './connectors/file-check.ts';
import { stagingTemp } from './ingest/staging-file.ts';
import {
  credentialsUnavailable,
  fieldInvalid,
  notAFileSource,
  quarantineNotFound,
  sourceNotFound,
  sourceRefused,
  targetNotAllowed,
  syncRunning,
  wrongUploadFormat,
} from './errors.ts';
import { sourceCreated, sourceDeleted } from './events.ts';
import { checkSchedule, nextRegularRun } from './schedule.ts';
import { QUARANTINE_FILE } from './quarantine.ts';

/** The sources that can pull only new and changed rows (a cursor column in a table or collection). */
const DATABASE_TYPES: ReadonlySet<string> = new Set(['postgres', 'mysql', 'mongodb']);

const isFileFormat = (type: string): type is FileFormat => (FILE_FORMATS as readonly string[]).includes(type);

export interface SyncScheduler {
  schedule(accountId: string, sourceId: string): void;
}

export interface SourceServiceDeps {
  repo: SourceRepository;
  store: DatasetStore;
  syncer: SyncScheduler;
  logger: Logger;
  /** Seals remote sources' connection details; null when SOURCE_CREDENTIALS_KEY is not configured. */
  cipher: CredentialCipher | null;
  guard: OutboundGuard;
  limits: RemoteLimits;
  /** Aborted at shutdown, cutting connection checks short. */
  shutdown: AbortSignal;
  /** The time schedules count from; tests move it by hand. */
  clock?: () => Date;
}

/** What a new source stores besides its name and type, as prepared by its connector. */
interface Prepared {
  config: SourceConfigDto;
  credentials: string | null;
  staged: StagedFormat | null;
}

type WithId = SourceDoc & { id: string };

/** An uploaded file, streamed to a temporary file beside the source's staging file. */
export interface UploadedFile {
  name: string;
  format: FileFormat;
  file: string;
}

/** An upload holds its source this long while it swaps the staged file (a rename); a crash frees it after. */
const UPLOAD_LEASE_MS = 60_000;

/** The first MiB of a file, and whether that is all of it. */
async function headOf(file: string): Promise<{ data: Buffer; complete: boolean }> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(FILE_PROBE_BYTES + 1);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return { data: buf.subarray(0, Math.min(bytesRead, FILE_PROBE_BYTES)), complete: bytesRead <= FILE_PROBE_BYTES };
  } finally {
    await fh.close();
  }
}

/** A new source's state before its first sync: pending, empty, with no sync holding it. */
function awaitingFirstSync(now: Date, requestId: string | null) {
  return {
    status: 'pending' as const,
    error: null,
    schema: [],
    rowCount: 0,
    lastSyncedAt: null,
    lastSync: null,
    createdAt: now,
    updatedAt: now,
    requestId,
    syncToken: null,
    syncOwner: null,
    syncLeaseUntil: null,
  };
}

export class SourceService {
  private readonly deps: SourceServiceDeps;

  constructor(deps: SourceServiceDeps) {
    this.deps = deps;
  }

  private now(): Date {
    return this.deps.clock ? this.deps.clock() : new Date();
  }

  async list(accountId: string, query: ListQuery): Promise<Page<SourceDoc>> {
    const before = decodeCursor(query.cursor, (id) => isId('src', id));
    const rows = await this.deps.repo.list(accountId, query.limit + 1, before);
    const page = toPage<WithId>(
      rows.map((r) => ({ ...r, id: r._id })),
      query.limit,
    );
    return page;
  }

  async get(accountId: string, id: string): Promise<SourceDoc> {
    if (!isId('src', id)) throw sourceNotFound();
    const doc = await this.deps.repo.findById(accountId, id);
    if (!doc) throw sourceNotFound();
    return doc;
  }

  /**
   * Checks the source (an upload parses; a remote source answers a bounded probe with its credentials),
   * stages an upload's raw data durably or seals a remote source's connection details, then stores it as
   * pending together with `source.created`; the sync that makes it ready runs in the background.
   */
  async create(caller: CallerContext, body: CreateSourceBody): Promise<SourceDoc> {
    const { repo, store, syncer } = this.deps;
    const accountId = caller.accountId;
    const id = newId('src');
    const connector = connectorFor(body.type);
    const schedule = 'schedule' in body && body.schedule ? body.schedule : null;
    if (schedule) checkSchedule(body.type, schedule, this.now());
    let doc: SourceDoc;
    try {
      const prepared =
        connector.mode === 'upload'
          ? await this.prepareUpload(connector, body as BodyOf<UploadSourceType>, accountId, id)
          : await this.prepareRemote(connector, body as BodyOf<RemoteSourceType>, accountId, id);
      const now = this.now();
      doc = await repo.insert(
        accountId,
        {
          _id: id,
          name: body.name,
          type: body.type,
          config: prepared.config,
          credentials: prepared.credentials,
          staged: prepared.staged,
          ...awaitingFirstSync(now, caller.requestId),
          // The first sync starts now; the schedule takes over from its first regular run.
          ...(schedule ? { schedule, scheduleRev: newId('msg'), nextRunAt: nextRegularRun(schedule, now), retryAt: null, retryAttempt: 0, failStreak: 0 } : {}),
          ...('schemaPolicy' in body && body.schemaPolicy ? { schemaPolicy: body.schemaPolicy } : {}),
          ...('incremental' in body && body.incremental ? { incremental: body.incremental, cursor: null } : {}),
        },
        [sourceCreated(accountId, { _id: id, name: body.name, type: body.type }, caller.requestId)],
      );
    } catch (err) {
      await store.remove(accountId, id).catch(() => undefined);
      if (err instanceof ConnectorCheckError) throw err.targetRefused ? targetNotAllowed(err) : sourceRefused(err);
      if (err instanceof DisallowedTargetError) throw targetNotAllowed(new ConnectorCheckError('connection', err.message, { targetRefused: true }));
      throw err;
    }
    syncer.schedule(accountId, id);
    return doc;
  }

  private async prepareUpload(connector: UploadConnector<UploadSourceType>, body: BodyOf<UploadSourceType>, accountId: string, sourceId: string): Promise<Prepared> {
    const ctx = { store: this.deps.store, accountId, sourceId };
    await connector.check(body, ctx);
    return { config: {}, credentials: null, staged: await connector.stage(body, ctx) };
  }

  private async prepareRemote(connector: RemoteConnector<RemoteSourceType>, body: BodyOf<RemoteSourceType>, accountId: string, sourceId: string): Promise<Prepared> {
    const { cipher, guard, limits, store, logger, shutdown } = this.deps;
    if (!cipher) throw credentialsUnavailable();
    const spec = connector.specOf(body);
    await connector.check(spec, { guard, limits, store, logger, signal: shutdown });
    return { config: connector.publicConfigOf(spec), credentials: cipher.seal(spec, credentialsContext(accountId, sourceId)), staged: null };
  }

  /** Where an upload for this source streams its file; the directory is the source's, removed with it. */
  uploadTemp(accountId: string, sourceId: string): Promise<string> {
    return stagingTemp(this.deps.store, accountId, sourceId);
  }

  /** Drops what an upload that failed before its source was stored left behind. */
  async discardNew(accountId: string, sourceId: string): Promise<void> {
    await this.deps.store.remove(accountId, sourceId).catch((err: unknown) => this.deps.logger.warn({ err, sourceId }, 'could not remove a failed upload'));
  }

  async discardTemp(file: string): Promise<void> {
    await rm(file, { force: true });
  }

  /** The file source an upload would replace the data of (404, or 409 for a source whose data is not a file). */
  async fileSource(accountId: string, id: string): Promise<SourceDoc & { type: FileFormat }> {
    const doc = await this.get(accountId, id);
    if (!isFileFormat(doc.type)) throw notAFileSource(doc.type);
    return doc as SourceDoc & { type: FileFormat };
  }

  /** The file must parse as its format (its first MiB is read, as for a URL): a 400 names the reason. */
  private async checkUpload(format: FileFormat, file: string): Promise<void> {
    const head = await headOf(file);
    try {
      await checkFileHead('file', format, head.data, head.complete, { store: this.deps.store });
    } catch (err) {
      if (err instanceof ConnectorCheckError) throw sourceRefused(err);
      throw err;
    }
  }

  /**
   * A file source from a streamed upload: the file is checked, moved into place as the staged upload, and the
   * source stored pending with `source.created`; the load runs in the background like every sync.
   */
  async createFromUpload(caller: CallerContext, id: string, upload: UploadedFile): Promise<SourceDoc> {
    const { repo, store, syncer } = this.deps;
    const accountId = caller.accountId;
    let doc: SourceDoc;
    try {
      await this.checkUpload(upload.format, upload.file);
      await rename(upload.file, store.stagingFile(accountId, id, upload.format));
      const now = new Date();
      doc = await repo.insert(
        accountId,
        {
          _id: id,
          name: upload.name,
          type: upload.format,
          config: {},
          credentials: null,
          staged: upload.format,
          ...awaitingFirstSync(now, caller.requestId),
        },
        [sourceCreated(accountId, { _id: id, name: upload.name, type: upload.format }, caller.requestId)],
      );
    } catch (err) {
      await store.remove(accountId, id).catch(() => undefined);
      throw err;
    }
    syncer.schedule(accountId, id);
    return doc;
  }

  /**
   * Replaces a file source's staged upload: checked, then swapped in while the upload holds the source's
   * lease (so no sync reads it half-way), and the source goes back to pending. 409 while a sync runs.
   */
  async replaceData(caller: CallerContext, id: string, upload: Omit<UploadedFile, 'name'>): Promise<SourceDoc> {
    const { repo, store, syncer } = this.deps;
    const accountId = caller.accountId;
    try {
      const current = await this.fileSource(accountId, id);
      if (upload.format !== current.type) throw wrongUploadFormat(current.type, upload.format);
      await this.checkUpload(upload.format, upload.file);
      const token = newId('msg');
      const claimed = await repo.claimForUpload(accountId, id, { token, owner: `upload:${caller.requestId}`, until: new Date(Date.now() + UPLOAD_LEASE_MS) }, new Date());
      if (!claimed) throw (await repo.findById(accountId, id)) ? syncRunning() : sourceNotFound();
      await rename(upload.file, store.stagingFile(accountId, id, upload.format));
      // An inline-JSON upload was staged as NDJSON: that file is no longer the source's data.
      if (claimed.staged && claimed.staged !== upload.format) await rm(store.stagingFile(accountId, id, claimed.staged), { force: true });
      const released = await repo.releaseUpload(accountId, id, token, upload.format, caller.requestId, new Date());
      if (!released) throw sourceNotFound(); // deleted meanwhile
      syncer.schedule(accountId, id);
      return released;
    } finally {
      await rm(upload.file, { force: true });
    }
  }

  /**
   * Asks for a fresh sync; a source already waiting for or in a sync is answered as it is. `full` also restarts
   * an incremental source's cursor, so the sync pulls everything (409 while a sync of it runs: that sync would
   * save its own cursor after the reset).
   */
  async requestSync(caller: CallerContext, id: string, mode: SyncMode = 'incremental'): Promise<SourceDoc> {
    if (!isId('src', id)) throw sourceNotFound();
    const { repo, syncer } = this.deps;
    const updated = await repo.requestSync(caller.accountId, id, caller.requestId, new Date(), mode === 'full');
    const doc = updated ?? (await repo.findById(caller.accountId, id));
    if (!doc) throw sourceNotFound();
    if (!updated && mode === 'full' && doc.status === 'syncing') throw syncRunning('ask for the full re-sync again');
    syncer.schedule(caller.accountId, id);
    return doc;
  }

  /**
   * Changes a source's settings: a new schedule takes effect from now (its first regular run, with any retry of
   * the old one dropped); null removes it. A sync already running keeps going and leaves the new times alone.
   */
  async update(caller: CallerContext, id: string, body: UpdateSourceBody): Promise<SourceDoc> {
    const doc = await this.get(caller.accountId, id);
    const now = this.now();
    if (body.schedule) checkSchedule(doc.type, body.schedule, now);
    if (body.incremental && !DATABASE_TYPES.has(doc.type))
      throw fieldInvalid('incremental', `a ${doc.type} source cannot sync incrementally; only postgres, mysql and mongodb sources can`);
    const schedule = body.schedule === undefined ? undefined : { schedule: body.schedule, nextRunAt: body.schedule ? nextRegularRun(body.schedule, now) : null, rev: newId('msg') };
    const updated = await this.deps.repo.updateSettings(
      caller.accountId,
      id,
      { schedule, ...(body.schemaPolicy ? { schemaPolicy: body.schemaPolicy } : {}), ...(body.incremental !== undefined ? { incremental: body.incremental } : {}) },
      now,
    );
    if (!updated) throw (await this.deps.repo.findById(caller.accountId, id)) ? syncRunning('change the incremental settings again') : sourceNotFound();
    return updated;
  }

  /** The source's quarantined rows (CSV); 404 for an unknown source or one whose syncs quarantined nothing. */
  async quarantineFile(accountId: string, id: string): Promise<string> {
    const doc = await this.get(accountId, id);
    const file = join(this.deps.store.dir(accountId, id), QUARANTINE_FILE);
    if (!doc.quarantine || !(await stat(file).catch(() => null))) throw quarantineNotFound();
    return file;
  }

  /** Removes the source with its `source.deleted` event, then its data; a sync still running finds it gone. */
  async remove(caller: CallerContext, id: string): Promise<void> {
    if (!isId('src', id)) throw sourceNotFound();
    const { repo, store } = this.deps;
    const deleted = await repo.softDelete(caller.accountId, id, [sourceDeleted(caller.accountId, id, caller.requestId)]);
    if (!deleted) throw sourceNotFound();
    await store.remove(caller.accountId, id);
  }
}
