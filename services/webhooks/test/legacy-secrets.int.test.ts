import { randomBytes } from 'node:crypto';
import { seal } from '@dap/crypto';
import { connectMongo, type MongoHandle } from '@dap/mongo';
import { stackEnv, uniqueSuffix } from '@dap/testing';
import { newWebhookSecret, SecretBox } from '../src/domain/secret.ts';
import { EndpointRepository } from '../src/persistence/endpoint.repository.ts';

/**
 * Secrets stored before libs/crypto's one sealed form are re-sealed at start-up, field by field, on MongoDB
 * of the test stack: each opens to the same secret afterwards, current values are left as they are, and a
 * second pass finds nothing.
 */
describe('re-sealing legacy endpoint secrets', () => {
  let mongo: MongoHandle;
  const key = randomBytes(32);
  const box = new SecretBox(key);
  const legacyOf = (secret: string, id: string) => {
    const s = seal(key, secret, id);
    return ['v1', s.iv.toString('base64'), s.tag.toString('base64'), s.ciphertext.toString('base64')].join('.');
  };

  beforeAll(async () => {
    mongo = await connectMongo(stackEnv().MONGO_URL, `t${uniqueSuffix()}_whsecrets`);
  });

  afterAll(async () => {
    await mongo?.db.dropDatabase();
    await mongo?.close();
  });

  it('re-seals legacy current and previous secrets in place and leaves current-form ones alone', async () => {
    const repo = new EndpointRepository(mongo.db, () => undefined);
    await repo.ensureIndexes();
    const [s1, s2, s3] = [newWebhookSecret(), newWebhookSecret(), newWebhookSecret()];
    const current = box.seal(s3, 'whk_c');
    await repo.coll.raw.insertMany([
      { _id: 'whk_a', accountId: 'acct_1', secretSealed: legacyOf(s1, 'whk_a'), previousSecretSealed: legacyOf(s2, 'whk_a') },
      { _id: 'whk_c', accountId: 'acct_2', secretSealed: current, previousSecretSealed: null },
    ] as never);
    expect(await repo.resealLegacySecrets((sealed, id) => box.resealLegacy(sealed, id))).toBe(2);
    const a = (await repo.coll.raw.findOne({ _id: 'whk_a' } as never))!;
    expect(box.open(a.secretSealed, 'whk_a')).toBe(s1);
    expect(box.open(a.previousSecretSealed!, 'whk_a')).toBe(s2);
    expect((await repo.coll.raw.findOne({ _id: 'whk_c' } as never))!.secretSealed).toBe(current);
    expect(await repo.resealLegacySecrets((sealed, id) => box.resealLegacy(sealed, id))).toBe(0);
  });
});
