import type { ServerResponse } from 'node:http';
import { API_OPERATIONS } from '@dap/contracts';
import { startRecordingServer, unreachableUrl, type ReceivedRequest } from '@dap/testing';
import { createDapClient, METHOD_OF_OPERATION, type DapClient } from './client.ts';
import { DapApiError, DapConnectionError, parseRetryAfter, RateLimitedError } from './errors.ts';
import type { Source } from './operations.ts';

type Handler = (req: ReceivedRequest, res: ServerResponse) => void;

let server: Awaited<ReturnType<typeof startRecordingServer>>;
let base = '';
let handler: Handler;
let seen: ReceivedRequest[] = [];

beforeAll(async () => {
  server = await startRecordingServer((req, res) => handler(req, res));
  base = server.url;
  seen = server.received;
});
afterAll(() => server.close());
beforeEach(() => {
  seen.length = 0;
});

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
const problem = (status: number, code: string, extra: Record<string, string> = {}) => ({
  type: `/docs/problems/${code}`,
  title: 'Problem',
  status,
  detail: `${code} happened`,
  instance: '/v1/x',
  code,
  requestId: 'req_from_body',
  ...extra,
});
const source = (id: string): Source => ({
  id,
  name: 'orders',
  type: 'inline',
  config: {},
  status: 'ready',
  error: null,
  schema: [{ name: 'a', type: 'integer' }],
  rowCount: 1,
  lastSyncedAt: '2026-01-01T00:00:00.000Z',
  lastSync: { status: 'failed', error: 'the file answered 500', at: '2026-01-02T00:00:00.000Z' },
  schedule: null,
  nextSyncAt: null,
  schemaPolicy: 'evolve',
  quarantine: null,
  incremental: null,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
});
const client = (extra: Partial<Parameters<typeof createDapClient>[0]> = {}): DapClient => createDapClient({ baseUrl: base, apiKey: 'dap_test_key', ...extra });

/** What an API key can call; session-only and public operations belong to the dashboard. */
const KEY_OPERATIONS = API_OPERATIONS.filter((o) => (o.auth ?? 'any') === 'any');

describe('the SDK covers the contracts table', () => {
  it('has a method for every /v1 operation an API key can call', () => {
    expect(KEY_OPERATIONS.length).toBeGreaterThanOrEqual(20);
    expect(Object.keys(METHOD_OF_OPERATION).sort()).toEqual(KEY_OPERATIONS.map((o) => o.operationId).sort());
  });

  it.each(KEY_OPERATIONS.map((o) => [o.operationId, o] as const))('%s sends its method and path', async (_id, op) => {
    handler = (_req, res) => (op.success.status === 204 ? res.writeHead(204).end() : json(res, op.success.status, {}));
    const [ns, name] = METHOD_OF_OPERATION[op.operationId as keyof typeof METHOD_OF_OPERATION].split('.') as [string, string];
    const fn = (client() as unknown as Record<string, Record<string, (...a: unknown[]) => PromiseLike<unknown>>>)[ns]![name]!;
    const args: unknown[] = [];
    const params = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    args.push(...params.map((p) => `${p}_1/2`));
    if (op.body) args.push({});
    if (op.upload) args.push('a,b\n1,2\n', { name: 'n', format: 'csv' });
    await fn(...args);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.method).toBe(op.method.toUpperCase());
    expect(seen[0]!.path.split('?')[0]).toBe(`/v1${op.path.replace(/\{(\w+)\}/g, '$1_1%2F2')}`);
    expect(seen[0]!.headers.authorization).toBe('Bearer dap_test_key');
  });
});

