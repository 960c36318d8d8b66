import { OutboundGuard } from '@dap/netguard';
import { startReceiver } from '@dap/testing';
import { HttpSender } from './http-sender.ts';

describe('HttpSender', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let status = 200;
  let delayMs = 0;
  let headers: Record<string, string> = {};
  const open = new HttpSender({ timeoutMs: 300, guard: new OutboundGuard({ allowPrivate: true }), userAgent: 'test' });
  const strict = new HttpSender({ timeoutMs: 300, guard: new OutboundGuard({ allowPrivate: false }), userAgent: 'test' });

  beforeAll(async () => {
    receiver = await startReceiver(() => ({ status, delayMs, headers }));
  });
  afterAll(async () => {
    open.close();
    strict.close();
    await receiver.close();
  });
  beforeEach(() => {
    status = 200;
    delayMs = 0;
    headers = {};
  });

  it("reads a 429 or 503 answer's Retry-After, in seconds or as an HTTP date, and ignores it on other statuses", async () => {
    status = 429;
    headers = { 'retry-after': '7' };
    expect(await open.send(receiver.url, {}, '{}')).toMatchObject({ ok: false, statusCode: 429, retryAfterMs: 7_000 });
    status = 503;
    headers = { 'retry-after': new Date(Date.now() + 120_000).toUTCString() };
    const dated = await open.send(receiver.url, {}, '{}');
    expect(dated.retryAfterMs).toBeGreaterThan(115_000);
    expect(dated.retryAfterMs).toBeLessThanOrEqual(120_000);
    status = 500;
    headers = { 'retry-after': '7' };
    expect(await open.send(receiver.url, {}, '{}')).toMatchObject({ statusCode: 500, retryAfterMs: null });
    status = 429;
    headers = {};
    expect(await open.send(receiver.url, {}, '{}')).toMatchObject({ statusCode: 429, retryAfterMs: null });
  });

  it('posts the body with the given headers and reports 2xx as success', async () => {
    const r = await open.send(`${receiver.url}/hook?x=1`, { 'content-type': 'application/json', 'webhook-id': 'evt_1' }, '{"a":1}');
    expect(r).toMatchObject({ ok: true, statusCode: 200, error: null, aborted: false });
    const got = receiver.received.at(-1)!;
    expect(got).toMatchObject({ method: 'POST', path: '/hook?x=1', body: '{"a":1}' });
    expect(got.headers['webhook-id']).toBe('evt_1');
    expect(got.headers['content-length']).toBe('7');
  });

  it('treats a redirect as a failure and does not follow it', async () => {
    status = 302;
    const before = receiver.received.length;
    const r = await open.send(receiver.url, {}, '{}');
    expect(r).toMatchObject({ ok: false, statusCode: 302, error: 'redirect (302) not followed' });
    expect(receiver.received.length).toBe(before + 1);
  });

  it('reports an error status', async () => {
    status = 503;
    expect(await open.send(receiver.url, {}, '{}')).toMatchObject({ ok: false, statusCode: 503, error: 'HTTP 503' });
  });

  it('gives up at the per-attempt deadline', async () => {
    delayMs = 700;
    const r = await open.send(receiver.url, {}, '{}');
    expect(r).toMatchObject({ ok: false, statusCode: null, error: 'timed out after 300 ms' });
    expect(r.latencyMs).toBeGreaterThanOrEqual(290);
    expect(r.latencyMs).toBeLessThan(1_000);
  });

  it('refuses a loopback target at connect time when private targets are not allowed', async () => {
    const before = receiver.received.length;
    const literal = await strict.send(receiver.url, {}, '{}');
    expect(literal).toMatchObject({ ok: false, statusCode: null });
    expect(literal.error).toMatch(/127\.0\.0\.1 is not allowed \(loopback\)/);
    const port = new URL(receiver.url).port;
    const named = await strict.send(`http://localhost:${port}/`, {}, '{}');
    expect(named.error).toMatch(/the host localhost resolves to \S+, which is not allowed \(loopback\)/);
    expect(receiver.received.length).toBe(before);
  });

  it("never reaches the platform's own endpoints, even with private targets allowed, by address or by name", async () => {
    const port = Number(new URL(receiver.url).port);
    const guarded = new HttpSender({ timeoutMs: 300, guard: new OutboundGuard({ allowPrivate: true, platform: [{ host: '127.0.0.1', port }] }), userAgent: 'test' });
    try {
      const before = receiver.received.length;
      const literal = await guarded.send(receiver.url, {}, '{}');
      expect(literal).toMatchObject({
        ok: false,
        statusCode: null,
        error: `the target 127.0.0.1:${port} is one of this platform's own endpoints, which sources and webhooks may not reach`,
      });
      const named = await guarded.send(`http://localhost:${port}/`, {}, '{}');
      expect(named.error).toMatch(new RegExp(`the target localhost:${port} \\(\\S+\\) is one of this platform's own endpoints`));
      expect(receiver.received.length).toBe(before);
      // The same sender reaches the same receiver when it is not the platform's (positive control).
      expect(await open.send(receiver.url, {}, '{}')).toMatchObject({ ok: true, statusCode: 200 });
      expect(receiver.received.length).toBe(before + 1);
    } finally {
      guarded.close();
    }
  });

  it('reports a refused connection', async () => {
    const r = await open.send('http://127.0.0.1:9/', {}, '{}');
    expect(r).toMatchObject({ ok: false, statusCode: null, error: 'connection refused' });
  });

  it('stops at once when aborted', async () => {
    delayMs = 3_000;
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const r = await open.send(receiver.url, {}, '{}', ac.signal);
    expect(r).toMatchObject({ ok: false, aborted: true });
    expect(r.latencyMs).toBeLessThan(1_500); // long before the answer, with room for a loaded machine
  });
});
