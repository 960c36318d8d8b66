import { access, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { newId, type Column, type DomainEvent, type IncrementalSettings, type SyncMode } from '@dap/contracts';
import { sqlLiteral, type DatasetStore, type IngestResult } from '@dap/datasets';
import type { Logger } from '@dap/logger';
import type { OutboundGuard } from '@dap/netguard';
import { duckReason, isDuckError } from '../../domain/connectors/duck-errors.ts';
import { ConnectorCheckError, connectorFor, type RemoteLimits } from '../../domain/connectors/index.ts';
import { sourceFailed, sourceReady, sourceSchemaChanged } from '../../domain/events.ts';
import { LoadError, type DatasetLoader, type LoadRequest } from '../../domain/ingest/loader.ts';
import type { DownloadRunner } from '../download/download-worker.ts';
import type { SourceDoc, SourceRepository } from '../../persistence/source.repository.ts';
import { credentialsContext, CredentialsError, type CredentialCipher } from '../../persistence/credentials.ts';
import { JobRunner } from './job-runner.ts';
import { describeDiff, schemaDiff, type SchemaDiff } from '../../domain/schema-drift.ts';
import { quarantineRows, type QuarantineCounts } from '../../domain/quarantine.ts';
import { afterRun, nextRegularRun, type ScheduleRetry, type ScheduleState } from '../../domain/schedule.ts';
import { mergeIncrement } from '../../domain/incremental.ts';

/** A sync failure whose message is meant for the customer as is. */
export class SyncFailure extends Error {}

export interface SyncerOptions {
  repo: SourceRepository;
  store: DatasetStore;
  loader: DatasetLoader;
  cipher: CredentialCipher | null;
  guard: OutboundGuard;
  limits: RemoteLimits;
  /** Runs URL downloads in a worker thread; without it they run on the main thread. */
  downloads?: DownloadRunner;
  logger: Logger;
  concurrency: number;
  /** Syncs one account may run at once on this instance; accounts take the slots in turn. */
  accountConcurrency?: number;
  leaseMs: number;
  sweepMs: number;
  instanceId: string;
  /** How failed runs of scheduled sources are retried. */
  retry: ScheduleRetry;
  /** The time; tests move it by hand. */
  clock?: () => Date;
  /** Draws the backoff jitter. */
  random?: () => number;
}

/** What a sync's schema check found: the change, and under quarantine how the rows were split. */
interface Drift {
  diff: SchemaDiff | null;
  rows: QuarantineCounts | null;
}

/**
 * How a sync pulls and what it found. An incremental source's sync is incremental when it has a cursor and
 * published data to merge into; otherwise it is full (the first sync, or after a full re-sync was asked for).
 */
interface SyncPlan {
  settings: IncrementalSettings | null;
  mode: SyncMode;
  /** The cursor value the pull starts at (incremental mode). */
  since: string | null;
  /** The published data an incremental pull is merged into. */
  current: string | null;
  rowsPulled: number;
  rowsMerged: number;
  /** The highest cursor value the pull saw (incremental settings). */
  cursor: string | null;
}

/** Sources of one account a sweep queues; the queue runs them a few at a time, and the next sweep finds more. */
const SWEEP_PER_ACCOUNT = 20;
/** Due scheduled runs one sweep starts; the next sweep starts the rest. */
const SWEEP_SCHEDULED = 500;

/**
 * Moves sources pending → syncing → ready|failed in the background. Every state change is a conditional
 * write on the lease token, so two instances never both finish one sync, and a sync whose worker died (its
 * lease expired) is picked up again by the next sweep.
 */
export class SourceSyncer {
  private readonly opts: SyncerOptions;
  private readonly runner: JobRunner;
  /** Aborted by stop(): running pulls and loads are cut short and their sources left to be resumed. */
  private readonly shutdown = new AbortController();
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(opts: SyncerOptions) {
    this.opts = opts;
    this.runner = new JobRunner({ concurrency: opts.concurrency, perGroup: opts.accountConcurrency ?? opts.concurrency, logger: opts.logger });
  }

  private now(): Date {
    return this.opts.clock ? this.opts.clock() : new Date();
  }

  get enabled(): boolean {
    return this.opts.concurrency > 0;
  }

  /** Resumes what this instance left unfinished, then sweeps for pending work now and on a timer. */
  async start(): Promise<void> {
    if (!this.enabled) return;
    const released = await this.opts.repo.releaseOwnedAcrossAccounts(this.opts.instanceId, this.now());
    if (released) this.opts.logger.info({ released }, 'resuming syncs interrupted by the last shutdown');
    await this.sweep();
    const tick = () => {
      this.timer = setTimeout(() => {
        this.sweep()
          .catch((err) => this.opts.logger.warn({ err }, 'sync sweep failed; will retry'))
          .finally(() => {
            if (!this.stopped) tick();
          });
      }, this.opts.sweepMs);
    };
    tick();
  }

  schedule(accountId: string, sourceId: string): void {
    this.runner.enqueue(accountId, `${accountId}/${sourceId}`, () => this.syncOne(accountId, sourceId));
  }

  /**
   * Starts the scheduled runs that are due, then queues every source waiting for a sync or abandoned by a dead
   * worker; returns how many it queued.
   */
  async sweep(): Promise<number> {
    await this.startDue();
    const found = await this.opts.repo.findUnfinishedAcrossAccounts(this.now(), SWEEP_PER_ACCOUNT);
    for (const s of found) this.schedule(s.accountId, s.id);
    return found.length;
  }

  /**
   * Puts due scheduled sources back to pending, each with one conditional write (see startScheduled), so two
   * instances sweeping at once start a run once; the sync itself then runs under the usual lease.
   */
  private async startDue(): Promise<number> {
    const { repo, logger } = this.opts;
    const now = this.now();
    let started = 0;
    for (const due of await repo.findDueAcrossAccounts(now, SWEEP_SCHEDULED)) {
      if (!due.schedule) continue;
      const seen = { scheduleRev: due.scheduleRev ?? null, nextRunAt: due.nextRunAt ?? null, retryAt: due.retryAt ?? null };
      let nextRunAt = seen.nextRunAt;
      try {
        if (!nextRunAt || nextRunAt <= now) nextRunAt = nextRegularRun(due.schedule, now);
      } catch (err) {
        logger.warn({ err, sourceId: due._id }, 'a stored schedule no longer parses; leaving the source to syncs on request');
        nextRunAt = null;
      }
      if (await repo.startScheduled(due.accountId, due._id, seen, { nextRunAt, retryAt: null }, now)) started++;
    }
    if (started) logger.debug({ started }, 'scheduled syncs started');
    return started;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.shutdown.abort(new Error('the service is shutting down'));
    await this.runner.stop();
  }

  async syncOne(accountId: string, sourceId: string): Promise<void> {
    const { repo, store, logger, leaseMs, instanceId } = this.opts;
    const token = newId('msg');
    const doc = await repo.claim(accountId, sourceId, { token, owner: instanceId, until: new Date(this.now().getTime() + leaseMs) }, this.now());
    if (!doc) return; // deleted, settled, or held by a live worker
    const heartbeat = setInterval(
      () => {
        repo.renewLease(accountId, sourceId, token, new Date(this.now().getTime() + leaseMs)).catch((err) => logger.warn({ err, sourceId }, 'lease renewal failed'));
      },
      Math.max(250, Math.floor(leaseMs / 3)),
    );
    heartbeat.unref();
    let result: IngestResult;
    const timings = { pullMs: 0, loadMs: 0 };
    const drift: Drift = { diff: null, rows: null };
    let plan: SyncPlan;
    try {
      const p = (plan = await this.planOf(doc));
      result = await this.load(doc, timings, p, async (ctx) => {
        p.rowsPulled = await this.rowsIn(ctx.file);
        const checked = (await this.checkDrift(doc, ctx, drift)) ?? ctx.file;
        if (!p.current || !p.settings) return checked;
        const out = ctx.newFile();
        const merged = await mergeIncrement(store, {
          current: p.current,
          pulled: checked,
          pulledSchema: checked === ctx.file ? ctx.schema : await store.describeFile(checked),
          currentSchema: await store.describeFile(p.current),
          out,
          settings: p.settings,
        });
        p.rowsMerged = merged.merged;
        return out;
      });
    } catch (err) {
      clearInterval(heartbeat);
      await this.removeUnpublished(accountId, sourceId);
      if (this.shutdown.signal.aborted) {
        // Not the source's fault: it stays `syncing` under this instance, which resumes it when it starts again.
        logger.info({ accountId, sourceId }, 'source sync interrupted by shutdown');
        return;
      }
      const reason = this.reasonOf(err, doc);
      const now = this.now();
      const lastSync = { status: 'failed' as const, error: reason, at: now };
      // A failed re-sync leaves the published data untouched (only unpublished files were removed), so a source
      // that has data stays `ready` on it; the failure is its last sync's outcome (docs/architecture.md).
      const keepsData = doc.lastSyncedAt !== null && (await store.currentFile(accountId, sourceId).catch(() => null)) !== null;
      const outcome = keepsData ? { status: 'ready' as const, error: null, lastSync } : { status: 'failed' as const, error: reason, lastSync };
      // A scheduled source that keeps failing (its retries, then its regular runs) raises source.failed once per streak.
      const streak = doc.failStreak ?? 0;
      const announce = !doc.schedule || streak === 0;
      // A change is announced with a failure only when freeze refused it; any other failure is not about the schema.
      const refused = drift.diff && doc.schemaPolicy === 'freeze' ? [sourceSchemaChanged(doc, drift.diff, false)] : [];
      const events = [...refused, ...(announce ? [sourceFailed(doc, reason, keepsData)] : [])];
      await this.finishRun(doc, token, false, { ...outcome, failStreak: streak + 1 }, events, now);
      logger.info({ accountId, sourceId, reason, keepsData, failStreak: streak + 1 }, 'source sync failed');
      return;
    }
    clearInterval(heartbeat);
    const now = this.now();
    // A full sync writes every row it publishes; an incremental one, what the merge wrote.
    if (plan.mode === 'full') plan.rowsMerged = drift.rows ? drift.rows.loaded : plan.rowsPulled;
    const sync = { mode: plan.mode, rowsPulled: plan.rowsPulled, rowsMerged: plan.rowsMerged };
    const done = await this.finishRun(
      doc,
      token,
      true,
      {
        status: 'ready',
        error: null,
        rowCount: result.rowCount,
        schema: result.schema,
        lastSyncedAt: now,
        lastSync: { status: 'succeeded', error: null, at: now, ...sync },
        failStreak: 0,
        ...(drift.rows?.quarantined ? { quarantine: { rowCount: drift.rows.quarantined, at: now } } : {}),
        // Saved with the outcome, after the data is published: a crash before this write re-pulls from the old
        // cursor, and the merge takes the rows it already has only once.
        ...(plan.settings ? { cursor: plan.cursor ?? plan.since } : {}),
      },
      [...(drift.diff ? [sourceSchemaChanged(doc, drift.diff, doc.schemaPolicy !== 'quarantine', drift.rows)] : []), sourceReady(doc, result, sync)],
      now,
    );
    if (!done && !(await repo.findById(accountId, sourceId))) await store.remove(accountId, sourceId); // deleted mid-sync
    logger.info({ accountId, sourceId, type: doc.type, rowCount: result.rowCount, ...sync, ...timings, recorded: Boolean(done) }, 'source synced');
  }

  /** Whether the sync is incremental: the source says so, has a cursor, and has published data to merge into. */
  private async planOf(doc: SourceDoc): Promise<SyncPlan> {
    const settings = doc.incremental ?? null;
    const hasCursor = settings !== null && doc.cursor != null && doc.lastSyncedAt !== null;
    const current = hasCursor ? await this.opts.store.currentFile(doc.accountId, doc._id).catch(() => null) : null;
    const since = current ? doc.cursor! : null;
    return { settings, mode: current ? 'incremental' : 'full', since, current, rowsPulled: 0, rowsMerged: 0, cursor: null };
  }

  private async rowsIn(file: string): Promise<number> {
    return Number((await this.opts.store.duck.run(`SELECT count(*) AS n FROM read_parquet(${sqlLiteral(file)})`)).rows[0]?.n ?? 0);
  }

  /**
   * Records a run's outcome, and for a scheduled source its next run (and retry) in the same write. A schedule
   * changed while the run went on keeps the times it was given: the outcome is then recorded alone.
   */
  private async finishRun(
    doc: SourceDoc,
    token: string,
    ok: boolean,
    outcome: Parameters<SourceRepository['finish']>[3],
    events: DomainEvent[],
    now: Date,
  ): Promise<SourceDoc | null> {
    const { repo, retry, random, logger } = this.opts;
    if (doc.schedule && doc.scheduleRev) {
      let state: ScheduleState | null = null;
      try {
        state = afterRun({ schedule: doc.schedule, nextRunAt: doc.nextRunAt ?? null, retryAttempt: doc.retryAttempt ?? 0 }, ok, now, retry, random);
      } catch (err) {
        logger.warn({ err, sourceId: doc._id }, 'a stored schedule no longer parses; its next run is left as it was');
      }
      const done = state && (await repo.finish(doc.accountId, doc._id, token, { ...outcome, ...state }, events, now, doc.scheduleRev));
      if (done) return done;
    }
    return repo.finish(doc.accountId, doc._id, token, outcome, events, now);
  }

  /**
   * A sync of a source that has data compares the new columns with the old ones before publishing: under
   * `freeze` a change fails the sync, naming the columns; under `quarantine` the rows that fit the old schema
   * are published in it and the others set aside (src/domain/quarantine.ts).
   */
  private async checkDrift(doc: SourceDoc, ctx: { file: string; schema: Column[]; newFile: () => string }, drift: Drift): Promise<string | void> {
    if (doc.lastSyncedAt === null || !doc.schema.length) return;
    drift.diff = schemaDiff(doc.schema, ctx.schema);
    if (!drift.diff) return;
    if (doc.schemaPolicy === 'freeze') {
      throw new SyncFailure(`the data's columns changed (${describeDiff(drift.diff)}) and the source's schema policy is freeze: its data was kept`);
    }
    if (doc.schemaPolicy !== 'quarantine') return;
    const { store } = this.opts;
    const split = await quarantineRows(store, store.dir(doc.accountId, doc._id), { file: ctx.file, oldSchema: doc.schema, diff: drift.diff, newFile: ctx.newFile });
    drift.rows = split.counts;
    return split.file;
  }

  private async load(doc: SourceDoc, timings: { pullMs: number; loadMs: number }, plan: SyncPlan, beforePublish: LoadRequest['beforePublish']): Promise<IngestResult> {
    const { store, loader } = this.opts;
    const signal = this.shutdown.signal;
    const base = { accountId: doc.accountId, sourceId: doc._id, signal, beforePublish };
    if (doc.staged) {
      try {
        await access(store.stagingFile(doc.accountId, doc._id, doc.staged));
      } catch {
        throw new SyncFailure('the uploaded data is no longer available; create the source again');
      }
      const t0 = performance.now();
      // A streamed upload's JSON was not parsed on the way in: its field names get the uploaded-JSON rules here.
      const loaded = await loader.load({ ...base, format: doc.staged, ...(doc.staged !== 'csv' ? { checkFieldNames: true } : {}) });
      timings.loadMs = Math.round(performance.now() - t0);
      return loaded;
    }
    const connector = connectorFor(doc.type);
    if (connector.mode !== 'remote' || !doc.credentials) throw new SyncFailure('the source has no stored data or connection details; create it again');
    const { cipher, guard, limits, logger, downloads } = this.opts;
    if (!cipher) throw new SyncFailure('this deployment cannot read source credentials: SOURCE_CREDENTIALS_KEY is not configured');
    let spec: unknown;
    try {
      spec = connector.parseSpec(cipher.open(doc.credentials, credentialsContext(doc.accountId, doc._id)));
    } catch (err) {
      if (err instanceof CredentialsError) throw new SyncFailure(`${err.message}; create the source again`);
      throw err;
    }
    try {
      const t0 = performance.now();
      const incremental = plan.settings ? { incremental: { cursorField: plan.settings.cursorField, since: plan.since } } : {};
      const pulled = await connector.pull(spec, { ...base, guard, limits, store, logger, ...(downloads ? { downloads } : {}), ...incremental });
      const t1 = performance.now();
      timings.pullMs = Math.round(t1 - t0);
      plan.cursor = pulled.cursor ?? null;
      // An incremental pull of documents that found none has no columns to load: the published data stands.
      if (plan.current && pulled.rows === 0 && !pulled.columns)
        return { rowCount: await this.rowsIn(plan.current), schema: await store.describeFile(plan.current), file: plan.current };
      const loaded = await loader.load({
        ...base,
        format: pulled.format,
        ...(pulled.columns ? { columns: pulled.columns } : {}),
        ...(pulled.checkFieldNames ? { checkFieldNames: true } : {}),
      });
      timings.loadMs = Math.round(performance.now() - t1);
      return loaded;
    } finally {
      await this.removeStaging(doc.accountId, doc._id);
    }
  }

  /** A remote source's staged pull can be as big as the data; it is not kept once loaded (or failed). */
  private async removeStaging(accountId: string, sourceId: string): Promise<void> {
    const dir = this.opts.store.dir(accountId, sourceId);
    try {
      for (const f of await readdir(dir)) if (f.startsWith('staging.')) await rm(join(dir, f), { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.opts.logger.warn({ err, sourceId }, 'could not remove the staged pull');
    }
  }

  private reasonOf(err: unknown, doc: SourceDoc): string {
    if (err instanceof SyncFailure || err instanceof ConnectorCheckError) return err.message;
    if (err instanceof LoadError) return `the data could not be loaded: ${err.message}`;
    if (isDuckError(err)) return `the data could not be loaded: ${duckReason(err, [this.opts.store.root])}`;
    this.opts.logger.error({ err, accountId: doc.accountId, sourceId: doc._id }, 'source sync failed unexpectedly');
    return 'the data could not be loaded because of an internal error; try syncing again';
  }

  /** A failed ingest may leave a half-written Parquet file beside the published one (retired ones stay). */
  private async removeUnpublished(accountId: string, sourceId: string): Promise<void> {
    try {
      await this.opts.store.removeUnpublished(accountId, sourceId);
    } catch (err) {
      this.opts.logger.warn({ err, sourceId }, 'could not clean up after a failed sync');
    }
  }
}
