import type { Db } from 'mongodb';
import { TenantRepository, type TenantDoc } from '@dap/mongo';

/** An operator-issued password reset link; only the token's hash is stored. */
export interface ResetTokenDoc extends TenantDoc {
  userId: string;
  tokenHash: string;
  createdAt: Date;
  expiresAt: Date;
}

export class ResetTokenRepository extends TenantRepository<ResetTokenDoc> {
  constructor(db: Db) {
    super(db, 'password_resets', [
      [{ tokenHash: 1 }, { unique: true }],
      [{ expiresAt: 1 }, { expireAfterSeconds: 0 }],
    ]);
  }

  async removeForUser(accountId: string, userId: string): Promise<void> {
    await this.coll.raw.deleteMany({ accountId, userId });
  }

  /**
   * Takes the token: the delete is atomic, so of two concurrent uses only one gets the document (single use).
   * An expired one is taken too, and refused by the caller.
   */
  async consume(tokenHash: string): Promise<ResetTokenDoc | null> {
    return (await this.coll.raw.findOneAndDelete({ tokenHash })) as ResetTokenDoc | null;
  }
}