describe('requests and responses', () => {
  it('returns the body, or with .withResponse() the status, Location, rate limit and request id too', async () => {
    handler = (req, res) =>
      json(res, 201, source('src_1'), {
        location: '/v1/sources/src_1',
        'x-request-id': 'req_1',
        'x-ratelimit-limit': '100',
        'x-ratelimit-remaining': '99',
        'x-ratelimit-reset': '60',
      });
    const c = client();
    const body = { type: 'inline' as const, name: 'orders', rows: [{ a: 1 }] };
    const created = await c.sources.create(body, { requestId: 'req_mine', idempotencyKey: 'idem-1' }).withResponse();
    expect(created.status).toBe(201);
    expect(created.data.id).toBe('src_1');
    expect(created.headers.get('location')).toBe('/v1/sources/src_1');
    expect(created.rateLimit).toEqual({ limit: 100, remaining: 99, reset: 60 });
    expect(created.requestId).toBe('req_1');
    expect(seen[0]!.headers['content-type']).toBe('application/json');
    expect(seen[0]!.headers['x-request-id']).toBe('req_mine');
    expect(seen[0]!.headers['idempotency-key']).toBe('idem-1');
    expect(JSON.parse(seen[0]!.body)).toEqual(body);
    expect((await c.sources.get('src_1')).name).toBe('orders');
  });

  it('sends list parameters, accepts a base URL ending in /v1, and leaves out an absent key', async () => {
    handler = (_req, res) => json(res, 200, { data: [], hasMore: false, nextCursor: null });
    await createDapClient({ baseUrl: `${base}/v1/` }).models.list({ limit: 5, cursor: 'abc' });
    expect(seen[0]!.path).toBe('/v1/models?limit=5&cursor=abc');
    expect(seen[0]!.headers.authorization).toBeUndefined();
  });

  it('asks for usage by window and grouping', async () => {
    handler = (_req, res) => json(res, 200, { window: '1h', groupBy: 'operation' });
    await createDapClient({ baseUrl: base }).analytics.usage({ window: '1h', groupBy: 'operation' });
    await createDapClient({ baseUrl: base }).analytics.usage();
    expect(seen.map((s) => s.path)).toEqual(['/v1/analytics/usage?window=1h&groupBy=operation', '/v1/analytics/usage']);
  });

  it('returns a Parquet export as its exact bytes', async () => {
    const bytes = Buffer.from([0x50, 0x41, 0x52, 0x31, 0xff, 0xfe, 0x00, 0x80, 0x50, 0x41, 0x52, 0x31]); // not valid UTF-8
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/vnd.apache.parquet' }).end(bytes);
    const got = await client({ validateResponses: true }).analytics.exportReportParquet('rpt_1');
    expect(got).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(got).equals(bytes)).toBe(true);
    expect(seen[0]!.path).toBe('/v1/analytics/reports/rpt_1/export.parquet');
  });

  it('returns CSV exports as text and 204s as undefined', async () => {
    handler = (req, res) => (req.method === 'DELETE' ? res.writeHead(204).end() : res.writeHead(200, { 'content-type': 'text/csv; charset=utf-8' }).end('a,b\r\n1,2\r\n'));
    expect(await client().analytics.exportReportCsv('rpt_1')).toBe('a,b\r\n1,2\r\n');
    const deleted = await client().webhooks.delete('whk_1').withResponse();
    expect(deleted).toMatchObject({ status: 204, data: undefined });
  });

  it('checks bodies against the schemas when asked', async () => {
    handler = (_req, res) => json(res, 200, { ...source('src_1'), status: 'exploded' });
    await expect(client().sources.get('src_1')).resolves.toMatchObject({ status: 'exploded' });
    const err = await client({ validateResponses: true })
      .sources.get('src_1')
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(DapApiError);
    expect((err as DapApiError).code).toBe('invalid_response');
    expect((err as DapApiError).message).toMatch(/status/);
  });
});

