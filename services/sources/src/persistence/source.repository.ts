import type { Column, DomainEvent, IncrementalSettings, SchemaPolicy, SourceConfigDto, SourceStatus, SourceType, SyncMode, SyncSchedule } from '@dap/contracts';
import type { StagedFormat } from '@dap/datasets';
import { OUTBOX_PENDING_INDEX, TenantCollection, type TenantDoc } from '@dap/mongo';

export interface SourceDoc extends TenantDoc {
  name: string;
  type: SourceType;
  /** What the API shows of the source's settings: never a secret (upload sources have none). */
  config: SourceConfigDto;
  /**
   * Remote sources: everything needed to pull again (URL and headers, or host, user, password…), sealed
   * with AES-256-GCM under SOURCE_CREDENTIALS_KEY and bound to this account and source. Null for uploads.
   */
  credentials?: string | null;
  /** Format of the staged upload that every sync re-ingests; null for remote sources. */
  staged: StagedFormat | null;
  status: SourceStatus;
  error: string | null;
  schema: Column[];
  rowCount: number;
  /** When the data queries read was synced: the last successful sync. */
  lastSyncedAt: Date | null;
  /** The last finished sync, successful or not (absent on documents written before it existed). */
  lastSync?: LastSync | null;
  createdAt: Date;
  updatedAt: Date;
  /** The request that asked for the current sync; its events carry it. */
  requestId: string | null;
  /** Held by the worker running the sync; an expired lease means that worker died and another may take over. */
  syncToken: string | null;
  syncOwner: string | null;
  syncLeaseUntil: Date | null;
  /** When the source syncs by itself (remote sources); absent or null: only on request. */
  schedule?: SyncSchedule | null;
  /** Changes with every new schedule, so a sync that read an older one does not set the new one's times. */
  scheduleRev?: string | null;
  /** The next regular scheduled run. */
  nextRunAt?: Date | null;
  /** The retry of a failed run, before the next regular one; null when none is due. */
  retryAt?: Date | null;
  /** Retries made in the current failure streak. */
  retryAttempt?: number;
  /** What a sync does when the data's columns change; absent: evolve. */
  schemaPolicy?: SchemaPolicy;
  /** The rows the last quarantining sync set aside (the source's `quarantine.csv`), and when. */
  quarantine?: { rowCount: number; at: Date } | null;
  /** Consecutive failed syncs; `source.failed` of a scheduled source is raised on the first only. */
  failStreak?: number;
  /** Database sources that pull only new and changed rows; absent or null: every sync pulls everything. */
  incremental?: IncrementalSettings | null;
  /**
   * The highest cursor value of the published data, as the origin printed it: the next incremental pull reads
   * from it. Written with the outcome of the sync that published that data, never before; null: pull everything.
   */
  cursor?: string | null;
}

export interface LastSync {
  status: 'succeeded' | 'failed';
  error: string | null;
  at: Date;
  /** A succeeded sync: how it pulled, the rows it read and the rows of those written into the data. */
  mode?: SyncMode;
  rowsPulled?: number;
  rowsMerged?: number;
}

export const SOURCES_COLLECTION = 'sources';

type Db = ConstructorParameters<typeof TenantCollection>[0];
type NewSource = Omit<SourceDoc, 'accountId' | 'deletedAt' | '_outbox' | '_outboxPending'>;

/** Every method takes the account id first; the one cross-tenant read (crash recovery) says so in its name. */
export class SourceRepository {
  readonly coll: TenantCollection<SourceDoc>;

  constructor(db: Db, onEvents: () => void) {
    this.coll = new TenantCollection<SourceDoc>(db, SOURCES_COLLECTION, onEvents);
  }

  async ensureIndexes(): Promise<void> {
    await this.coll.raw.createIndex({ accountId: 1, _id: -1 });
    await this.coll.raw.createIndex({ status: 1 });
    await this.coll.raw.createIndex({ nextRunAt: 1 }, { sparse: true });
    await this.coll.raw.createIndex({ retryAt: 1 }, { sparse: true });
    await this.coll.raw.createIndex(...OUTBOX_PENDING_INDEX);
  }

  findById(accountId: string, id: string): Promise<SourceDoc | null> {
    return this.coll.findById(accountId, id);
  }

