import type { Db } from 'mongodb';
import { newId } from '@dap/contracts';
import { TenantRepository, type TenantDoc } from '@dap/mongo';
import { useTestDatabase } from './test-database.ts';

interface TokenDoc extends TenantDoc {
  tokenHash: string;
  expiresAt: Date;
}

class TokenRepository extends TenantRepository<TokenDoc> {
  constructor(db: Db) {
    super(db, 'tokens', [
      [{ tokenHash: 1 }, { unique: true }],
      [{ expiresAt: 1 }, { expireAfterSeconds: 0 }],
    ]);
  }
}

describe('TenantRepository (on the test stack MongoDB)', () => {
  const mongo = useTestDatabase('repository');

  it('creates the declared indexes with their options, and a second call changes nothing', async () => {
    const repo = new TokenRepository(mongo.db);
    await repo.ensureIndexes();
    await repo.ensureIndexes();
    const indexes = (await repo.coll.raw.listIndexes().toArray()).filter((i) => i.name !== '_id_');
    // In any order: the local wire-compatible server does not list them in creation order.
    const seen = indexes.map((i) => ({ key: i.key, unique: i.unique ?? false, ttl: i.expireAfterSeconds ?? null }));
    expect(seen.sort((a, b) => JSON.stringify(a.key).localeCompare(JSON.stringify(b.key)))).toEqual([
      { key: { expiresAt: 1 }, unique: false, ttl: 0 },
      { key: { tokenHash: 1 }, unique: true, ttl: null },
    ]);
    // The unique index is really there: a second document with the same hash is refused, another hash is not.
    await repo.coll.raw.insertOne({ _id: 'tok_1' as never, accountId: 'acct_1', tokenHash: 'h1', expiresAt: new Date(Date.now() + 60_000) });
    await expect(repo.coll.raw.insertOne({ _id: 'tok_2' as never, accountId: 'acct_1', tokenHash: 'h1', expiresAt: new Date() })).rejects.toThrow(/duplicate key/i);
    await repo.coll.raw.insertOne({ _id: 'tok_3' as never, accountId: 'acct_1', tokenHash: 'h2', expiresAt: new Date(Date.now() + 60_000) });
    expect(await repo.coll.raw.countDocuments({})).toBe(2);
  });

  it('inserts, finds and lists newest first within one account only', async () => {
    const repo = new TokenRepository(mongo.db);
    const a = newId('acct');
    const b = newId('acct');
    const doc = (id: string) => ({ _id: id, tokenHash: `${id}-${a}`, expiresAt: new Date(Date.now() + 60_000) });
    for (const id of ['tok_a1', 'tok_a2', 'tok_a3']) await repo.insert(a, doc(id));
    await repo.insert(b, { ...doc('tok_b1'), tokenHash: `tok_b1-${b}` });
    expect(await repo.findById(a, 'tok_a2')).toMatchObject({ _id: 'tok_a2', accountId: a });
    expect(await repo.findById(b, 'tok_a2')).toBeNull();
    expect((await repo.list(a, { limit: 2 })).map((d) => d._id)).toEqual(['tok_a3', 'tok_a2']);
    expect((await repo.list(a, { limit: 10, before: 'tok_a3' })).map((d) => d._id)).toEqual(['tok_a2', 'tok_a1']);
    expect((await repo.list(b, { limit: 10 })).map((d) => d._id)).toEqual(['tok_b1']);
  });
});
