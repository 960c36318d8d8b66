import type { Db } from 'mongodb';
import { OUTBOX_PENDING_INDEX, TenantRepository, type TenantDoc, type WrittenEvents } from '@dap/mongo';
import type { Scope } from '@dap/contracts';

export interface ApiKeyDoc extends TenantDoc {
  name: string;
  hash: string;
  hint: string;
  scopes: Scope[];
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
  /** The key that replaced this one when it was rolled (absent on keys never rolled). */
  replacedBy?: string | null;
}

export const API_KEYS_COLLECTION = 'api_keys';

export class ApiKeyRepository extends TenantRepository<ApiKeyDoc> {
  constructor(db: Db, onEvents: (written: WrittenEvents) => void) {
    super(db, API_KEYS_COLLECTION, [[{ hash: 1 }, { unique: true }], [{ accountId: 1, _id: -1 }], OUTBOX_PENDING_INDEX], onEvents);
  }

  /**
   * The one lookup without an account id: the presented key's hash is what tells us the account.
   * Only the gateway reaches it, through the internal verify routes. The query names the unique hash alone
   * and deleted keys are left out here: one probe of the unique index (docs/architecture.md, "Identity and limits").
   */
  async findByHash(hash: string): Promise<ApiKeyDoc | null> {
    const doc = (await this.coll.raw.findOne({ hash }, { projection: { _outbox: 0 } })) as ApiKeyDoc | null;
    return doc && doc.deletedAt == null ? doc : null;
  }

  /** The live keys of these hashes (any order; unknown and deleted ones left out), in one indexed query. */
  async findByHashes(hashes: readonly string[]): Promise<ApiKeyDoc[]> {
    if (!hashes.length) return [];
    const docs = (await this.coll.raw.find({ hash: { $in: [...hashes] } }, { projection: { _outbox: 0 } }).toArray()) as unknown as ApiKeyDoc[];
    return docs.filter((d) => d.deletedAt == null);
  }

  /**
   * Records that keys just read by findByHash/findByHashes were used. Each update names the key's `_id`
   * alone (one index probe, as above): the documents were read from this collection, so each id is a key of
   * the account it was read with (a key never changes account).
   */
  async touch(keys: readonly ApiKeyDoc[], at: Date): Promise<void> {
    if (!keys.length) return;
    await this.coll.raw.bulkWrite(
      keys.map((k) => ({ updateOne: { filter: { _id: k._id as never }, update: { $set: { lastUsedAt: at } } } })),
      { ordered: false },
    );
  }
}
