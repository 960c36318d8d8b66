import type { CreateIndexesOptions, Db, IndexSpecification } from 'mongodb';
import type { WrittenEvents } from './outbox.ts';
import { TenantCollection, type TenantDoc } from './tenant-collection.ts';

/** An index a repository needs: the keys and the options createIndex takes. */
export type IndexOf = readonly [keys: IndexSpecification, options?: CreateIndexesOptions];

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
}