  list(accountId: string, limit: number, before?: string): Promise<SourceDoc[]> {
    return this.coll.list(accountId, { limit, ...(before ? { before } : {}) });
  }

  insert(accountId: string, doc: NewSource, events: DomainEvent[]): Promise<SourceDoc> {
    return this.coll.insert(accountId, doc, events);
  }

  /**
   * Puts a settled source (ready or failed) back to pending; null when it is missing or already queued. A full
   * re-sync also clears the incremental cursor, so the sync that claims it pulls everything: it applies to a
   * pending source too, but not to one whose sync is running (that sync would write its own cursor after).
   */
  requestSync(accountId: string, id: string, requestId: string, now: Date, full = false): Promise<SourceDoc | null> {
    return this.coll.update(accountId, id, { status: 'pending', error: null, requestId, updatedAt: now, ...(full ? { cursor: null } : {}) }, [], {
      status: { $in: full ? ['ready', 'failed', 'pending'] : ['ready', 'failed'] },
    });
  }

  /** Takes a pending source, or one whose sync lease has expired; null when another worker holds it. */
  claim(accountId: string, id: string, lease: { token: string; owner: string; until: Date }, now: Date): Promise<SourceDoc | null> {
    return this.coll.update(accountId, id, { status: 'syncing', syncToken: lease.token, syncOwner: lease.owner, syncLeaseUntil: lease.until, updatedAt: now }, [], {
      $or: [{ status: 'pending' }, { status: 'syncing', syncLeaseUntil: { $lt: now } }],
    });
  }

  /**
   * Takes a source to swap its staged upload: like a sync's claim, but also from ready or failed, so no sync
   * reads the file while it is replaced; null when a live sync holds it (or it is gone).
   */
  claimForUpload(accountId: string, id: string, lease: { token: string; owner: string; until: Date }, now: Date): Promise<SourceDoc | null> {
    return this.coll.update(accountId, id, { status: 'syncing', syncToken: lease.token, syncOwner: lease.owner, syncLeaseUntil: lease.until, updatedAt: now }, [], {
      $or: [{ status: { $in: ['pending', 'ready', 'failed'] } }, { status: 'syncing', syncLeaseUntil: { $lt: now } }],
    });
  }

  /** Hands a source whose upload was swapped back to the syncs, pending with its new staged format. */
  releaseUpload(accountId: string, id: string, token: string, staged: StagedFormat, requestId: string, now: Date): Promise<SourceDoc | null> {
    return this.coll.update(accountId, id, { status: 'pending', error: null, staged, requestId, updatedAt: now, syncToken: null, syncOwner: null, syncLeaseUntil: null }, [], {
      syncToken: token,
      status: 'syncing',
    });
  }

  async renewLease(accountId: string, id: string, token: string, leaseUntil: Date): Promise<boolean> {
    return (await this.coll.update(accountId, id, { syncLeaseUntil: leaseUntil }, [], { syncToken: token })) !== null;
  }

  /**
   * Records the outcome of a sync with its event, only if this worker still holds the source. With `scheduleRev`,
   * only if the source's schedule is still that one too (the outcome then carries the schedule's next run).
   */
  finish(
    accountId: string,
    id: string,
    token: string,
    outcome: Pick<SourceDoc, 'status' | 'error'> & { lastSync: LastSync } & Partial<
        Pick<SourceDoc, 'schema' | 'rowCount' | 'lastSyncedAt' | 'failStreak' | 'nextRunAt' | 'retryAt' | 'retryAttempt' | 'quarantine' | 'cursor'>
      >,
    events: DomainEvent[],
    now: Date,
    scheduleRev?: string,
  ): Promise<SourceDoc | null> {
    return this.coll.update(accountId, id, { ...outcome, updatedAt: now, syncToken: null, syncOwner: null, syncLeaseUntil: null }, events, {
      syncToken: token,
      status: 'syncing',
      ...(scheduleRev !== undefined ? { scheduleRev } : {}),
    });
  }

  softDelete(accountId: string, id: string, events: DomainEvent[]): Promise<SourceDoc | null> {
    return this.coll.softDelete(accountId, id, events);
  }

