import type { ServerResponse } from 'node:http';
import { startRecordingServer, unreachableUrl, type ReceivedRequest } from '@dap/testing';
import { ApiError, createApiClient, unwrap } from '../dashboard/src/api/client.ts';

/** The dashboard's client (the generated openapi-fetch client with the session's CSRF token) against a local server. */
let server: Awaited<ReturnType<typeof startRecordingServer>>;
let origin = '';
let handler: (req: ReceivedRequest, res: ServerResponse) => void;
let seen: ReceivedRequest[] = [];

beforeAll(async () => {
  server = await startRecordingServer((req, res) => handler(req, res));
  origin = server.url;
  seen = server.received;
});
afterAll(() => server.close());
beforeEach(() => {
  seen.length = 0;
});

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
const source = { id: 'src_1', name: 'orders', type: 'inline', config: {}, status: 'ready', error: null, schema: [], rowCount: 0, lastSyncedAt: null, createdAt: '', updatedAt: '' };

describe('the dashboard API client', () => {
  it('fills path and query parameters, and sends the CSRF token on writes only', async () => {
    handler = (req, res) => (req.method === 'DELETE' ? res.writeHead(204).end() : json(res, req.method === 'POST' ? 201 : 200, source));
    const api = createApiClient({ onSessionEnded: () => undefined, origin });
    api.setCsrfToken('csrf_1');
    expect((await unwrap(api.openapi.GET('/sources/{id}', { params: { path: { id: 'a/b' } } }))).id).toBe('src_1');
    await unwrap(api.openapi.GET('/sources', { params: { query: { limit: 100, cursor: 'c_1' } } }));
    await unwrap(api.openapi.POST('/sources', { body: { type: 'inline', name: 'orders', rows: [{ a: 1 }] } }));
    await expect(unwrap(api.openapi.DELETE('/sources/{id}', { params: { path: { id: 'src_1' } } }))).resolves.toBeUndefined();
    expect(seen.map((s) => `${s.method} ${s.path}`)).toEqual(['GET /v1/sources/a%2Fb', 'GET /v1/sources?limit=100&cursor=c_1', 'POST /v1/sources', 'DELETE /v1/sources/src_1']);
    expect(seen.map((s) => s.headers['x-csrf-token'])).toEqual([undefined, undefined, 'csrf_1', 'csrf_1']);
    expect(seen[0]!.headers.accept).toBe('application/json');
    expect(seen[2]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(seen[2]!.body)).toEqual({ type: 'inline', name: 'orders', rows: [{ a: 1 }] });
    api.setCsrfToken(null);
    await unwrap(api.openapi.POST('/sources/{id}/sync', { params: { path: { id: 'src_1' } } }));
    expect(seen[4]!.headers['x-csrf-token']).toBeUndefined();
  });

  it('throws a problem as an ApiError with its field errors, request id and Retry-After', async () => {
    handler = (_req, res) =>
      json(
        res,
        400,
        {
          type: 'about:blank',
          title: 'Invalid',
          status: 400,
          detail: 'bad name',
          instance: '/v1/sources',
          code: 'validation_failed',
          requestId: 'req_1',
          errors: [{ path: 'name', message: 'too long' }],
        },
        { 'content-type': 'application/problem+json', 'retry-after': '3' },
      );
    const api = createApiClient({ onSessionEnded: () => undefined, origin });
    const err = (await unwrap(api.openapi.POST('/sources', { body: { type: 'csv', name: 'x'.repeat(300), csv: 'a\n1' } })).catch((e: unknown) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 400, code: 'validation_failed', title: 'Invalid', detail: 'bad name', requestId: 'req_1', retryAfterSeconds: 3 });
    expect(err.fieldError('name')).toBe('too long');

    handler = (_req, res) => res.writeHead(502, { 'content-type': 'text/html', 'x-request-id': 'req_lb' }).end('<html>bad gateway</html>');
    const lb = (await unwrap(api.openapi.GET('/account')).catch((e: unknown) => e)) as ApiError;
    expect(lb).toMatchObject({ status: 502, code: 'http_error', title: 'Request failed (502)', requestId: 'req_lb' });
  });

  it('ends the session on a 401, except for a wrong password at sign-in', async () => {
    handler = (_req, res) => json(res, 401, { type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'no session', instance: '/', code: 'unauthorized', requestId: 'r' });
    const ended = jest.fn();
    const api = createApiClient({ onSessionEnded: ended, origin });
    await expect(unwrap(api.openapi.POST('/auth/login', { body: { email: 'a@example.com', password: 'wrong password here' } }))).rejects.toMatchObject({ status: 401 });
    expect(ended).not.toHaveBeenCalled();
    await expect(unwrap(api.openapi.GET('/account'))).rejects.toMatchObject({ status: 401 });
    expect(ended).toHaveBeenCalledTimes(1);
  });

  it('reports a lost connection as a network error, and lets an abort through', async () => {
    const offline = createApiClient({ onSessionEnded: () => undefined, origin: await unreachableUrl() });
    await expect(unwrap(offline.openapi.GET('/account'))).rejects.toMatchObject({ status: 0, code: 'network_error' });

    handler = () => undefined; // never answers
    const api = createApiClient({ onSessionEnded: () => undefined, origin });
    const ctrl = new AbortController();
    const pending = unwrap(api.openapi.GET('/account', { signal: ctrl.signal })).catch((e: unknown) => e);
    await new Promise((r) => setImmediate(r));
    ctrl.abort();
    const aborted = (await pending) as Error;
    expect(aborted).not.toBeInstanceOf(ApiError);
    expect(aborted.name).toBe('AbortError');
  });
});
