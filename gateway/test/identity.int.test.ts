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

const signup = (email?: string) => signUp(gw, email ? { email } : {});

describe('dashboard sessions', () => {
  it('signs up with an HttpOnly SameSite cookie, never exposing the password or its hash', async () => {
    const { res, email } = await signup();
    const setCookie = res.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/^dap_session=[A-Za-z0-9_-]{40,}; Max-Age=\d+; Path=\/; HttpOnly; SameSite=Lax$/);
    expect(res.body).toMatchObject({ user: { email }, account: { plan: 'starter', rateLimitPerMinute: 100 } });
    expect(res.text).not.toMatch(/correct horse|scrypt/);
    const again = await http('POST', `${gw}/v1/auth/signup`, { body: { email, password: 'another long password', accountName: 'Dup' } });
    expect(again.status).toBe(409);
    const weak = await http('POST', `${gw}/v1/auth/signup`, { body: { email: 'x@example.com', password: 'short', accountName: 'A' } });
    expect(weak.status).toBe(400);
    expect(weak.body.errors[0].path).toBe('password');
  });

  it('logs in and out; a wrong password is 401 and the ended session is refused', async () => {
    const { email } = await signup();
    expect((await http('POST', `${gw}/v1/auth/login`, { body: { email, password: 'wrong password!' } })).status).toBe(401);
    expect((await http('POST', `${gw}/v1/auth/login`, { body: { email: 'nobody@example.com', password: 'wrong password!' } })).status).toBe(401);
    const login = await http('POST', `${gw}/v1/auth/login`, { body: { email: email.toUpperCase(), password: 'correct horse battery' } });
    expect(login.status).toBe(200);
    const cookie = cookieFrom(login);
    const session = await http('GET', `${gw}/v1/auth/session`, { headers: { cookie } });
    expect(session.status).toBe(200);
    expect(session.body.user.email).toBe(email);
    expect((await http('POST', `${gw}/v1/auth/logout`, { headers: { cookie } })).status).toBe(403); // no CSRF token
    const out = await http('POST', `${gw}/v1/auth/logout`, { headers: { cookie, 'x-csrf-token': session.body.csrfToken } });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/Max-Age=0/);
    await waitFor(async () => (await http('GET', `${gw}/v1/auth/session`, { headers: { cookie } })).status === 401, { timeoutMs: 7_000, what: 'session ended' });
  });
});

