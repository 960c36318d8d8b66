import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { http, waitFor } from '@dap/testing';
import { bearer, cookieFrom, signUp, startHarness } from './harness.ts';

let h: Awaited<ReturnType<typeof startHarness>>;
let gw: string;

beforeAll(async () => {
  h = await startHarness();
  gw = (await h.gateway()).url;
});
afterAll(() => h?.stop());

const OLD = 'correct horse battery';
const NEW = 'staple battery horse correct';

const session = (cookie: string, csrf: string) => ({ cookie, 'x-csrf-token': csrf });
const signup = () => signUp(gw, { password: OLD });

async function login(email: string, password: string) {
  const res = await http('POST', `${gw}/v1/auth/login`, { body: { email, password } });
  return { status: res.status, cookie: cookieFrom(res), csrf: res.body?.csrfToken as string };
}

const sessionStatus = async (cookie: string) => (await http('GET', `${gw}/v1/auth/session`, { headers: { cookie } })).status;

/** A POST from a client address of its own on the loopback range, so other tests' failures do not count. */
function postFrom(localAddress: string, url: string, body: unknown, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: { code?: string } }>((resolve, reject) => {
    const req = request(url, { method: 'POST', localAddress, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : {} }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
const randomLoopback = () => `127.${1 + Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${2 + Math.floor(Math.random() * 250)}`;

describe('POST /v1/auth/password', () => {
  it('checks the current password and the sign-up rules, then re-hashes and ends the other sessions only', async () => {
    const { email, cookie, csrf, accountId } = await signup();
    const other = await login(email, OLD);
    expect(other.status).toBe(200);
    const change = (body: unknown, headers: Record<string, string> = session(cookie, csrf)) => http('POST', `${gw}/v1/auth/password`, { headers, body });

    const { secret } = await h.accounts.accounts.createKey(accountId, { name: 'ci' });
    const withKey = await change({ currentPassword: OLD, newPassword: NEW }, bearer(secret));
    expect(withKey.status).toBe(403);
    expect(withKey.body.code).toBe('forbidden');
    expect((await change({ currentPassword: OLD, newPassword: NEW }, { cookie })).status).toBe(403); // no CSRF token

    const wrong = await change({ currentPassword: 'not my password', newPassword: NEW });
    expect(wrong.status).toBe(403);
    expect(wrong.body).toMatchObject({ code: 'current_password_wrong', errors: [{ path: 'currentPassword' }] });
    expect(wrong.text).not.toContain(NEW);
    const weak = await change({ currentPassword: OLD, newPassword: 'short' });
    expect(weak.status).toBe(400);
    expect(weak.body.errors.map((e: { path: string }) => e.path)).toEqual(['newPassword']);
    // Neither refusal changed anything: the old password and the other session still work.
    expect(await sessionStatus(other.cookie)).toBe(200);
    expect((await login(email, OLD)).status).toBe(200);

    const ok = await change({ currentPassword: OLD, newPassword: NEW });
    expect(ok.status).toBe(204);
    expect((await login(email, OLD)).status).toBe(401);
    expect((await login(email, NEW)).status).toBe(200);
    const stored = await h.accounts.mongo.db.collection('users').findOne({ email });
    expect(stored?.passwordHash).toMatch(/^scrypt\$/);
    expect(JSON.stringify(stored)).not.toContain(NEW);
    // The gateway caches a session for a few seconds, as after a logout.
    await waitFor(async () => (await sessionStatus(other.cookie)) === 401, { timeoutMs: 7_000, what: 'other session ended' });
    expect(await sessionStatus(cookie)).toBe(200);
  });

  it('counts a wrong current password against the failed-authentication limit of the address', async () => {
    const g = await h.gateway({ AUTH_FAILURES_PER_MINUTE: '3' });
    const { email, cookie, csrf } = await signup();
    const address = randomLoopback();
    const change = (from: string, currentPassword: string) => postFrom(from, `${g.url}/v1/auth/password`, { currentPassword, newPassword: NEW }, session(cookie, csrf));
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await change(address, 'not my password')).status);
    expect(statuses).toEqual([403, 403, 403]);
    // Past the limit even the right password is refused from that address, and so is a login.
    const refused = await change(address, OLD);
    expect(refused).toMatchObject({ status: 429, body: { code: 'quota_exceeded' } });
    expect((await postFrom(address, `${g.url}/v1/auth/login`, { email, password: OLD })).status).toBe(429);
    // Another address is not affected, and the password did not change while refused.
    expect((await postFrom(randomLoopback(), `${g.url}/v1/auth/login`, { email, password: OLD })).status).toBe(200);
    expect((await change(randomLoopback(), OLD)).status).toBe(204);
  });
});

describe('POST /v1/auth/password-reset', () => {
  it('sets a new password with a one-time token, ends every session, and refuses a used, expired or unknown token', async () => {
    const { email, cookie } = await signup();
    const { token } = await h.accounts.identity.issueResetToken(email.toUpperCase());
    const stored = await h.accounts.mongo.db.collection('password_resets').findOne({ tokenHash: createHash('sha256').update(token).digest('hex') });
    expect(stored).not.toBeNull();
    expect(JSON.stringify(stored)).not.toContain(token);
    const reset = (body: unknown) => http('POST', `${gw}/v1/auth/password-reset`, { body });

    const weak = await reset({ token, newPassword: 'short' });
    expect(weak.status).toBe(400);
    expect(weak.body.errors.map((e: { path: string }) => e.path)).toEqual(['newPassword']);
    const unknown = await reset({ token: 'x'.repeat(43), newPassword: NEW });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ code: 'reset_token_invalid', errors: [{ path: 'token' }] });

    expect((await reset({ token, newPassword: NEW })).status).toBe(204); // the weak attempt did not use it up
    expect((await login(email, OLD)).status).toBe(401);
    expect((await login(email, NEW)).status).toBe(200);
    await waitFor(async () => (await sessionStatus(cookie)) === 401, { timeoutMs: 7_000, what: 'session ended' });
    const again = await reset({ token, newPassword: 'a third long password' });
    expect(again.status).toBe(400);
    expect(again.body.code).toBe('reset_token_invalid');
    expect((await login(email, NEW)).status).toBe(200);

    const late = await h.accounts.identity.issueResetToken(email);
    await h.accounts.mongo.db
      .collection('password_resets')
      .updateOne({ tokenHash: createHash('sha256').update(late.token).digest('hex') }, { $set: { expiresAt: new Date(Date.now() - 1_000) } });
    const expired = await reset({ token: late.token, newPassword: 'a third long password' });
    expect(expired.status).toBe(400);
    expect(expired.body.code).toBe('reset_token_invalid');
    expect((await login(email, NEW)).status).toBe(200);
  });

  it('a newer link replaces an older one', async () => {
    const { email } = await signup();
    const first = await h.accounts.identity.issueResetToken(email);
    const second = await h.accounts.identity.issueResetToken(email);
    expect((await http('POST', `${gw}/v1/auth/password-reset`, { body: { token: first.token, newPassword: NEW } })).status).toBe(400);
    expect((await http('POST', `${gw}/v1/auth/password-reset`, { body: { token: second.token, newPassword: NEW } })).status).toBe(204);
  });
});
