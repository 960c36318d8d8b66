import type { Db } from 'mongodb';
import { TenantRepository, type TenantDoc } from '@dap/mongo';

export interface UserDoc extends TenantDoc {
  email: string;
  passwordHash: string;
  createdAt: Date;
}

export class UserRepository extends TenantRepository<UserDoc> {
  constructor(db: Db) {
    super(db, 'users', [[{ email: 1 }, { unique: true }]]);
  }

  /** Login's lookup: the e-mail is what tells us the account. */
  async findByEmail(email: string): Promise<UserDoc | null> {
    return (await this.coll.raw.findOne({ email, deletedAt: null })) as UserDoc | null;
  }
}
