import { isId, newId, type CallerContext, type CreateSourceBody, type ListQuery } from '@dap/contracts';
import type { DatasetStore } from '@dap/datasets';
import { decodeCursor, toPage, type Page } from '@dap/http';
import type { Logger } from '@dap/logger';
import { ConnectorCheckError, connectorFor, type BodyOf, type Connector } from '../connectors/index.ts';
import type { SourceDoc, SourceRepository } from '../persistence/source.repository.ts';
import { sourceNotFound, sourceRefused } from './errors.ts';
import { sourceCreated, sourceDeleted } from './events.ts';

export interface SyncScheduler {
  schedule(accountId: string, sourceId: string): void;
}

export interface SourceServiceDeps {
  repo: SourceRepository;
  store: DatasetStore;
  syncer: SyncScheduler;
  logger: Logger;
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
    const page = toPage<WithId>(rows.map((r) => ({ ...r, id: r._id })), query.limit);
    return page;
  }

  async get(accountId: string, id: string): Promise<SourceDoc> {
    if (!isId('src', id)) throw sourceNotFound();
    const doc = await this.deps.repo.findById(accountId, id);
    if (!doc) throw sourceNotFound();
    return doc;
  }

  /**
   * Checks the source, stages its raw data durably, then stores it as pending together with `source.created`;
   * the sync that makes it ready runs in the background.
   */
  async create(caller: CallerContext, body: CreateSourceBody): Promise<SourceDoc> {
    const { repo, store, syncer } = this.deps;
    const accountId = caller.accountId;
    const id = newId('src');
    const connector = connectorFor(body.type) as Connector<CreateSourceBody['type']>;
    const ctx = { store, accountId, sourceId: id };
    const typed = body as BodyOf<CreateSourceBody['type']>;
    try {
      await connector.check(typed, ctx);
    } catch (err) {
      if (err instanceof ConnectorCheckError) throw sourceRefused(err);
      throw err;
    }
    let doc: SourceDoc;
    try {
      const staged = connector.mode === 'upload' ? await connector.stage(typed, ctx) : null;
      const now = new Date();
      doc = await repo.insert(
        accountId,
        {
          _id: id,
          name: body.name,
          type: body.type,
          config: connector.configOf(typed),
          staged,
          status: 'pending',
          error: null,
          schema: [],
          rowCount: 0,
          lastSyncedAt: null,
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
      throw err;
    }
    syncer.schedule(accountId, id);
    return doc;
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
