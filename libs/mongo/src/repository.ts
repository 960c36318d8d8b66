import type { CreateIndexesOptions, Db, IndexSpecification } from 'mongodb';
import type { DomainEvent } from '@dap/contracts';
import type { WrittenEvents } from './outbox.ts';
import { TenantCollection, type TenantDoc } from './tenant-collection.ts';

/** An index a repository needs: the keys and the options createIndex takes. */
export type IndexOf = readonly [keys: IndexSpecification, options?: CreateIndexesOptions];

/**
 * The index every collection an outbox relay sweeps needs: the sweep asks for `{ _outboxPending: true }`
 * every interval, which without it reads the whole collection. startOutboxRelay refuses a collection without it.
 */
export const OUTBOX_PENDING_INDEX: IndexOf = [{ _outboxPending: 1 }];

/**
 * The base of a repository over one tenant collection: the collection, and its indexes declared once, where
 * the repository is defined, and created by ensureIndexes() at start-up.
 */
export abstract class TenantRepository<T extends TenantDoc> {
  readonly coll: TenantCollection<T>;
  private readonly indexes: readonly IndexOf[];

  protected constructor(db: Db, name: string, indexes: readonly IndexOf[], onEvents?: (written: WrittenEvents) => void) {
    this.coll = new TenantCollection<T>(db, name, onEvents);
    this.indexes = indexes;
  }

  async ensureIndexes(): Promise<void> {
    for (const [keys, options] of this.indexes) await this.coll.raw.createIndex(keys, options);
  }

  insert(accountId: string, doc: Omit<T, 'accountId'>, events?: DomainEvent[]): Promise<T> {
    return this.coll.insert(accountId, doc, events);
  }

  findById(accountId: string, id: string): Promise<T | null> {
    return this.coll.findById(accountId, id);
  }

  /** Newest first, `limit` documents below the id `before`. */
  list(accountId: string, opts: { limit: number; before?: string }): Promise<T[]> {
    return this.coll.list(accountId, opts);
  }
}
