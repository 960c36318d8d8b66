import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { hashApiKey, internalServiceToken, INTERNAL_TOKEN_HEADER, KEY_VERIFY_BATCH_MAX, newId } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { http, repoRoot, stackEnv, TEST_INTERNAL_SECRET, uniqueSuffix } from '@dap/testing';
import { loadAccountsConfig } from '../src/config.ts';
import { startAccounts } from '../src/index.ts';
import { apiKeyDto } from '../src/http/dto.ts';

const suffix = uniqueSuffix();
const stack = stackEnv();
const db = `acc_${suffix}`;
let svc: Awaited<ReturnType<typeof startAccounts>>;

beforeAll(async () => {
  svc = await startAccounts(
    loadAccountsConfig({ ...stack, MONGO_DB: db, KAFKA_TOPIC_PREFIX: `t${suffix}.`, INTERNAL_SECRET: TEST_INTERNAL_SECRET, PORT: '0', LOG_LEVEL: 'silent' }),
    { logger: createLogger({ name: 'test', level: 'silent' }) },
  );
});
afterAll(() => svc?.stop());

const verify = (hash: string, token?: string) => http('POST', `${svc.url}/internal/keys/verify`, { body: { hash }, headers: token ? { [INTERNAL_TOKEN_HEADER]: token } : {} });

