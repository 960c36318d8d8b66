import type { Db } from 'mongodb';
import { TenantRepository, type TenantDoc } from '@dap/mongo';

export interface SessionDoc extends TenantDoc {
  userId: string;
  tokenHash: string;
  csrfToken: string;
  createdAt: Date;
  expiresAt: Date;
}

export class SessionRepository extends TenantRepository<SessionDoc> {
  constructor(db: Db) {
    super(db, 'sessions', [
      [{ tokenHash: 1 }, { unique: true }],
      [{ expiresAt: 1 }, { expireAfterSeconds: 0 }],
    ]);
  }

  /** The cookie's hash is what tells us the account; only the gateway asks, through the internal route. */
  async findByTokenHash(tokenHash: string): Promise<SessionDoc | null> {
    return (await this.coll.raw.findOne({ tokenHash, deletedAt: null })) as SessionDoc | null;
  }

  /** Ends a user's sessions, all but `keep` when it is given. */
  async removeForUser(accountId: string, userId: string, keep?: string): Promise<number> {
    const r = await this.coll.raw.deleteMany({ accountId, userId, ...(keep ? { _id: { $ne: keep as never } } : {}) });
    return r.deletedCount;
  }

  async remove(accountId: string, sessionId: string): Promise<void> {
    await this.coll.raw.deleteOne({ _id: sessionId as never, accountId });
  }
}
