import type { Db } from 'mongodb';
import { TenantCollection, type TenantDoc } from '@dap/mongo';

export interface UserDoc extends TenantDoc {
  email: string;
  passwordHash: string;
  createdAt: Date;
}

export class UserRepository {
  readonly coll: TenantCollection<UserDoc>;

  constructor(db: Db) {
    this.coll = new TenantCollection<UserDoc>(db, 'users');
  }

  async ensureIndexes(): Promise<void> {
    await this.coll.raw.createIndex({ email: 1 }, { unique: true });
  }

  /** Login's lookup: the e-mail is what tells us the account. */
  async findByEmail(email: string): Promise<UserDoc | null> {
    return (await this.coll.raw.findOne({ email, deletedAt: null })) as UserDoc | null;
  }
}