function cli(...args: string[]): { status: number; out: unknown } {
  try {
    const out = execFileSync(process.execPath, ['--no-warnings', join(repoRoot(), 'services/accounts/src/cli.ts'), ...args], {
      env: { PATH: process.env.PATH ?? '', MONGO_URL: stack.MONGO_URL, MONGO_DB: db, DAP_API_KEY: process.env.__KEY ?? '' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return { status: 0, out: JSON.parse(out) };
  } catch (err) {
    const e = err as { status: number; stdout: string };
    return { status: e.status, out: e.stdout ? JSON.parse(e.stdout) : null };
  }
}

describe('accounts', () => {
  it('guards the internal verify route with the internal token', async () => {
    expect((await verify('0'.repeat(64))).status).toBe(401);
    expect((await verify('0'.repeat(64), internalServiceToken('x'.repeat(40)))).status).toBe(401);
    const unknown = await verify('0'.repeat(64), internalServiceToken(TEST_INTERNAL_SECRET));
    expect(unknown.body).toEqual({ ok: false, reason: 'unknown' });
    expect((await verify('not-a-hash', internalServiceToken(TEST_INTERNAL_SECRET))).status).toBe(400);
  });

  it('verifies many keys in one call on the internal route, guarded by the same token, in the order asked', async () => {
    const verifyMany = (body: unknown, token?: string) => http('POST', `${svc.url}/internal/keys/verify-many`, { body, headers: token ? { [INTERNAL_TOKEN_HEADER]: token } : {} });
    const token = internalServiceToken(TEST_INTERNAL_SECRET);
    const { accountId } = cli('create-account', '--name', 'Many').out as { accountId: string };
    const first = await svc.accounts.createKey(accountId, { name: 'one' });
    const second = await svc.accounts.createKey(accountId, { name: 'two' });
    await svc.accounts.revokeKey(accountId, second.key._id);
    const hashes = [hashApiKey(second.secret), '0'.repeat(64), hashApiKey(first.secret)];
    expect((await verifyMany({ hashes })).status).toBe(401);
    expect((await verifyMany({ hashes }, internalServiceToken('x'.repeat(40)))).status).toBe(401);
    const ok = await verifyMany({ hashes }, token);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({
      outcomes: [
        { ok: false, reason: 'revoked' },
        { ok: false, reason: 'unknown' },
        { ok: true, key: { keyId: first.key._id, accountId, plan: 'starter', scopes: first.key.scopes, expiresAt: null } },
      ],
    });
    for (const bad of [{ hashes: [] }, { hashes: ['not-a-hash'] }, { hashes: Array(KEY_VERIFY_BATCH_MAX + 1).fill('0'.repeat(64)) }, { hash: '0'.repeat(64) }]) {
      const refused = await verifyMany(bad, token);
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ status: 400 });
    }
    expect((await verifyMany({ hashes: Array(KEY_VERIFY_BATCH_MAX).fill('0'.repeat(64)) }, token)).status).toBe(200);
  });

  it('creates an account and key from the operator CLI; the key verifies, stores only its hash, and revokes', async () => {
    const created = cli('create-account', '--name', 'Acme', '--plan', 'professional').out as { accountId: string; keyId: string; apiKey: string; plan: string };
    expect(created.plan).toBe('professional');
    expect(created.apiKey).toMatch(/^dap_sk_/);
    const token = internalServiceToken(TEST_INTERNAL_SECRET);
    const ok = await verify(hashApiKey(created.apiKey), token);
    expect(ok.body).toMatchObject({ ok: true, key: { accountId: created.accountId, keyId: created.keyId, plan: 'professional' } });
    const stored = await svc.keyRepo.coll.raw.findOne({ _id: created.keyId as never });
    expect(JSON.stringify(stored)).not.toContain(created.apiKey);
    expect(stored?.hash).toBe(hashApiKey(created.apiKey));

    process.env.__KEY = created.apiKey;
    expect(cli('check-key').status).toBe(0);
    expect(cli('revoke-key', '--account', created.accountId, '--key', created.keyId).status).toBe(0);
    expect(cli('check-key')).toEqual({ status: 1, out: { ok: false, reason: 'revoked' } });
    delete process.env.__KEY;
    expect((await verify(hashApiKey(created.apiKey), token)).body).toEqual({ ok: false, reason: 'revoked' });
  });

  it('refuses a key that expires in the past with errors[], and tells a rolled key after its grace period from an expired one', async () => {
    const { accountId } = cli('create-account', '--name', 'Gamma').out as { accountId: string };
    const past = await svc.accounts.createKey(accountId, { name: 'late', expiresAt: new Date(Date.now() - 1_000) }).catch((e: unknown) => e);
    expect(past).toMatchObject({ code: 'validation_failed', errors: [{ path: 'expiresAt', message: 'must be in the future' }] });

    const soon = new Date(Date.now() + 60_000);
    const plain = await svc.accounts.createKey(accountId, { name: 'plain', expiresAt: soon });
    const old = await svc.accounts.createKey(accountId, { name: 'old' });
    const next = await svc.accounts.rollKey(accountId, old.key._id, 30);
    const later = new Date(Date.now() + 120_000);
    expect((await svc.accounts.verifyHash(hashApiKey(old.secret))).ok).toBe(true); // within its grace period
    expect(await svc.accounts.verifyHash(hashApiKey(old.secret), later)).toEqual({ ok: false, reason: 'replaced' });
    expect(await svc.accounts.verifyHash(hashApiKey(plain.secret), later)).toEqual({ ok: false, reason: 'expired' });
    expect((await svc.accounts.verifyHash(hashApiKey(next.secret), later)).ok).toBe(true);
  });

  it('names the replacement of a rolled key, and refuses to roll that outgoing key again', async () => {
    const { accountId } = cli('create-account', '--name', 'Epsilon').out as { accountId: string };
    const old = await svc.accounts.createKey(accountId, { name: 'outgoing' });
    expect(apiKeyDto(old.key).replacedBy).toBeNull();
    const next = await svc.accounts.rollKey(accountId, old.key._id, 3600);
    const outgoing = await svc.accounts.getKey(accountId, old.key._id);
    expect(apiKeyDto(outgoing)).toMatchObject({ replacedBy: next.key._id, revokedAt: null });
    expect(outgoing.expiresAt!.getTime()).toBeGreaterThan(Date.now());
    await expect(svc.accounts.rollKey(accountId, old.key._id, 0)).rejects.toMatchObject({ kind: 'conflict', code: 'api_key_already_rolled' });
    // Positive control: the replacement itself can be rolled.
    expect((await svc.accounts.rollKey(accountId, next.key._id, 0)).key.name).toBe('outgoing');
  });

  it("answers 401, not 404, when the caller's own account is gone", async () => {
    const missing = newId('acct');
    await expect(svc.accounts.getAccount(missing)).rejects.toMatchObject({ code: 'account_closed' });
    await expect(svc.accounts.createKey(missing, { name: 'k' })).rejects.toMatchObject({ code: 'account_closed' });
    // Positive control: an account that exists.
    const { accountId } = cli('create-account', '--name', 'Delta').out as { accountId: string };
    expect((await svc.accounts.getAccount(accountId))._id).toBe(accountId);
  });

  it('changes the plan for an operator and refuses an unknown plan', async () => {
    const { accountId } = cli('create-account', '--name', 'Beta').out as { accountId: string };
    expect(cli('set-plan', '--account', accountId, '--plan', 'enterprise').out).toEqual({ accountId, plan: 'enterprise' });
    expect(cli('set-plan', '--account', accountId, '--plan', 'platinum').status).toBe(2);
  });
});
