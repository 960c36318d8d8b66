import type { Document } from 'mongodb';
import type { DomainEvent } from '@dap/contracts';
import type { Logger } from '@dap/logger';
import { OUTBOX_PENDING_INDEX, type IndexOf, type TenantCollection, type TenantDoc } from '@dap/mongo';
import { DEFAULT_ALIASES, type ModelFeature, type ModelRecord } from '../domain/model.ts';
import { PROFILE_CATEGORIES, type FeatureProfile } from '../domain/training/drift.ts';
import type { TrainingSpec } from '../domain/training/train.ts';

/**
 * Who trains a model: the instance holding an unexpired lease. The holder renews it while the job waits or
 * runs; when it lapses (the instance died), another instance claims it and trains again.
 */
export interface ModelLease {
  owner: string | null;
  until: Date;
  /** Claims so far; a model interrupted too often fails instead of looping. */
  attempts: number;
}

/** An account's own model: trained from a source, or an uploaded ONNX file (whose bytes live in `model_artifacts`). */
export interface ModelDoc extends TenantDoc, Omit<ModelRecord, 'id' | 'updatedAt'> {
  _id: string;
  updatedAt: Date;
  /** Internal: what the training worker needs to (re)run the job. */
  spec?: TrainingSpec;
  lease?: ModelLease;
  /** The request that created the model, carried on its events. */
  requestId?: string | null;
  /** Bumped by every alias change, so concurrent changes cannot overwrite each other unseen. */
  aliasesRev?: number;
  /** Share of production predictions copied to the candidate version (absent: none). */
  shadowShare?: number;
}

export const MODELS_COLLECTION = 'models';

