import type { Db } from 'mongodb';
import { TenantRepository, type TenantDoc, type WrittenEvents } from '@dap/mongo';
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
    super(db, API_KEYS_COLLECTION, [[{ hash: 1 }, { unique: true }], [{ accountId: 1, _id: -1 }]], onEvents);
  }

  /**
   * The one lookup without an account id: the presented key's hash is what tells us the account.
   * Only the gateway reaches it, through the internal verify route.
   */
  async findByHash(hash: string): Promise<ApiKeyDoc | null> {
    return (await this.coll.raw.findOne({ hash, deletedAt: null })) as ApiKeyDoc | null;
  }

  async touch(accountId: string, keyId: string, at: Date): Promise<void> {
    await this.coll.raw.updateOne({ _id: keyId as never, accountId }, { $set: { lastUsedAt: at } });
  }
}
