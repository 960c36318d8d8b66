import type { Db, Document } from 'mongodb';
import type { DomainEvent, WebhookFilter } from '@dap/contracts';
import { OUTBOX_PENDING_INDEX, TenantCollection, type TenantDoc } from '@dap/mongo';
import { Batcher } from './batcher.ts';

export interface EndpointDoc extends TenantDoc {
  url: string;
  events: string[];
  description: string;
  status: 'enabled' | 'disabled';
  disabledReason: string | null;
  /** The whsec_ secret, sealed with AES-256-GCM (never returned after create or rotation). */
  secretSealed: string;
  /** The secret before the last rotation, still signed with until `previousSecretExpiresAt`. */
  previousSecretSealed?: string | null;
  previousSecretExpiresAt?: Date | null;
  /** Start of the current run of failed attempts; null while the endpoint answers 2xx. */
  failingSince: Date | null;
  /** Requests per second the endpoint accepts, across instances (see RateSlots); absent or null: no limit. */
  rateLimitPerSecond?: number | null;
  /** Only events whose payload matches are sent (see domain/filter.ts); absent or null: every event. */
  filter?: WebhookFilter | null;
  /** 'ordered': the events of one subject go one after another, each once the previous succeeded or failed. */
  ordering?: 'unordered' | 'ordered';
  /** Counters: events not sent because the filter did not match. */
  stats?: { filtered?: number };
  /** The endpoint answered 429/503 with Retry-After: nothing is sent to it before then. */
  pausedUntil?: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export const MAX_ENDPOINTS_PER_ACCOUNT = 100;

export const ENDPOINTS_COLLECTION = 'endpoints';

export class EndpointRepository {
  readonly coll: TenantCollection<EndpointDoc>;
  /** Look-ups from concurrent consumers share one query. */
  private readonly lookups = new Batcher<string, EndpointDoc[]>((accountIds) => this.endpointsOf(accountIds));

  constructor(db: Db, onEvents: () => void) {
    this.coll = new TenantCollection<EndpointDoc>(db, ENDPOINTS_COLLECTION, onEvents);
  }

  async ensureIndexes(): Promise<void> {
    await this.coll.raw.createIndex({ accountId: 1, _id: -1 });
    await this.coll.raw.createIndex({ accountId: 1, status: 1 });
    await this.coll.raw.createIndex(...OUTBOX_PENDING_INDEX);
  }

  /**
   * Re-seals every stored secret that `reseal` recognises as a legacy layout (it answers null for the current
   * one), with a compare-and-set per field so a concurrent rotation is never overwritten. Answers how many
   * fields were re-sealed. Only secrets that are not in the current form (5 dot-separated parts) are read.
   */
  async resealLegacySecrets(reseal: (sealed: string, endpointId: string) => string | null): Promise<number> {
    const legacy = { $regex: '^v1\\.[^.]*\\.[^.]*\\.[^.]*$' };
    let count = 0;
    for await (const doc of this.coll.raw.find(
      { $or: [{ secretSealed: legacy }, { previousSecretSealed: legacy }] },
      { projection: { secretSealed: 1, previousSecretSealed: 1 } },
    )) {
      for (const field of ['secretSealed', 'previousSecretSealed'] as const) {
        const sealed = doc[field];
        const next = typeof sealed === 'string' ? reseal(sealed, String(doc._id)) : null;
        if (next === null) continue;
        const res = await this.coll.raw.updateOne({ _id: doc._id as unknown as Document['_id'], [field]: sealed }, { $set: { [field]: next } });
        count += res.modifiedCount;
      }
    }
    return count;
  }

  insert(accountId: string, doc: Omit<EndpointDoc, 'accountId'>, events: DomainEvent[]): Promise<EndpointDoc> {
    return this.coll.insert(accountId, doc, events);
  }

  findById(accountId: string, id: string): Promise<EndpointDoc | null> {
    return this.coll.findById(accountId, id);
  }

  list(accountId: string, opts: { limit: number; before?: string }): Promise<EndpointDoc[]> {
    return this.coll.list(accountId, opts);
  }

  count(accountId: string): Promise<number> {
    return this.coll.count(accountId);
  }

  /**
   * The endpoints an event of this account concerns: the enabled ones get it, the disabled ones record it as
   * skipped (so it can be replayed once they are enabled again). Deleted ones are not returned.
   */
  listActive(accountId: string): Promise<EndpointDoc[]> {
    if (!accountId) throw new Error('accountId is required');
    return this.lookups.add(accountId);
  }