export function recordOf(doc: ModelDoc): ModelRecord {
  const record: ModelRecord = {
    id: doc._id,
    name: doc.name,
    type: doc.type,
    kind: doc.kind,
    status: doc.status,
    version: doc.version,
    description: doc.description,
    features: doc.profile ? withKnownValues(doc.features, doc.profile, doc.training?.hyperparameters.maxCategories) : doc.features,
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
  if (doc.error !== undefined) record.error = doc.error;
  if (doc.training) record.training = doc.training;
  if (doc.onnx) record.onnx = doc.onnx;
  if (doc.evaluation !== undefined) record.evaluation = doc.evaluation;
  if (doc.profile !== undefined) record.profile = doc.profile;
  record.aliases = { ...(doc.aliases ?? DEFAULT_ALIASES) };
  record.shadowShare = doc.shadowShare ?? 0;
  return record;
}

/**
 * Models trained before features carried their categories and range: both read from the stored training
 * profile. Its categories are the 20 most frequent training values in the encoder's order, so the first
 * `maxCategories` of them are exactly the encoder's when that is at most 20 (the default), a prefix otherwise.
 */
export function withKnownValues(features: ModelFeature[], profile: readonly FeatureProfile[], maxCategories: unknown): ModelFeature[] {
  if (features.every((f) => f.categories || f.range)) return features;
  const cap = typeof maxCategories === 'number' ? maxCategories : PROFILE_CATEGORIES;
  return features.map((f) => {
    const p = profile.find((x) => x.name === f.name);
    if (!p || f.categories || f.range) return f;
    return p.kind === 'categorical' ? { ...f, categories: p.categories.slice(0, cap) } : { ...f, range: { min: p.min, max: p.max, mean: p.mean } };
  });
}

/** Fields never needed to serve or show a model. */
const INTERNAL = { spec: 0, lease: 0, requestId: 0, aliasesRev: 0 } as const;

/** Told of every write that changes what predict serves, after it is made (the serving cache drops its copy); lease moves are not. */
export type ModelChangeListener = (accountId: string, id: string) => void;

export class ModelRepository {
  private readonly coll: TenantCollection<ModelDoc>;
  private readonly listeners: ModelChangeListener[] = [];

  constructor(coll: TenantCollection<ModelDoc>) {
    this.coll = coll;
  }

  onChange(listener: ModelChangeListener): void {
    this.listeners.push(listener);
  }

  /** Runs a write, then tells the listeners, even when it failed (its outcome may be unknown). */
  private async changing<T>(accountId: string, id: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } finally {
      for (const l of this.listeners) l(accountId, id);
    }
  }

  async ensureIndexes(logger: Logger): Promise<void> {
    const specs: IndexOf[] = [
      [{ accountId: 1, _id: -1 }, { name: 'account_id' }],
      [
        { status: 1, 'lease.until': 1 },
        { name: 'training_lease', partialFilterExpression: { status: 'training' } },
      ],
    ];
    for (const [keys, options] of specs) {
      try {
        await this.coll.raw.createIndex(keys, options);
      } catch (err) {
        logger.warn({ err, index: options?.name }, 'could not create a models index; continuing without it');
      }
    }
    // Not optional: the outbox relay does not start without it.
    await this.coll.raw.createIndex(...OUTBOX_PENDING_INDEX);
  }

  async findById(accountId: string, id: string): Promise<ModelRecord | null> {
    if (!accountId) throw new Error('accountId is required');
    const doc = await this.coll.raw.findOne({ _id: id as never, accountId, deletedAt: null }, { projection: { _outbox: 0, ...INTERNAL } });
    return doc ? recordOf(doc as unknown as ModelDoc) : null;
  }

  /** The whole document, internal fields included (the training service's read). */
  findDoc(accountId: string, id: string): Promise<ModelDoc | null> {
    return this.coll.findById(accountId, id);
  }

  /** Newest first, ids below `before`. */
  async list(accountId: string, opts: { limit: number; before?: string }): Promise<ModelRecord[]> {
    if (!accountId) throw new Error('accountId is required');
    const filter: Document = { accountId, deletedAt: null };
    if (opts.before) filter._id = { $lt: opts.before };
    const docs = await this.coll.raw
      .find(filter, { projection: { _outbox: 0, ...INTERNAL, profile: 0 } })
      .sort({ _id: -1 })
      .limit(opts.limit)
      .toArray();
    return docs.map((d) => recordOf(d as unknown as ModelDoc));
  }

  async insert(accountId: string, doc: Omit<ModelDoc, 'accountId'>, events: DomainEvent[] = []): Promise<void> {
    await this.changing(accountId, doc._id, () => this.coll.insert(accountId, doc, events));
  }

  /**
   * Starts version `from + 1` on a model whose latest version is still `from` and not training; null when
   * another request got there first.
   */
  startVersion(accountId: string, id: string, from: number, set: Partial<ModelDoc>): Promise<ModelDoc | null> {
    return this.changing(accountId, id, () =>
      this.coll.update(accountId, id, { ...set, version: from + 1, updatedAt: new Date() }, [], { version: from, status: { $ne: 'training' } }),
    );
  }

  /**
   * Replaces the whole alias map in one write (so several aliases move together), only if no other change
   * happened since `seenRev` was read; null otherwise (or when the model is gone).
   */
  setAliases(accountId: string, id: string, aliases: Record<string, number>, shadowShare: number, seenRev: number | undefined): Promise<ModelDoc | null> {
    return this.changing(accountId, id, () =>
      this.coll.update(accountId, id, { aliases, shadowShare, aliasesRev: (seenRev ?? 0) + 1, updatedAt: new Date() }, [], { aliasesRev: seenRev ?? null }),
    );
  }

  /** Sets fields of a model still training under this lease holder, with its events; null when that no longer holds. */
  finishTraining(accountId: string, id: string, owner: string, set: Partial<ModelDoc>, events: DomainEvent[]): Promise<ModelDoc | null> {
    return this.changing(accountId, id, () => this.coll.update(accountId, id, { ...set, updatedAt: new Date() }, events, { status: 'training', 'lease.owner': owner }));
  }

  async renewLease(accountId: string, id: string, owner: string, until: Date): Promise<boolean> {
    return (await this.coll.update(accountId, id, { 'lease.until': until } as Partial<ModelDoc>, [], { status: 'training', 'lease.owner': owner })) !== null;
  }

  /** Hands a lease back at shutdown so another instance (or the next start) takes the job over at once. */
  async releaseLease(accountId: string, id: string, owner: string): Promise<void> {
    await this.coll.update(accountId, id, { 'lease.owner': null, 'lease.until': new Date(0) } as Partial<ModelDoc>, [], { status: 'training', 'lease.owner': owner });
  }

  /**
   * Training models whose lease has lapsed, across accounts: the one query here without a tenant, because
   * resuming interrupted jobs is the service's own housekeeping. Each is then claimed per account.
   */
  async lapsedTrainings(now: Date, limit: number): Promise<{ _id: string; accountId: string; lease: ModelLease }[]> {
    const docs = await this.coll.raw
      .find({ status: 'training', deletedAt: null, 'lease.until': { $lt: now } }, { projection: { _id: 1, accountId: 1, lease: 1 } })
      .limit(limit)
      .toArray();
    return docs as unknown as { _id: string; accountId: string; lease: ModelLease }[];
  }

  /** Takes over a lapsed lease; null when another instance was quicker. */
  claimLease(accountId: string, id: string, seen: ModelLease, lease: ModelLease): Promise<ModelDoc | null> {
    return this.coll.update(accountId, id, { lease } as Partial<ModelDoc>, [], { status: 'training', 'lease.until': seen.until, 'lease.attempts': seen.attempts });
  }

  /** Soft-deletes (the document goes once its pending events are published); true when it existed. */
  async softDelete(accountId: string, id: string): Promise<boolean> {
    const doc = await this.changing(accountId, id, () => this.coll.softDelete(accountId, id));
    if (!doc) return false;
    // Nothing left to publish: remove the tombstone now rather than keep it forever.
    await this.coll.raw.deleteOne({ _id: id as never, accountId, deletedAt: { $ne: null }, _outboxPending: { $ne: true } });
    return true;
  }
}
