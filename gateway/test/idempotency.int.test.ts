import { createHash } from 'node:crypto';
import { createRedis } from '@dap/redis';
import { http } from '@dap/testing';
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
    expect(mismatch.body.code).toBe('unprocessable');
    const other = await h.newAccount('professional');
    const theirs = await http('POST', `${gw}/v1/sources`, { headers: { ...bearer(other.secret), 'idempotency-key': key }, body: { name: 'b' } });
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
  });

  it('answers 409 while the first request is still in flight', async () => {
    const key = `k-${Math.random()}`;
    const slow = post(key, { name: 'slow' }, '/v1/sources?delay=600');
    await new Promise((r) => setTimeout(r, 150));
    const concurrent = await post(key, { name: 'slow' }, '/v1/sources?delay=600');
    expect(concurrent.status).toBe(409);
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

  it('still replays an entry written before responses were sealed (plain fingerprint and body)', async () => {
    const { accountId, secret: theirs } = await h.newAccount('professional');
    const key = `k-${Math.random()}`;
    const body = JSON.stringify({ name: 'legacy' });
    const sha = (...parts: string[]) => createHash('sha256').update(parts.join('\0')).digest('hex');
    const redis = createRedis(h.stack.REDIS_URL);
    await new Promise((r) => redis.once('ready', r));
    try {
      const legacy = {
        state: 'done',
        fingerprint: sha('POST', '/v1/sources', body),
        status: 201,
        headers: { 'content-type': 'application/json', location: '/v1/things/legacy' },
        body: Buffer.from('{"n":-1}').toString('base64'),
      };
      await redis.set(`idem:${accountId}:${createHash('sha256').update(key).digest('hex')}`, JSON.stringify(legacy), 'PX', 60_000);
    } finally {
      redis.disconnect();
    }
    const before = h.upstream.seen.length;
    const replay = await http('POST', `${gw}/v1/sources`, { headers: { ...bearer(theirs), 'idempotency-key': key }, body: JSON.parse(body) });
    expect([replay.status, replay.body, replay.headers.get('location'), replay.headers.get('idempotent-replayed')]).toEqual([201, { n: -1 }, '/v1/things/legacy', 'true']);
    expect(h.upstream.seen.length).toBe(before);
    const other = await http('POST', `${gw}/v1/sources`, { headers: { ...bearer(theirs), 'idempotency-key': key }, body: { name: 'changed' } });
    expect(other.status).toBe(422);
  });

  it('refuses a malformed key', async () => {
    const res = await post('bad key with spaces', { name: 'a' });
    expect(res.status).toBe(400);
  });
});