describe('errors', () => {
  it('throws a DapApiError carrying the problem body, status and request id', async () => {
    handler = (_req, res) => json(res, 404, problem(404, 'source_not_found'), { 'content-type': 'application/problem+json' });
    const err = (await client()
      .sources.get('src_nope')
      .catch((e: unknown) => e)) as DapApiError;
    expect(err).toBeInstanceOf(DapApiError);
    expect(err).not.toBeInstanceOf(RateLimitedError);
    expect(err.status).toBe(404);
    expect(err.code).toBe('source_not_found');
    expect([err.is('source_not_found'), err.is('model_not_found')]).toEqual([true, false]);
    expect(err.requestId).toBe('req_from_body');
    expect(err.problem.detail).toBe('source_not_found happened');
    // The relative problem type, resolved against the request URL: the page the gateway serves for it.
    expect(err.typeUrl).toBe(`${base}/docs/problems/source_not_found`);
  });

  it('makes a problem from a body that is not one (an intermediary answered)', async () => {
    handler = (_req, res) => res.writeHead(502, { 'content-type': 'text/html', 'x-request-id': 'req_lb' }).end('<html>bad gateway</html>');
    const err = (await client()
      .sources.get('src_1')
      .catch((e: unknown) => e)) as DapApiError;
    expect(err.status).toBe(502);
    expect(err.problem).toMatchObject({ status: 502, code: 'http_502', instance: '/v1/sources/src_1', detail: '<html>bad gateway</html>' });
    expect(err.typeUrl).toBeNull(); // about:blank names no page
    expect(err.requestId).toBe('req_lb');
  });

  it('throws a DapConnectionError when nothing answers', async () => {
    await expect(createDapClient({ baseUrl: await unreachableUrl(), maxRetries: 0 }).sources.list()).rejects.toBeInstanceOf(DapConnectionError);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(parseRetryAfter('7')).toBe(7);
    expect(parseRetryAfter(new Date(Date.UTC(2030, 0, 1, 0, 0, 30)).toUTCString(), Date.UTC(2030, 0, 1))).toBe(30);
    expect(parseRetryAfter(null)).toBeNull();
    expect(parseRetryAfter('soon')).toBeNull();
  });
});

describe('retries', () => {
  it('waits out a 429 for as long as Retry-After says, then succeeds', async () => {
    let n = 0;
    handler = (_req, res) => (n++ === 0 ? json(res, 429, problem(429, 'quota_exceeded'), { 'retry-after': '1' }) : json(res, 200, { data: [], hasMore: false, nextCursor: null }));
    const waits: number[] = [];
    const page = await client({ maxRetries: 1, sleep: async (ms) => void waits.push(ms) }).sources.list();
    expect(page.data).toEqual([]);
    expect(seen).toHaveLength(2);
    expect(waits).toEqual([1_000]);
  });

  it('throws a RateLimitedError with retryAfter when retries are off, or the wait is too long', async () => {
    handler = (_req, res) => json(res, 429, problem(429, 'quota_exceeded'), { 'retry-after': '42' });
    const off = (await client({ maxRetries: 0 })
      .sources.list()
      .catch((e: unknown) => e)) as RateLimitedError;
    expect(off).toBeInstanceOf(RateLimitedError);
    expect(off).toBeInstanceOf(DapApiError);
    expect(off.retryAfter).toBe(42);
    expect(off.status).toBe(429);
    seen.length = 0;
    const waits: number[] = [];
    const long = await client({ maxRetries: 3, maxRetryDelayMs: 5_000, sleep: async (ms) => void waits.push(ms) })
      .sources.list()
      .catch((e: unknown) => e);
    expect(long).toBeInstanceOf(RateLimitedError);
    expect(seen).toHaveLength(1);
    expect(waits).toEqual([]); // not slept through (the test above sees a wait that is)
  });

  it('repeats a POST after a 503 only when it carries an Idempotency-Key, and keeps the key', async () => {
    let n = 0;
    handler = (_req, res) => (n++ % 2 === 0 ? json(res, 503, problem(503, 'unavailable'), { 'retry-after': '0' }) : json(res, 201, source('src_9')));
    const body = { type: 'inline' as const, name: 'x', rows: [{ a: 1 }] };
    await expect(client().sources.create(body)).rejects.toMatchObject({ status: 503 });
    expect(seen).toHaveLength(1);

    seen.length = 0;
    n = 0;
    expect((await client().sources.create(body, { idempotencyKey: 'k-1' })).id).toBe('src_9');
    expect(seen.map((s) => s.headers['idempotency-key'])).toEqual(['k-1', 'k-1']);

    seen.length = 0;
    n = 0;
    expect((await client({ idempotencyKeys: 'auto' }).sources.create(body)).id).toBe('src_9');
    expect(seen).toHaveLength(2);
    expect(seen[0]!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1]!.headers['idempotency-key']).toBe(seen[0]!.headers['idempotency-key']);
  });

  it('sends no Idempotency-Key where the operation takes none, so a sign-up is never repeated after a 503', async () => {
    handler = (_req, res) => json(res, 503, problem(503, 'unavailable'), { 'retry-after': '0' });
    // The typed surface leaves the dashboard's /auth operations out; `request` still reaches them by id.
    const signup = { body: { email: 'a@example.com', password: 'correct horse battery', accountName: 'A' } } as never;
    await expect(client({ idempotencyKeys: 'auto' }).request('signup' as never, signup)).rejects.toMatchObject({ status: 503 });
    expect(seen.map((s) => s.headers['idempotency-key'])).toEqual([undefined]);
    await expect(client().request('signup' as never, signup, { idempotencyKey: 'k-1' })).rejects.toThrow(/signup takes no Idempotency-Key/);
    await expect(client().sources.create({ type: 'inline', name: 'x', rows: [{ a: 1 }] }, { idempotencyKey: '' })).rejects.toThrow(/1 to 255 visible ASCII/);
    expect(seen).toHaveLength(1);
  });

  it('repeats a GET after a 503', async () => {
    let n = 0;
    handler = (_req, res) => (n++ === 0 ? json(res, 503, problem(503, 'unavailable'), { 'retry-after': '0' }) : json(res, 200, source('src_1')));
    expect((await client().sources.get('src_1')).id).toBe('src_1');
    expect(seen).toHaveLength(2);
  });
});