describe('Settings > API Keys', () => {
  it('creates a key shown once, lists it without the secret, and the key works against /v1', async () => {
    const { cookie, csrf } = await signup();
    const noCsrf = await http('POST', `${gw}/v1/keys`, { headers: { cookie }, body: { name: 'ci' } });
    expect(noCsrf.status).toBe(403);
    const created = await http('POST', `${gw}/v1/keys`, { headers: { cookie, 'x-csrf-token': csrf }, body: { name: 'ci', scopes: ['sources:read'] } });
    expect(created.status).toBe(201);
    expect(created.body.secret).toMatch(/^dap_sk_/);
    const past = await http('POST', `${gw}/v1/keys`, { headers: { cookie, 'x-csrf-token': csrf }, body: { name: 'late', expiresAt: '2020-01-01T00:00:00Z' } });
    expect(past.status).toBe(400);
    expect(past.body.errors).toEqual([{ path: 'expiresAt', message: 'must be in the future' }]);
    expect(created.body.hint).toBe(`dap_sk_…${created.body.secret.slice(-4)}`);
    const list = await http('GET', `${gw}/v1/keys`, { headers: { cookie } });
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(1);
    expect(list.text).not.toContain(created.body.secret);
    expect(list.text).not.toMatch(/"hash"/);
    expect((await http('GET', `${gw}/v1/sources`, { headers: bearer(created.body.secret) })).status).toBe(200);
    expect((await http('GET', `${gw}/v1/models`, { headers: bearer(created.body.secret) })).status).toBe(403);
    // Key management needs a dashboard session, not a key.
    expect((await http('GET', `${gw}/v1/keys`, { headers: bearer(created.body.secret) })).status).toBe(403);
    const got = await waitFor(async () => {
      const k = await http('GET', `${gw}/v1/keys/${created.body.id}`, { headers: { cookie } });
      return k.body.lastUsedAt ? k : null;
    });
    expect(got.body.scopes).toEqual(['sources:read']);
  });

  it('revokes a key (401 within 2 s) and rolls one: the new secret works, the old one for the grace period only', async () => {
    const { cookie, csrf } = await signup();
    const w = { cookie, 'x-csrf-token': csrf };
    const a = (await http('POST', `${gw}/v1/keys`, { headers: w, body: { name: 'a' } })).body;
    const b = (await http('POST', `${gw}/v1/keys`, { headers: w, body: { name: 'b' } })).body;
    expect((await http('GET', `${gw}/v1/sources`, { headers: bearer(a.secret) })).status).toBe(200);
    expect((await http('DELETE', `${gw}/v1/keys/${a.id}`, { headers: w })).status).toBe(204);
    const t0 = Date.now();
    // The wait outlasts the 2-s promise, so a slow revocation fails on the time measured below.
    await waitFor(async () => (await http('GET', `${gw}/v1/sources`, { headers: bearer(a.secret) })).status === 401, { timeoutMs: 10_000, intervalMs: 50, what: 'revocation' });
    expect(Date.now() - t0).toBeLessThan(2_000);

    expect((await http('GET', `${gw}/v1/sources`, { headers: bearer(b.secret) })).status).toBe(200);
    const rolled = await http('POST', `${gw}/v1/keys/${b.id}/roll`, { headers: w, body: { gracePeriodSeconds: 60 } });
    expect(rolled.status).toBe(201);
    expect(rolled.body.secret).not.toBe(b.secret);
    expect(rolled.body.name).toBe('b');
    expect((await http('GET', `${gw}/v1/sources`, { headers: bearer(rolled.body.secret) })).status).toBe(200);
    expect((await http('GET', `${gw}/v1/sources`, { headers: bearer(b.secret) })).status).toBe(200);
    h.clock.advance(60_000); // past the grace period, on the clock accounts and the gateway share
    // Waits for the roll's event to reach the gateway (its cache may still hold the key as it was before).
    const replaced = await waitFor(
      async () => {
        const res = await http('GET', `${gw}/v1/sources`, { headers: bearer(b.secret) });
        return res.status === 401 ? res : null;
      },
      { timeoutMs: 10_000, what: 'the old key refused after its grace period' },
    );
    expect(replaced.body.detail).toBe('the API key was replaced by a roll and its grace period has ended; use the new key');
    expect((await http('POST', `${gw}/v1/keys/${a.id}/roll`, { headers: w, body: {} })).status).toBe(409);
  });

  it("shows the plan, and the usage of the current window: the API keys' requests, not the dashboard's own", async () => {
    const { cookie, csrf } = await signup();
    const account = await http('GET', `${gw}/v1/account`, { headers: { cookie } });
    expect(account.body).toMatchObject({ plan: 'starter', rateLimitPerMinute: 100 });
    const usage = await http('GET', `${gw}/v1/usage`, { headers: { cookie } });
    expect(usage.status).toBe(200);
    expect(usage.body).toMatchObject({ plan: 'starter', limit: 100, windowSeconds: 60, used: 0, remaining: 100 });
    const key = (await http('POST', `${gw}/v1/keys`, { headers: { cookie, 'x-csrf-token': csrf }, body: { name: 'counted' } })).body;
    expect((await http('GET', `${gw}/v1/sources`, { headers: bearer(key.secret) })).status).toBe(200);
    expect((await http('GET', `${gw}/v1/usage`, { headers: { cookie } })).body).toMatchObject({ used: 1, remaining: 99 });
  });

  it("never shows one account's keys to another (404)", async () => {
    const one = await signup();
    const two = await signup();
    const key = (await http('POST', `${gw}/v1/keys`, { headers: { cookie: one.cookie, 'x-csrf-token': one.csrf }, body: { name: 'mine' } })).body;
    expect((await http('GET', `${gw}/v1/keys/${key.id}`, { headers: { cookie: two.cookie } })).status).toBe(404);
    expect((await http('DELETE', `${gw}/v1/keys/${key.id}`, { headers: { cookie: two.cookie, 'x-csrf-token': two.csrf } })).status).toBe(404);
    expect((await http('GET', `${gw}/v1/sources`, { headers: bearer(key.secret) })).status).toBe(200);
  });
});

describe('edge hygiene', () => {
  it('limits failed authentications per address, answering 429 before looking keys up', async () => {
    const g = await h.gateway({ AUTH_FAILURES_PER_MINUTE: '5' });
    // A client address of its own on the loopback range, so other tests' failures do not count here.
    const localAddress = `127.${1 + Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${2 + Math.floor(Math.random() * 250)}`;
    const get = () =>
      new Promise<number>((resolve, reject) => {
        const req = request(`${g.url}/v1/sources`, { localAddress, headers: bearer('dap_sk_000000000000000000000000000000000000') }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
        req.end();
      });
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push(await get());
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(statuses.slice(5)).toEqual([429, 429, 429]);
  });

  it('refuses a declared oversize body with 413 and allows CORS only for the dashboard origin', async () => {
    const { secret } = await h.newAccount();
    const g = await h.gateway({ BODY_LIMIT_BYTES: '1000', DASHBOARD_ORIGINS: 'https://dash.example.com' });
    const big = await http('POST', `${g.url}/v1/sources`, { headers: bearer(secret), body: { name: 'x'.repeat(2000) } });
    expect(big.status).toBe(413);
    expect(big.body.code).toBe('payload_too_large');
    const pre = await fetch(`${g.url}/v1/sources`, { method: 'OPTIONS', headers: { origin: 'https://dash.example.com', 'access-control-request-method': 'POST' } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://dash.example.com');
    const evil = await fetch(`${g.url}/v1/sources`, { headers: { origin: 'https://evil.example.com', ...bearer(secret) } });
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    expect(evil.headers.get('x-content-type-options')).toBe('nosniff');
    expect(evil.headers.get('x-frame-options')).toBe('DENY');
  });
});