  private async endpointsOf(accountIds: string[]): Promise<EndpointDoc[][]> {
    const unique = [...new Set(accountIds)];
    const docs = (await this.coll.raw
      .find({ accountId: unique.length === 1 ? unique[0] : { $in: unique }, deletedAt: null }, { projection: { _outbox: 0 } })
      .limit(MAX_ENDPOINTS_PER_ACCOUNT * unique.length)
      .toArray()) as unknown as EndpointDoc[];
    return accountIds.map((a) => docs.filter((d) => d.accountId === a));
  }

  softDelete(accountId: string, id: string, events: DomainEvent[]): Promise<EndpointDoc | null> {
    return this.coll.softDelete(accountId, id, events);
  }

  /** Records an event on an enabled endpoint (the test event goes through the outbox like any other). */
  emitIfEnabled(accountId: string, id: string, event: DomainEvent): Promise<EndpointDoc | null> {
    return this.coll.update(accountId, id, { updatedAt: new Date() }, [event], { status: 'enabled' });
  }

  /**
   * Replaces the secret if it is still `expectedSealed` (so two rotations at once cannot both win), keeping
   * the old one for the overlap. Answers the updated endpoint, or null when the secret changed meanwhile.
   */
  rotateSecret(accountId: string, id: string, expectedSealed: string, next: { sealed: string; previousSealed: string; previousExpiresAt: Date }): Promise<EndpointDoc | null> {
    return this.coll.update(
      accountId,
      id,
      { secretSealed: next.sealed, previousSecretSealed: next.previousSealed, previousSecretExpiresAt: next.previousExpiresAt, updatedAt: new Date() },
      [],
      { secretSealed: expectedSealed },
    );
  }

  /** Starts the failure run if none is open; answers when the current run started. */
  async markFailing(accountId: string, id: string, at: Date): Promise<Date | null> {
    const doc = await this.coll.raw.findOneAndUpdate(
      { _id: id as unknown as Document['_id'], accountId, failingSince: null },
      { $set: { failingSince: at } },
      { returnDocument: 'after', projection: { failingSince: 1 } },
    );
    if (doc) return doc.failingSince as Date;
    const current = await this.coll.raw.findOne({ _id: id as unknown as Document['_id'], accountId }, { projection: { failingSince: 1 } });
    return (current?.failingSince as Date | null | undefined) ?? null;
  }

  /** Changes an endpoint's settings; null if there is none (or it was deleted). */
  update(accountId: string, id: string, set: Partial<EndpointDoc>): Promise<EndpointDoc | null> {
    return this.coll.update(accountId, id, set, []);
  }

  /** Counts events its filter kept from the endpoint. */
  async countFiltered(counts: Map<string, { accountId: string; n: number }>): Promise<void> {
    if (!counts.size) return;
    await this.coll.raw.bulkWrite(
      [...counts].map(([id, c]) => ({ updateOne: { filter: { _id: id as unknown as Document['_id'], accountId: c.accountId }, update: { $inc: { 'stats.filtered': c.n } } } })),
      { ordered: false },
    );
  }

  /** Holds every delivery to the endpoint until `until` (a Retry-After), unless it is held longer already. */
  async pauseUntil(accountId: string, id: string, until: Date): Promise<void> {
    await this.coll.raw.updateOne(
      { _id: id as unknown as Document['_id'], accountId, $or: [{ pausedUntil: null }, { pausedUntil: { $lt: until } }] },
      { $set: { pausedUntil: until } },
    );
  }

  async markHealthy(accountId: string, id: string): Promise<void> {
    await this.coll.raw.updateOne({ _id: id as unknown as Document['_id'], accountId, failingSince: { $ne: null } }, { $set: { failingSince: null } });
  }

  /** Enables a disabled endpoint again, its failure run and reason cleared; null if it was not disabled. */
  enable(accountId: string, id: string): Promise<EndpointDoc | null> {
    return this.coll.update(accountId, id, { status: 'enabled', disabledReason: null, failingSince: null, updatedAt: new Date() }, [], { status: 'disabled' });
  }

  /** Disables an enabled endpoint with its event in the same write; null if it was not enabled (or matched `where`). */
  disable(accountId: string, id: string, reason: string, event: DomainEvent, where: Document = {}): Promise<EndpointDoc | null> {
    const now = new Date();
    return this.coll.update(accountId, id, { status: 'disabled', disabledReason: reason, updatedAt: now }, [event], { ...where, status: 'enabled' });
  }
}