  /**
   * Crash recovery across all accounts, run once at start-up: syncs this instance held before it stopped cannot
   * still be running, so they go back to pending without waiting for their leases to expire.
   */
  async releaseOwnedAcrossAccounts(owner: string, now: Date): Promise<number> {
    const res = await this.coll.raw.updateMany(
      { deletedAt: null, status: 'syncing', syncOwner: owner },
      { $set: { status: 'pending', syncToken: null, syncOwner: null, syncLeaseUntil: null, updatedAt: now } },
    );
    return res.modifiedCount;
  }

  /**
   * Crash recovery across all accounts: sources waiting for a sync, or whose worker's lease has run out, at most
   * `perAccount` of each account (oldest first), so one account's backlog never hides another's sources.
   */
  async findUnfinishedAcrossAccounts(now: Date, perAccount: number): Promise<{ accountId: string; id: string }[]> {
    const unfinished = { deletedAt: null, $or: [{ status: 'pending' }, { status: 'syncing', syncLeaseUntil: { $lt: now } }] };
    const accounts = (await this.coll.raw.distinct('accountId', unfinished)).map(String);
    const found: { accountId: string; id: string }[] = [];
    for (const accountId of accounts) {
      const docs = await this.coll.raw
        .find({ ...unfinished, accountId }, { projection: { _id: 1 } })
        .sort({ _id: 1 })
        .limit(perAccount)
        .toArray();
      for (const d of docs) found.push({ accountId, id: String(d._id) });
    }
    return found;
  }

  /**
   * Sets (or with null removes) the source's schedule, its schema policy and its incremental settings (which
   * restart the cursor: the next sync pulls everything); null when it is gone, or for new incremental settings
   * while a sync runs (that sync would save a cursor read under the old ones).
   */
  updateSettings(
    accountId: string,
    id: string,
    set: {
      schedule?: { schedule: SyncSchedule | null; nextRunAt: Date | null; rev: string } | undefined;
      schemaPolicy?: SchemaPolicy;
      incremental?: IncrementalSettings | null;
    },
    now: Date,
  ): Promise<SourceDoc | null> {
    const s = set.schedule;
    return this.coll.update(
      accountId,
      id,
      {
        ...(s ? { schedule: s.schedule, scheduleRev: s.rev, nextRunAt: s.nextRunAt, retryAt: null, retryAttempt: 0 } : {}),
        ...(set.schemaPolicy ? { schemaPolicy: set.schemaPolicy } : {}),
        ...(set.incremental !== undefined ? { incremental: set.incremental, cursor: null } : {}),
        updatedAt: now,
      },
      [],
      set.incremental !== undefined ? { status: { $ne: 'syncing' } } : {},
    );
  }

  /**
   * Across all accounts: settled scheduled sources whose regular run or retry is due, most overdue first.
   * Sources already pending or syncing are left to the sync under way, which sets their next run when it ends.
   */
  async findDueAcrossAccounts(now: Date, limit: number): Promise<Pick<SourceDoc, 'accountId' | '_id' | 'schedule' | 'scheduleRev' | 'nextRunAt' | 'retryAt'>[]> {
    return (await this.coll.raw
      .find(
        { deletedAt: null, schedule: { $type: 'object' }, status: { $in: ['ready', 'failed'] }, $or: [{ nextRunAt: { $lte: now } }, { retryAt: { $lte: now } }] },
        { projection: { accountId: 1, schedule: 1, scheduleRev: 1, nextRunAt: 1, retryAt: 1 } },
      )
      .sort({ nextRunAt: 1 })
      .limit(limit)
      .toArray()) as never;
  }

  /**
   * Starts a due scheduled run: the source goes back to pending for the sync path to claim, and its regular run
   * moves on when that was what fell due. The write matches the run times the sweep read, so of several
   * instances that found the same due run exactly one starts it.
   */
  startScheduled(
    accountId: string,
    id: string,
    seen: { scheduleRev: string | null; nextRunAt: Date | null; retryAt: Date | null },
    next: { nextRunAt: Date | null; retryAt: Date | null },
    now: Date,
  ): Promise<SourceDoc | null> {
    return this.coll.update(accountId, id, { status: 'pending', error: null, requestId: null, updatedAt: now, ...next }, [], {
      status: { $in: ['ready', 'failed'] },
      scheduleRev: seen.scheduleRev,
      nextRunAt: seen.nextRunAt,
      retryAt: seen.retryAt,
    });
  }
}