describe('uploads', () => {
  it('streams a file as the raw body with its media type, name and format in the query, and no Idempotency-Key', async () => {
    handler = (_req, res) => json(res, 201, source('src_up'), { location: '/v1/sources/src_up' });
    async function* lines() {
      yield new TextEncoder().encode('region,units\n');
      for (let i = 0; i < 1000; i++) yield new TextEncoder().encode(`r${i},${i}\n`);
    }
    const created = await client({ idempotencyKeys: 'auto' }).sources.upload(lines(), { name: 'Big one', format: 'csv' }).withResponse();
    expect(created.status).toBe(201);
    expect(created.data.id).toBe('src_up');
    // The generated client encodes a space as %20 (the server reads + and %20 alike).
    expect(seen[0]).toMatchObject({ method: 'POST', path: '/v1/sources/upload?name=Big%20one&format=csv' });
    expect(seen[0]!.headers['content-type']).toBe('text/csv');
    expect(seen[0]!.headers['transfer-encoding']).toBe('chunked');
    expect(seen[0]!.headers['idempotency-key']).toBeUndefined();
    expect(seen[0]!.body.split('\n')).toHaveLength(1002);
    expect(seen[0]!.body.endsWith('r999,999\n')).toBe(true);
  });

  it('filters the delivery log, keeping the filters on every page of listAllDeliveries', async () => {
    const delivery = (id: string) => ({
      id,
      type: 'report.completed',
      status: 'failed',
      attempts: [],
      nextAttemptAt: null,
      createdAt: '2026-03-01T10:00:00.000Z',
      updatedAt: '2026-03-01T10:00:00.000Z',
    });
    handler = (req, res) =>
      json(
        res,
        200,
        req.path.includes('cursor=') ? { data: [delivery('evt_2')], hasMore: false, nextCursor: null } : { data: [delivery('evt_1')], hasMore: true, nextCursor: 'next' },
      );
    const all = [];
    for await (const d of client().webhooks.listAllDeliveries('whk_1', { status: 'failed', eventType: 'report.completed', since: '2026-03-01T00:00:00Z', pageSize: 1 }))
      all.push(d.id);
    expect(all).toEqual(['evt_1', 'evt_2']);
    expect(seen.map((r) => r.path)).toEqual([
      '/v1/webhooks/whk_1/deliveries?status=failed&eventType=report.completed&since=2026-03-01T00%3A00%3A00Z&limit=1',
      '/v1/webhooks/whk_1/deliveries?status=failed&eventType=report.completed&since=2026-03-01T00%3A00%3A00Z&limit=1&cursor=next',
    ]);
  });

  it('sets and removes a schedule with PATCH /sources/{id}', async () => {
    const scheduled = { ...source('src_1'), schedule: { cron: '0 6 * * *', timezone: 'Europe/Berlin' }, nextSyncAt: '2026-01-02T05:00:00.000Z' };
    handler = (_req, res) => json(res, 200, seen.length === 1 ? scheduled : source('src_1'));
    expect(await client().sources.update('src_1', { schedule: { cron: '0 6 * * *', timezone: 'Europe/Berlin' } })).toEqual(scheduled);
    expect((await client().sources.update('src_1', { schedule: null })).schedule).toBeNull();
    expect(seen.map((r) => [r.method, r.path, JSON.parse(r.body)])).toEqual([
      ['PATCH', '/v1/sources/src_1', { schedule: { cron: '0 6 * * *', timezone: 'Europe/Berlin' } }],
      ['PATCH', '/v1/sources/src_1', { schedule: null }],
    ]);
  });

  it('takes the format from a Blob or File, sends bytes with their length, and refuses a file that does not say', async () => {
    handler = (_req, res) => json(res, 202, source('src_1'));
    await client().sources.replaceData('src_1', new File(['{"a":1}\n'], 'events.ndjson'));
    expect(seen[0]).toMatchObject({ method: 'PUT', path: '/v1/sources/src_1/data?format=ndjson', body: '{"a":1}\n' });
    expect(seen[0]!.headers['content-type']).toBe('application/x-ndjson');
    await client().sources.upload(new Blob(['[{"a":1}]'], { type: 'application/json' }), { name: 'j' });
    expect(seen[1]!.headers['content-type']).toBe('application/json');
    await client().sources.upload(Buffer.from('a\n1\n'), { name: 'b', format: 'csv' });
    expect(seen[2]!.headers['content-length']).toBe('4');
    expect(() => client().sources.upload(Buffer.from('a\n1\n'), { name: 'b' })).toThrow(/give the upload format/);
    expect(seen).toHaveLength(3);
  });

  it('repeats an upload of bytes after a 503 (PUT), never one from a stream', async () => {
    let n = 0;
    handler = (_req, res) => (n++ % 2 === 0 ? json(res, 503, problem(503, 'unavailable'), { 'retry-after': '0' }) : json(res, 202, source('src_1')));
    expect((await client().sources.replaceData('src_1', 'a,b\n1,2\n', { format: 'csv' })).id).toBe('src_1');
    expect(seen.map((s) => s.body)).toEqual(['a,b\n1,2\n', 'a,b\n1,2\n']);

    seen.length = 0;
    n = 0;
    const stream = new Blob(['a,b\n1,2\n']).stream();
    await expect(client().sources.replaceData('src_1', stream, { format: 'csv' })).rejects.toMatchObject({ status: 503 });
    expect(seen).toHaveLength(1);
  });
});

describe('pagination', () => {
  it('walks every page with for await, following nextCursor', async () => {
    const ids = ['s5', 's4', 's3', 's2', 's1'];
    handler = (req, res) => {
      const q = new URL(req.path, 'http://x').searchParams;
      const start = q.get('cursor') ? ids.indexOf(q.get('cursor')!) + 1 : 0;
      const limit = Number(q.get('limit'));
      const data = ids.slice(start, start + limit).map(source);
      const hasMore = start + limit < ids.length;
      json(res, 200, { data, hasMore, nextCursor: hasMore ? data[data.length - 1]!.id : null });
    };
    const got: string[] = [];
    for await (const s of client().sources.listAll({ pageSize: 2 })) got.push(s.id);
    expect(got).toEqual(ids);
    expect(seen.map((s) => s.path)).toEqual(['/v1/sources?limit=2', '/v1/sources?limit=2&cursor=s4', '/v1/sources?limit=2&cursor=s2']);

    seen.length = 0;
    const firstThree: string[] = [];
    for await (const s of client().sources.listAll({ pageSize: 2, max: 3 })) firstThree.push(s.id);
    expect(firstThree).toEqual(['s5', 's4', 's3']);
    expect(seen).toHaveLength(2);
  });
});
