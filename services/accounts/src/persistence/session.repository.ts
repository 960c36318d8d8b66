import type { Db } from 'mongodb';
import { TenantRepository } from '@dap/mongo';
import { USER_TOKEN_INDEXES, type UserTokenDoc } from './reset-token.repository.ts';

/** A dashboard session: the cookie's token, hashed, and the CSRF token that goes with it. */
export interface SessionDoc extends UserTokenDoc {
  csrfToken: string;
}

export class SessionRepository extends TenantRepository<SessionDoc> {
  constructor(db: Db) {
    super(db, 'sessions', USER_TOKEN_INDEXES);
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
