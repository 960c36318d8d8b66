import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { repoRoot, stackEnv, uniqueSuffix } from '@dap/testing';
import { hashToken } from '../src/domain/identity.service.ts';
import { openAccountsDomain } from '../src/index.ts';

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

describe('reset-password-link', () => {
  const run = (...args: string[]) => spawnSync(process.execPath, ['--no-warnings', cli, 'reset-password-link', ...args, '--stack', profile], { env: bareEnv(), encoding: 'utf8' });

  it('prints a one-time link to the dashboard page; the token is stored hashed, lasts an hour and works once', async () => {
    const domain = await openAccountsDomain({ MONGO_URL: mongoUrl, MONGO_DB: db });
    try {
      const email = `ada-${uniqueSuffix()}@example.com`;
      await domain.identity.signup({ email, password: 'correct horse battery', accountName: 'Engines' });
      const before = Date.now();
      const r = run(email.toUpperCase(), '--url', 'https://dash.example.com/app');
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const printed = JSON.parse(r.stdout) as { email: string; link: string; expiresAt: string };
      expect(printed.email).toBe(email);
      const link = new URL(printed.link);
      expect(`${link.origin}${link.pathname}`).toBe('https://dash.example.com/app/reset-password');
      const token = link.searchParams.get('token')!;
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const expiresIn = Date.parse(printed.expiresAt) - before;
      expect(expiresIn).toBeGreaterThan(3_590_000);
      expect(expiresIn).toBeLessThanOrEqual(3_600_000 + 60_000);

      const stored = await domain.mongo.db.collection('password_resets').findOne({ tokenHash: hashToken(token) });
      expect(stored?.expiresAt.toISOString()).toBe(printed.expiresAt);
      expect(JSON.stringify(stored)).not.toContain(token);

      await domain.identity.resetPassword({ token, newPassword: 'staple battery horse correct' });
      await expect(domain.identity.login({ email, password: 'staple battery horse correct' })).resolves.toMatchObject({ user: { email } });
      await expect(domain.identity.resetPassword({ token, newPassword: 'a third long password' })).rejects.toMatchObject({ code: 'reset_token_invalid' });
    } finally {
      await domain.mongo.close();
    }
  });

  it('refuses an unknown e-mail, a missing one and a URL that is not http(s), writing nothing', async () => {
    const unknown = run('nobody@example.com');
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('user was not found');
    expect(run().stderr).toContain('usage: reset-password-link <email>');
    const domain = await openAccountsDomain({ MONGO_URL: mongoUrl, MONGO_DB: db });
    try {
      const email = `bob-${uniqueSuffix()}@example.com`;
      await domain.identity.signup({ email, password: 'correct horse battery', accountName: 'Bob' });
      const user = await domain.mongo.db.collection('users').findOne({ email });
      const bad = run(email, '--url', 'javascript:alert(1)');
      expect(bad.status).toBe(2);
      expect(bad.stderr).toContain('--url must be an http(s) URL');
      expect(await domain.mongo.db.collection('password_resets').countDocuments({ userId: user!._id })).toBe(0);
      expect(run(email).status).toBe(0); // positive control: the same user gets a link with the default URL
      expect(await domain.mongo.db.collection('password_resets').countDocuments({ userId: user!._id })).toBe(1);
    } finally {
      await domain.mongo.close();
    }
  });
});
