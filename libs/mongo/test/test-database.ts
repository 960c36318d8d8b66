import type { Db } from 'mongodb';
import { connectMongo, type MongoHandle } from '@dap/mongo';
import { stackEnv, uniqueSuffix } from '@dap/testing';

/**
 * A database of its own on the test stack's MongoDB for the tests of one file (or `describe`): connected before
 * them, dropped and closed after them. Its `db` is there inside tests and hooks that run after this one's.
 */
export function useTestDatabase(prefix: string): { readonly db: Db } {
  let mongo: MongoHandle | undefined;
  beforeAll(async () => {
    mongo = await connectMongo(stackEnv().MONGO_URL, `${prefix}_${uniqueSuffix()}`);
  });
  afterAll(async () => {
    await mongo?.db.dropDatabase().catch(() => {});
    await mongo?.close();
  });
  return {
    get db() {
      if (!mongo) throw new Error('the test database is open only inside the tests and hooks that follow useTestDatabase');
      return mongo.db;
    },
  };
}
