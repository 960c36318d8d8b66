import { writeFileSync } from 'node:fs';
import { SCOPES, type Plan } from '@dap/contracts';
import { connectMongo } from '@dap/mongo';
import { newAccountDoc, newKeyDoc } from '../../../services/accounts/src/domain/accounts.service.ts';
import { AccountRepository } from '../../../services/accounts/src/persistence/account.repository.ts';
import { ApiKeyRepository } from '../../../services/accounts/src/persistence/api-key.repository.ts';

const BATCH = 1_000;

/**
 * Adds `count` accounts with one key each to the accounts service's database, in bulk (the same documents
 * the service writes, without its key-created events, which only webhooks would read), and appends their
 * secrets to `keysFile`, one per line. One by one through the service, 100,000 accounts take ~20 minutes.
 */
export async function seedAccounts(opts: { mongoUrl: string; db: string; count: number; plan: Plan; keysFile: string }): Promise<void> {
  const mongo = await connectMongo(opts.mongoUrl, opts.db);
  try {
    const accounts = new AccountRepository(mongo.db, () => {});
    const keys = new ApiKeyRepository(mongo.db, () => {});
    const secrets: string[] = [];
    for (let done = 0; done < opts.count; done += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, opts.count - done) }, (_, i) => ({
        account: newAccountDoc({ name: `growth ${done + i}`, plan: opts.plan }),
        key: newKeyDoc({ name: 'growth', scopes: [...SCOPES] }),
      }));
      await accounts.coll.insertMany(batch.map((b) => ({ accountId: b.account._id, doc: b.account })));
      await keys.coll.insertMany(batch.map((b) => ({ accountId: b.account._id, doc: b.key.doc })));
      secrets.push(...batch.map((b) => b.key.secret));
    }
    writeFileSync(opts.keysFile, `${secrets.join('\n')}\n`, { flag: 'a', mode: 0o600 });
  } finally {
    await mongo.close();
  }
}
