import type { Db } from 'mongodb';
import { TenantRepository, type IndexOf, type TenantDoc } from '@dap/mongo';

/** A token issued to a user (a session, a reset link): only its hash is stored, and it expires. */
export interface UserTokenDoc extends TenantDoc {
  userId: string;
  tokenHash: string;
  createdAt: Date;
  expiresAt: Date;
}

/** Looked up by the token's hash; MongoDB removes a token once it has expired. */
export const USER_TOKEN_INDEXES: readonly IndexOf[] = [
  [{ tokenHash: 1 }, { unique: true }],
  [{ expiresAt: 1 }, { expireAfterSeconds: 0 }],
];

/** An operator-issued password reset link. */
export type ResetTokenDoc = UserTokenDoc;

export class ResetTokenRepository extends TenantRepository<ResetTokenDoc> {
  constructor(db: Db) {
    super(db, 'password_resets', USER_TOKEN_INDEXES);
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
