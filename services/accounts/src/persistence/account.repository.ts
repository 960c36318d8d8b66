import type { Db } from 'mongodb';
import { TenantRepository, type TenantDoc, type WrittenEvents } from '@dap/mongo';
import type { Plan } from '@dap/contracts';

export interface AccountDoc extends TenantDoc {
  name: string;
  /** Absent rather than null, so the sparse unique index ignores accounts without one. */
  email?: string;
  plan: Plan;
  createdAt: Date;
  updatedAt: Date;
}

/** An account is its own tenant: `_id` and `accountId` are the same id. */
export class AccountRepository extends TenantRepository<AccountDoc> {
  constructor(db: Db, onEvents: (written: WrittenEvents) => void) {
    super(
      db,
      'accounts',
      [
        // Sparse (not partial): the wire-compatible local server supports only sparse unique indexes.
        [{ email: 1 }, { unique: true, sparse: true }],
      ],
      onEvents,
    );
  }

  get(accountId: string) {
    return this.coll.findById(accountId, accountId);
  }

  /**
   * Live accounts of these ids (any order; unknown and deleted ones left out), in one query on `_id` alone
   * (the index the local MongoDB-wire server can use), with the tenant and deletion checked here.
   */
  async getMany(accountIds: readonly string[]): Promise<AccountDoc[]> {
    if (!accountIds.length) return [];
    const docs = (await this.coll.raw.find({ _id: { $in: [...accountIds] as never[] } }, { projection: { _outbox: 0 } }).toArray()) as unknown as AccountDoc[];
    return docs.filter((d) => d.accountId === d._id && d.deletedAt == null);
  }

  /** Operator lookup by e-mail (CLI); not reachable from the public API. */
  async findByEmail(email: string): Promise<AccountDoc | null> {
    return (await this.coll.raw.findOne({ email, deletedAt: null })) as AccountDoc | null;
  }
}
