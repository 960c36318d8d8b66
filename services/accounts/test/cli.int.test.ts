import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { repoRoot, stackEnv, uniqueSuffix } from '@dap/testing';

/**
 * The operator CLI finds the local stack's MongoDB by itself: the README's recipe is `npm run cli -- …` with
 * nothing exported first (the stack's env file holds plain `KEY=value` lines, which `source` does not export).
 */
const root = repoRoot();
const profile = `clitest-${uniqueSuffix()}`;
const dir = join(root, '.local', profile);
const db = `dap_accounts_cli_${uniqueSuffix()}`;
const cli = join(root, 'services/accounts/src/cli.ts');
const { MONGO_URL: mongoUrl } = stackEnv();
/** The caller's environment without any MongoDB setting, as a newcomer's shell is. */
const bareEnv = () => {
  const env = { ...process.env };
  delete env.MONGO_URL;
  delete env.MONGO_DB;
  return env;
};

beforeAll(() => {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'stack.env'), `REDIS_URL=redis://127.0.0.1:1\nMONGO_URL=${mongoUrl}\nMONGO_DB=${db}\n`);
});

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  const client = await MongoClient.connect(mongoUrl);
  await client.db(db).dropDatabase();
  await client.close();
});

it('creates an account from the stack file when MONGO_URL is not exported', async () => {
  const out = execFileSync(process.execPath, ['--no-warnings', cli, 'create-account', '--name', 'Acme', '--plan', 'professional', '--stack', profile], {
    env: bareEnv(),
    encoding: 'utf8',
  });
  const created = JSON.parse(out) as { accountId: string; plan: string; apiKey: string };
  expect(created.plan).toBe('professional');
  expect(created.apiKey).toMatch(/^dap_sk_/);
  const client = await MongoClient.connect(mongoUrl);
  try {
    const account = await client
      .db(db)
      .collection('accounts')
      .findOne({ _id: created.accountId as never });
    expect(account?.name).toBe('Acme');
  } finally {
    await client.close();
  }
});

it('says what to do when there is neither MONGO_URL nor a stack file', () => {
  const r = spawnSync(process.execPath, ['--no-warnings', cli, 'create-account', '--name', 'Acme', '--stack', 'nosuchprofile'], { env: bareEnv(), encoding: 'utf8' });
  expect(r.status).toBe(2);
  expect(r.stderr).toContain('MONGO_URL is not set');
  expect(r.stderr).toContain('npm start');
});
