import { isId, newId, type CallerContext, type CreateSourceBody, type ListQuery, type RemoteSourceType, type SourceConfigDto } from '@dap/contracts';
import type { DatasetStore, StagedFormat } from '@dap/datasets';
import { decodeCursor, toPage, type Page } from '@dap/http';
import type { Logger } from '@dap/logger';
import { DisallowedTargetError, type OutboundGuard } from '@dap/netguard';
import { ConnectorCheckError, connectorFor, type BodyOf, type RemoteConnector, type RemoteLimits, type UploadConnector } from '../connectors/index.ts';
import type { UploadSourceType } from '../connectors/connector.ts';
import type { SourceDoc, SourceRepository } from '../persistence/source.repository.ts';
import { credentialsContext, type CredentialCipher } from '../secrets/credentials.ts';
import { credentialsUnavailable, sourceNotFound, sourceRefused } from './errors.ts';
import { sourceCreated, sourceDeleted } from './events.ts';

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
}

/** What a new source stores besides its name and type, as prepared by its connector. */
interface Prepared {
  config: SourceConfigDto;
  credentials: string | null;
  staged: StagedFormat | null;
}

type WithId = SourceDoc & { id: string };

export class SourceService {
  private readonly deps: SourceServiceDeps;

  constructor(deps: SourceServiceDeps) {
    this.deps = deps;
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
    let doc: SourceDoc;
    try {
      const prepared =
        connector.mode === 'upload'
          ? await this.prepareUpload(connector, body as BodyOf<UploadSourceType>, accountId, id)
          : await this.prepareRemote(connector, body as BodyOf<RemoteSourceType>, accountId, id);
      const now = new Date();
      doc = await repo.insert(
        accountId,
        {
          _id: id,
          name: body.name,
          type: body.type,
          config: prepared.config,
          credentials: prepared.credentials,
          staged: prepared.staged,
          status: 'pending',
          error: null,
          schema: [],
          rowCount: 0,
          lastSyncedAt: null,
          lastSync: null,
          createdAt: now,
          updatedAt: now,
          requestId: caller.requestId,
          syncToken: null,
          syncOwner: null,
          syncLeaseUntil: null,
        },
        [sourceCreated(accountId, { _id: id, name: body.name, type: body.type }, caller.requestId)],
      );
    } catch (err) {
      await store.remove(accountId, id).catch(() => undefined);
      if (err instanceof ConnectorCheckError) throw sourceRefused(err);
      if (err instanceof DisallowedTargetError) throw sourceRefused(new ConnectorCheckError('connection', err.message, { targetRefused: true }));
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

  /** Asks for a fresh sync; a source already waiting for or in a sync is answered as it is. */
  async requestSync(caller: CallerContext, id: string): Promise<SourceDoc> {
    if (!isId('src', id)) throw sourceNotFound();
    const { repo, syncer } = this.deps;
    const updated = await repo.requestSync(caller.accountId, id, caller.requestId, new Date());
    const doc = updated ?? (await repo.findById(caller.accountId, id));
    if (!doc) throw sourceNotFound();
    syncer.schedule(caller.accountId, id);
    return doc;
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
