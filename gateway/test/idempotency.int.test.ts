import { createRedis } from '@dap/redis';
import { http, inlineSharedComponents, waitFor } from '@dap/testing';
import { bearer, startHarness } from './harness.ts';

let h: Awaited<ReturnType<typeof startHarness>>;
let gw: string;
let secret: string;

beforeAll(async () => {
  h = await startHarness();
  gw = (await h.gateway()).url;
  secret = (await h.newAccount('professional')).secret;
});
afterAll(() => h?.stop());

const post = (key: string, body: unknown, path = '/v1/sources', extra: Record<string, string> = {}) =>
  http('POST', `${gw}${path}`, { headers: { ...bearer(secret), 'idempotency-key': key, ...extra }, body });

describe('Idempotency-Key', () => {
  it('replays the first response for the same key and body, with one upstream call', async () => {
    const key = `k-${Math.random()}`;
    const before = h.upstream.seen.length;
    const first = await post(key, { name: 'a' });
    const second = await post(key, { name: 'a' });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('location')).toBe(first.headers.get('location'));
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(h.upstream.seen.length - before).toBe(1);
    expect(h.upstream.seen.at(-1)!.headers['idempotency-key']).toBeUndefined();
    expect(h.upstream.seen.at(-1)!.body).toBe('{"name":"a"}');
  });

  it('answers 422 when the key is reused with a different body, and keys are per account', async () => {
    const key = `k-${Math.random()}`;
    expect((await post(key, { name: 'a' })).status).toBe(201);
    const mismatch = await post(key, { name: 'b' });
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.code).toBe('idempotency_key_reused');
    const other = await h.newAccount('professional');
    const theirs = await http('POST', `${gw}/v1/sources`, { headers: { ...bearer(other.secret), 'idempotency-key': key }, body: { name: 'b' } });
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
  });

  it('answers 409 while the first request is still in flight', async () => {
    const key = `k-${Math.random()}`;
    const before = h.upstream.seen.length;
    const slow = post(key, { name: 'slow' }, '/v1/sources?delay=600');
    await waitFor(() => h.upstream.seen.length > before, { what: 'the first request at the service' }); // it runs there now
    const concurrent = await post(key, { name: 'slow' }, '/v1/sources?delay=600');
    expect([concurrent.status, concurrent.body.code]).toEqual([409, 'idempotency_key_in_use']);
    expect(concurrent.headers.get('retry-after')).toBe('1');
    expect((await slow).status).toBe(201);
    expect((await post(key, { name: 'slow' }, '/v1/sources?delay=600')).headers.get('idempotent-replayed')).toBe('true');
  });

  it('keeps the stored response sealed: Redis holds neither the response nor the key, and the replay still works', async () => {
    const { accountId, secret: theirs } = await h.newAccount('professional');
    const key = `k-${Math.random()}`;
    const first = await http('POST', `${gw}/v1/sources`, { headers: { ...bearer(theirs), 'idempotency-key': key }, body: { name: 'sealed', password: 'hunter2' } });
    expect(first.status).toBe(201);
    const redis = createRedis(h.stack.REDIS_URL);
    await new Promise((r) => redis.once('ready', r));
    try {
      const slots = await redis.keys(`idem:${accountId}:*`);
      expect(slots).toHaveLength(1);
      const stored = (await redis.get(slots[0]!))!;
      const body = JSON.stringify(first.body);
      for (const leak of [body, Buffer.from(body).toString('base64'), key, 'hunter2', first.headers.get('location')!]) expect(stored).not.toContain(leak);
      expect(Object.keys(JSON.parse(stored)).sort()).toEqual(['fingerprint', 'sealed', 'state']);
    } finally {
      redis.disconnect();
    }
    const again = await http('POST', `${gw}/v1/sources`, { headers: { ...bearer(theirs), 'idempotency-key': key }, body: { name: 'sealed', password: 'hunter2' } });
    expect([again.status, again.body, again.headers.get('location'), again.headers.get('idempotent-replayed')]).toEqual([201, first.body, first.headers.get('location'), 'true']);
  });

  it('passes every header of the response that matters, on the first response and on each replay', async () => {
    const key = `k-${Math.random()}`;
    const path = '/v1/sources?status=202&h-retry-after=7&h-etag=%22v1%22&h-set-cookie=pref%3Ddark&h-set-cookie=lang%3Den';
    const before = h.upstream.seen.length;
    const first = await post(key, { name: 'headers' }, path);
    const replay = await post(key, { name: 'headers' }, path);
    expect(h.upstream.seen.length - before).toBe(1);
    for (const res of [first, replay]) {
      expect([res.status, res.headers.get('retry-after'), res.headers.get('etag'), res.headers.getSetCookie()]).toEqual([202, '7', '"v1"', ['pref=dark', 'lang=en']]);
      expect(res.headers.get('location')).toMatch(/^\/v1\/things\/\d+$/);
      expect(res.headers.get('ratelimit-policy')).toBeTruthy(); // the gateway's own headers, for this request
    }
    expect(replay.headers.get('location')).toBe(first.headers.get('location'));
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
  });

  it('does not keep a 429: the retry it asks for reaches the service', async () => {
    const key = `k-${Math.random()}`;
    const before = h.upstream.seen.length;
    const busy = await post(key, { name: 'busy' }, '/v1/sources?status=429&h-retry-after=3');
    expect([busy.status, busy.headers.get('retry-after')]).toEqual([429, '3']);
    const retry = await post(key, { name: 'busy' }, '/v1/sources?status=429&h-retry-after=3');
    expect([retry.status, retry.headers.get('idempotent-replayed')]).toEqual([429, null]);
    expect(h.upstream.seen.length - before).toBe(2);
    // Positive control: the same path with a 201 is kept.
    const ok = `k-${Math.random()}`;
    await post(ok, { name: 'busy' }, '/v1/sources?status=201');
    expect((await post(ok, { name: 'busy' }, '/v1/sources?status=201')).headers.get('idempotent-replayed')).toBe('true');
  });

  it('compares bodies as JSON: other key order and whitespace replay, another value or array order is a 422', async () => {
    const key = `k-${Math.random()}`;
    const before = h.upstream.seen.length;
    const first = await post(key, '{"name":"a","connection":{"url":"https://x.example","headers":{"a":"1","b":"2"}},"tags":[1,2]}');
    expect(first.status).toBe(201);
    const reordered = await post(key, '{ "tags": [1, 2],\n "connection": {"headers": {"b": "2", "a": "1"}, "url": "https://x.example"}, "name": "a" }');
    expect([reordered.status, reordered.body, reordered.headers.get('idempotent-replayed')]).toEqual([201, first.body, 'true']);
    expect(h.upstream.seen.length - before).toBe(1);
    for (const other of [
      '{"name":"a","connection":{"url":"https://x.example","headers":{"a":"1","b":"3"}},"tags":[1,2]}',
      '{"name":"a","connection":{"url":"https://x.example","headers":{"a":"1","b":"2"}},"tags":[2,1]}',
      '{"name":"a","connection":{"url":"https://x.example","headers":{"a":"1","b":"2"}},"tags":[1,2],"__proto__":{}}',
    ]) {
      const res = await post(key, other);
      expect([res.status, res.body.code]).toEqual([422, 'idempotency_key_reused']);
    }
  });

  it('compares any other body byte for byte: an upload of 1.0 is not an upload of 1', async () => {
    const key = `k-${Math.random()}`;
    const csv = { 'content-type': 'text/csv' };
    expect((await post(key, '1.0\n', '/v1/sources', csv)).status).toBe(201);
    expect((await post(key, '1.0\n', '/v1/sources', csv)).headers.get('idempotent-replayed')).toBe('true');
    const other = await post(key, '1\n', '/v1/sources', csv);
    expect([other.status, other.body.code]).toEqual([422, 'idempotency_key_reused']);
  });

  it('leaves sign-up and login out: each caller gets its own response and its own session cookie', async () => {
    const email = `idem-${Math.random().toString(36).slice(2)}@example.com`;
    const key = `k-${Math.random()}`;
    const signup = await http('POST', `${gw}/v1/auth/signup`, { headers: { 'idempotency-key': key }, body: { email, password: 'correct horse battery', accountName: 'Acme' } });
    expect(signup.status).toBe(201);
    expect(signup.headers.get('set-cookie')).toMatch(/^dap_session=/);
    const login = () => http('POST', `${gw}/v1/auth/login`, { headers: { 'idempotency-key': key }, body: { email, password: 'correct horse battery' } });
    const [a, b] = [await login(), await login()];
    for (const res of [a, b]) {
      expect([res.status, res.headers.get('idempotent-replayed')]).toEqual([200, null]);
      expect(res.headers.get('set-cookie')).toMatch(/^dap_session=[A-Za-z0-9_-]{40,};/);
    }
    expect(b.headers.get('set-cookie')).not.toBe(a.headers.get('set-cookie'));
    expect(b.body.csrfToken).not.toBe(a.body.csrfToken);
    // A second sign-up with the same key is the service's answer (taken), not the first caller's session.
    const again = await http('POST', `${gw}/v1/auth/signup`, { headers: { 'idempotency-key': key }, body: { email, password: 'correct horse battery', accountName: 'Acme' } });
    expect([again.status, again.headers.get('set-cookie')]).toEqual([409, null]);
    // The OpenAPI document says so too.
    const doc = inlineSharedComponents((await http('GET', `${gw}/v1/openapi.json`)).body);
    const takesKey = (path: string) => doc.paths[path].post.parameters.some((p: { name: string }) => p.name === 'Idempotency-Key');
    expect([takesKey('/auth/signup'), takesKey('/auth/login'), takesKey('/sources')]).toEqual([false, false, true]);
  });

  it('refuses a malformed key', async () => {
    const res = await post('bad key with spaces', { name: 'a' });
    expect(res.status).toBe(400);
  });
});
