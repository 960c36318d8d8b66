import { MongoClient, type CommandStartedEvent, type Db, type Document } from 'mongodb';
import { hashApiKey } from '@dap/contracts';
import { mongoClientOptions } from '@dap/mongo';
import { stackEnv, uniqueSuffix } from '@dap/testing';
import { AccountsService, newAccountDoc, newKeyDoc } from '../src/domain/accounts.service.ts';
import { AccountRepository } from '../src/persistence/account.repository.ts';
import { ApiKeyRepository } from '../src/persistence/api-key.repository.ts';

const url = stackEnv().MONGO_URL;
let client: MongoClient;
let db: Db;
const commands: CommandStartedEvent[] = [];

beforeAll(async () => {
  client = await new MongoClient(url, { ...mongoClientOptions(url), monitorCommands: true }).connect();
  client.on('commandStarted', (e) => commands.push(e));
  db = client.db(`accverify_${uniqueSuffix()}`);
});
afterAll(async () => {
  await db?.dropDatabase().catch(() => {});
  await client?.close();
});

/** The filters of the reads and writes sent to these collections since `from`. */
function filtersSince(from: number): Array<{ coll: string; op: string; fields: string[] }> {
  const out: Array<{ coll: string; op: string; fields: string[] }> = [];
  for (const e of commands.slice(from)) {
    const c = e.command as Document;
    if (e.commandName === 'find') out.push({ coll: c.find as string, op: 'find', fields: Object.keys(c.filter as object).sort() });
    if (e.commandName === 'update') for (const u of c.updates as Document[]) out.push({ coll: c.update as string, op: 'update', fields: Object.keys(u.q as object).sort() });
  }
  return out;
}

async function setup() {
  const accounts = new AccountRepository(db, () => {});
  const keys = new ApiKeyRepository(db, () => {});
  await Promise.all([accounts.ensureIndexes(), keys.ensureIndexes()]);
  const service = new AccountsService(accounts, keys);
  const add = async (plan: 'starter' | 'enterprise') => {
    const account = newAccountDoc({ name: 'verify', plan });
    const key = newKeyDoc({ name: 'k' });
    await accounts.coll.insert(account._id, account);
    await keys.coll.insert(account._id, key.doc);
    return { accountId: account._id, keyId: key.doc._id, hash: hashApiKey(key.secret) };
  };
  return { accounts, keys, service, add };
}

describe('key verification queries', () => {
  it('names exactly the fields of an index in every query (the local MongoDB-wire server scans otherwise)', async () => {
    const { service, add } = await setup();
    const a = await add('starter');
    const b = await add('enterprise');
    const from = commands.length;
    expect(await service.verifyHash(a.hash)).toMatchObject({ ok: true, key: { accountId: a.accountId, keyId: a.keyId, plan: 'starter' } });
    expect(await service.verifyHashes([a.hash, b.hash])).toMatchObject([
      { ok: true, key: { accountId: a.accountId } },
      { ok: true, key: { accountId: b.accountId } },
    ]);
    const sent = filtersSince(from);
    // The reads and the touch of the first verification (which finds lastUsedAt unset), then the batch's: its
    // keys in one query, each account by its id, and the touch of the key not yet touched.
    expect(sent).toEqual([
      { coll: 'api_keys', op: 'find', fields: ['hash'] },
      { coll: 'accounts', op: 'find', fields: ['_id'] },
      { coll: 'api_keys', op: 'update', fields: ['_id'] },
      { coll: 'api_keys', op: 'find', fields: ['hash'] },
      { coll: 'accounts', op: 'find', fields: ['_id'] },
      { coll: 'accounts', op: 'find', fields: ['_id'] },
      { coll: 'api_keys', op: 'update', fields: ['_id'] },
    ]);
  });

  it("answers each hash in order, touches only the keys it found valid, and never another tenant's", async () => {
    const { accounts, keys, service, add } = await setup();
    const valid = await add('starter');
    const revoked = await add('starter');
    const deletedKey = await add('starter');
    const closedAccount = await add('starter');
    const untouched = await add('starter');
    const now = new Date();
    await keys.coll.raw.updateOne({ _id: revoked.keyId as never }, { $set: { revokedAt: now } });
    await keys.coll.raw.updateOne({ _id: deletedKey.keyId as never }, { $set: { deletedAt: now } });
    await accounts.coll.raw.updateOne({ _id: closedAccount.accountId as never }, { $set: { deletedAt: now } });
    const unknown = 'f'.repeat(64);

    const hashes = [valid.hash, revoked.hash, unknown, deletedKey.hash, closedAccount.hash, valid.hash];
    expect(await service.verifyHashes(hashes, now)).toEqual([
      { ok: true, key: { keyId: valid.keyId, accountId: valid.accountId, plan: 'starter', scopes: expect.any(Array), expiresAt: null } },
      { ok: false, reason: 'revoked' },
      { ok: false, reason: 'unknown' },
      { ok: false, reason: 'unknown' },
      { ok: false, reason: 'unknown' },
      { ok: true, key: expect.objectContaining({ keyId: valid.keyId }) },
    ]);
    // The single-key path agrees on each.
    for (const hash of hashes) expect(await service.verifyHash(hash, now)).toEqual((await service.verifyHashes([hash], now))[0]);

    const lastUsed = async (keyId: string) => (await keys.coll.raw.findOne({ _id: keyId as never }))?.lastUsedAt as Date | null;
    expect(await lastUsed(valid.keyId)).toEqual(now);
    for (const other of [revoked, deletedKey, closedAccount, untouched]) expect(await lastUsed(other.keyId)).toBeNull();
    // An account's id finds only its own live account.
    expect(await accounts.getMany([valid.accountId, closedAccount.accountId, untouched.keyId])).toEqual([expect.objectContaining({ _id: valid.accountId })]);
    expect(await accounts.get(valid.accountId)).toMatchObject({ _id: valid.accountId });
    expect(await accounts.get(closedAccount.accountId)).toBeNull();
  });
});
