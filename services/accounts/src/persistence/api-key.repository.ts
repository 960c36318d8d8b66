import type { Db } from 'mongodb';
import { TenantCollection, type TenantDoc, type WrittenEvents } from '@dap/mongo';
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

export class ApiKeyRepository {
  readonly coll: TenantCollection<ApiKeyDoc>;

  constructor(db: Db, onEvents: (written: WrittenEvents) => void) {
    this.coll = new TenantCollection<ApiKeyDoc>(db, 'api_keys', onEvents);
  }

  async ensureIndexes(): Promise<void> {
    await this.coll.raw.createIndex({ hash: 1 }, { unique: true });
    await this.coll.raw.createIndex({ accountId: 1, _id: -1 });
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
