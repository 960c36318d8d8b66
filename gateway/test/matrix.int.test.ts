import { API_OPERATIONS, SCOPES, newId, type ApiOperation, type Scope } from '@dap/contracts';
import { http } from '@dap/testing';
import { bearer, startHarness } from './harness.ts';

/**
 * The 401/403 matrix: every /v1 route × (no key, malformed, unknown, revoked, expired, key lacking the
 * scope, key with the scope). Routes are taken from the route table, so a new route is covered by itself.
 */
let h: Awaited<ReturnType<typeof startHarness>>;
let gw: string;
const creds: Record<string, string> = {};

const ID_PREFIX: Record<string, string> = { sources: 'src', analytics: 'rpt', models: 'mdl', webhooks: 'whk', accounts: 'key', gateway: 'key' };
function urlOf(op: ApiOperation): string {
  const prefix = ID_PREFIX[op.service] ?? 'src';
  return `${gw}/v1${op.path.replace(/\{(\w+)\}/g, () => newId(prefix as 'src'))}`;
}
const call = (op: ApiOperation, headers: Record<string, string>) => http(op.method.toUpperCase(), urlOf(op), { headers, ...(op.method === 'post' ? { body: {} } : {}) });

beforeAll(async () => {
  h = await startHarness();
  gw = (await h.gateway()).url;
  const account = await h.accounts.accounts.createAccount({ name: 'matrix', plan: 'enterprise' });
  const make = async (name: string, scopes?: Scope[], expiresAt?: Date) =>
    await h.accounts.accounts.createKey(account._id, { name, ...(scopes ? { scopes } : {}), ...(expiresAt ? { expiresAt } : {}) });
  creds.all = (await make('all')).secret;
  const revoked = await make('revoked');
  await h.accounts.accounts.revokeKey(account._id, revoked.key._id);
  creds.revoked = revoked.secret;
  creds.expired = (await make('expired', undefined, new Date(h.clock.now() + 60_000))).secret;
  for (const scope of SCOPES) creds[`only:${scope}`] = (await make(scope, [scope])).secret;
  h.clock.advance(60_000); // past the expired key's expiry, on the clock accounts and the gateway share
});
afterAll(() => h?.stop());

const keyed = API_OPERATIONS.filter((op) => (op.auth ?? 'any') === 'any');
const sessionOnly = API_OPERATIONS.filter((op) => op.auth === 'session');
const publicOps = API_OPERATIONS.filter((op) => op.auth === 'public');

describe.each(keyed.map((op) => [`${op.method.toUpperCase()} ${op.path}`, op] as const))('%s', (_name, op) => {
  it.each([
    ['no key', {}],
    ['a malformed header', { authorization: 'Token abc' }],
    ['a malformed key', bearer('dap_sk_nope')],
    ['an unknown key', bearer('dap_sk_000000000000000000000000000000000000')],
  ])('answers 401 with %s', async (_what, headers) => {
    const res = await call(op, headers as Record<string, string>);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(res.body.code).toBe('unauthorized');
  });

  it('answers 401 for a revoked and an expired key', async () => {
    expect((await call(op, bearer(creds.revoked!))).status).toBe(401);
    const expired = await call(op, bearer(creds.expired!));
    expect(expired.status).toBe(401);
    expect(expired.body.detail).toMatch(/expired/);
  });

  it('answers 403 for every key lacking the scope, and passes a key holding it', async () => {
    for (const scope of SCOPES) {
      const res = await call(op, bearer(creds[`only:${scope}`]!));
      if (op.scope === null || scope === op.scope) expect([res.status, scope]).not.toEqual([403, scope]);
      else expect([res.status, scope]).toEqual([403, scope]);
    }
    const ok = await call(op, bearer(creds.all!));
    expect(ok.status).toBeLessThan(400);
  });
});

describe('session-only and public routes', () => {
  it.each(sessionOnly.map((op) => [`${op.method.toUpperCase()} ${op.path}`, op] as const))('%s refuses API keys (403) and anonymous callers (401)', async (_n, op) => {
    expect((await call(op, bearer(creds.all!))).status).toBe(403);
    expect((await call(op, {})).status).toBe(401);
  });

  it.each(publicOps.map((op) => [`${op.method.toUpperCase()} ${op.path}`, op] as const))('%s needs no credentials', async (_n, op) => {
    const res = await call(op, {});
    expect(res.status).not.toBe(401);
    expect(res.status).not.toBe(403);
  });
});
