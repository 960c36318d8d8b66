import { OutboundGuard } from '@dap/netguard';
import { startReceiver } from '@dap/testing';
import { MAX_HEADER_VALUE_CHARS, MAX_RECORDED_BODY_BYTES, MAX_RECORDED_HEADERS } from '../domain/response-record.ts';
import { HttpSender } from './http-sender.ts';

describe('HttpSender', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let status = 200;
  let delayMs = 0;
  let headers: Record<string, string> = {};
  let body: string | undefined;
  const open = new HttpSender({ timeoutMs: 300, guard: new OutboundGuard({ allowPrivate: true }), userAgent: 'test' });
  // For the tests that read what came back: a loaded machine must not turn an answer into a timeout.
  const patient = new HttpSender({ timeoutMs: 10_000, guard: new OutboundGuard({ allowPrivate: true }), userAgent: 'test' });
  const strict = new HttpSender({ timeoutMs: 300, guard: new OutboundGuard({ allowPrivate: false }), userAgent: 'test' });

  beforeAll(async () => {
    receiver = await startReceiver(() => ({ status, delayMs, headers, ...(body !== undefined ? { body } : {}) }));
  });
  afterAll(async () => {
    open.close();
    patient.close();
    strict.close();
    await receiver.close();
  });
  beforeEach(() => {
    status = 200;
    delayMs = 0;
    headers = {};
    body = undefined;
  });

  it('answers the headers it sent and what came back: status, headers and body', async () => {
    status = 422;
    headers = { 'x-receiver': 'r1' };
    body = '{"error":"bad signature"}';
    const r = await patient.send(receiver.url, { 'webhook-id': 'evt_1', 'webhook-signature': 'v1,abc' }, '{"a":1}');
    expect(r.requestHeaders).toEqual({ 'webhook-id': 'evt_1', 'webhook-signature': 'v1,abc', 'content-length': '7' });
    expect(r.response).toMatchObject({ body: '{"error":"bad signature"}', bodyTruncated: false, headersTruncated: false });
    expect(r.response!.headers).toEqual(
      expect.arrayContaining([
        ['x-receiver', 'r1'],
        ['content-type', 'text/plain'],
      ]),
    );
  });

  it('keeps at most 4 KiB of the body, whole characters only, and says it cut it', async () => {
    body = 'a'.repeat(MAX_RECORDED_BODY_BYTES);
    const whole = await patient.send(receiver.url, {}, '{}');
    expect(whole).toMatchObject({ error: null, response: { body, bodyTruncated: false } });
    // 4095 ASCII bytes, then a 2-byte character across the cap: it is left out, not shown half.
    body = `${'a'.repeat(MAX_RECORDED_BODY_BYTES - 1)}éé${'z'.repeat(10_000)}`;
    const cut = (await patient.send(receiver.url, {}, '{}')).response!;
    expect(cut.bodyTruncated).toBe(true);
    expect(cut.body).toBe('a'.repeat(MAX_RECORDED_BODY_BYTES - 1));
    // Past the 64 KiB the attempt reads at all, the start is still kept.
    body = 'b'.repeat(100_000);
    const big = await patient.send(receiver.url, {}, '{}');
    expect(big).toMatchObject({ ok: true, statusCode: 200, error: null });
    expect(big.response).toMatchObject({ body: 'b'.repeat(MAX_RECORDED_BODY_BYTES), bodyTruncated: true });
  });

  it('keeps at most 32 response headers, each value cut at 512 characters', async () => {
    headers = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`x-h${i}`, String(i)]));
    const many = (await patient.send(receiver.url, {}, '{}')).response!;
    expect(many.headers).toHaveLength(MAX_RECORDED_HEADERS);
    expect(many.headersTruncated).toBe(true);
    headers = { 'x-long': 'v'.repeat(2_000) };
    const long = (await patient.send(receiver.url, {}, '{}')).response!;
    expect(long.headers).toContainEqual(['x-long', 'v'.repeat(MAX_HEADER_VALUE_CHARS)]);
    expect(long.headersTruncated).toBe(true);
    headers = { 'x-short': 'v' };
    expect((await patient.send(receiver.url, {}, '{}')).response!.headersTruncated).toBe(false);
  });

  it('has no response to keep when none came', async () => {
    delayMs = 1_000;
    const r = await open.send(receiver.url, { 'webhook-id': 'evt_2' }, '{}');
    expect(r).toMatchObject({ ok: false, statusCode: null, response: null });
    expect(r.requestHeaders).toMatchObject({ 'webhook-id': 'evt_2' });
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
