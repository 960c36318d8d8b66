import { createHash } from 'node:crypto';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { INTERNAL_CONTEXT_HEADER, INTERNAL_SIGNATURE_HEADER } from '@dap/contracts';
import { lingerAfterEarlyAnswer } from '@dap/http';
import { bearer, startHarness } from './harness.ts';

const JSON_LIMIT = 64 * 1024;
const UPLOAD_LIMIT = 4 * 1024 * 1024;

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  bytes: number;
  sha256: string;
}

/** A sources stand-in that reports the first byte of each body as it arrives, and hashes what it gets. */
async function startUploadUpstream() {
  const received: Received[] = [];
  let onFirstByte: () => void = () => {};
  const server: Server = createServer((req, res) => {
    if (req.url!.includes('name=Early')) {
      // As the service does past UPLOAD_LIMIT_BYTES: answer 413 mid-body, drop the rest for a moment, then close.
      lingerAfterEarlyAnswer(req, res);
      req.once('data', () => {
        req.pause();
        res.writeHead(413, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ status: 413, code: 'payload_too_large' }));
      });
      return;
    }
    const hash = createHash('sha256');
    let bytes = 0;
    req.on('data', (c: Buffer) => {
      if (bytes === 0) onFirstByte();
      bytes += c.length;
      hash.update(c);
    });
    req.on('end', () => {
      received.push({ method: req.method!, url: req.url!, headers: req.headers, bytes, sha256: hash.digest('hex') });
      res.writeHead(req.method === 'PUT' ? 202 : 201, { 'content-type': 'application/json' }).end(JSON.stringify({ bytes }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    firstByte: () => new Promise<void>((resolve) => (onFirstByte = resolve)),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let h: Awaited<ReturnType<typeof startHarness>>;
let up: Awaited<ReturnType<typeof startUploadUpstream>>;
let gw: { url: string };
let secret: string;

beforeAll(async () => {
  h = await startHarness();
  up = await startUploadUpstream();
  gw = await h.gateway({ SOURCES_URL: up.url, BODY_LIMIT_BYTES: String(JSON_LIMIT), UPLOAD_LIMIT_BYTES: String(UPLOAD_LIMIT) });
  ({ secret } = await h.newAccount('enterprise'));
}, 60_000);
afterAll(async () => {
  await h?.stop();
  await up?.close();
});

const chunk = (i: number) => Buffer.alloc(64 * 1024, 97 + (i % 26));

/** A CSV upload whose body is streamed (chunked, as fetch sends a stream), as the named source. */
const streamUpload = (name: string, body: ReadableStream<Uint8Array>) =>
  fetch(`${gw.url}/v1/sources/upload?name=${name}`, {
    method: 'POST',
    headers: { ...bearer(secret), 'content-type': 'text/csv' },
    body,
    duplex: 'half',
    signal: AbortSignal.timeout(20_000),
  } as RequestInit);

it('streams an upload to the service as it arrives, past the JSON limit, with the credentials swapped', async () => {
  const CHUNKS = 32; // 2 MiB: 32× the JSON limit
  const first = up.firstByte();
  let i = 0;
  let waited = false;
  // The body's second chunk is only sent once the service has the first: a gateway that buffered would deadlock.
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (i === 1 && !waited) {
        await first;
        waited = true;
      }
      if (i < CHUNKS) c.enqueue(chunk(i++));
      else c.close();
    },
  });
  const expected = createHash('sha256');
  for (let k = 0; k < CHUNKS; k++) expected.update(chunk(k));
  const res = await streamUpload('Big', body);
  expect(res.status).toBe(201);
  expect(waited).toBe(true);
  const got = up.received.at(-1)!;
  expect(got).toMatchObject({ method: 'POST', url: '/v1/sources/upload?name=Big', bytes: CHUNKS * 64 * 1024, sha256: expected.digest('hex') });
  expect(got.headers['content-type']).toBe('text/csv');
  expect(got.headers.authorization).toBeUndefined();
  expect(got.headers[INTERNAL_CONTEXT_HEADER]).toBeTruthy();
  expect(got.headers[INTERNAL_SIGNATURE_HEADER]).toBeTruthy();
});

it("passes on the service's 413 given mid-body (a chunked upload past the limit) to the client", async () => {
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (sent++ < 64) c.enqueue(chunk(sent));
      else c.close();
    },
  });
  const res = await streamUpload('Early', body);
  expect(res.status).toBe(413);
  expect(await res.json()).toMatchObject({ code: 'payload_too_large' });
});

it('takes PUT /v1/sources/{id}/data the same way', async () => {
  const res = await fetch(`${gw.url}/v1/sources/src_01JABCDEFGHJKMNPQRSTVWXYZ0/data`, {
    method: 'PUT',
    headers: { ...bearer(secret), 'content-type': 'application/x-ndjson' },
    body: Buffer.concat([chunk(0), chunk(1), chunk(2)]),
  });
  expect(res.status).toBe(202);
  expect(up.received.at(-1)).toMatchObject({ method: 'PUT', url: '/v1/sources/src_01JABCDEFGHJKMNPQRSTVWXYZ0/data', bytes: 3 * 64 * 1024 });
});

it('refuses a declared length over UPLOAD_LIMIT_BYTES with 413 before proxying; the JSON routes keep their own limit', async () => {
  const before = up.received.length;
  // Only the headers are sent: the answer must come from the declared length alone.
  const over = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const u = new URL(`${gw.url}/v1/sources/upload?name=Huge`);
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: `${u.pathname}${u.search}`,
        method: 'POST',
        headers: { ...bearer(secret), 'content-type': 'text/csv', 'content-length': String(UPLOAD_LIMIT + 1) },
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.flushHeaders();
  });
  expect(over.status).toBe(413);
  expect(JSON.parse(over.body)).toMatchObject({ code: 'payload_too_large', detail: `the file is larger than the upload limit of ${UPLOAD_LIMIT} bytes` });
  expect(up.received.length).toBe(before);

  // Positive control: the limit itself passes.
  const at = await fetch(`${gw.url}/v1/sources/upload?name=AtLimit`, {
    method: 'POST',
    headers: { ...bearer(secret), 'content-type': 'text/csv' },
    body: Buffer.alloc(UPLOAD_LIMIT, 97),
  });
  expect(at.status).toBe(201);
  expect(up.received.at(-1)!.bytes).toBe(UPLOAD_LIMIT);

  const json = await fetch(`${gw.url}/v1/sources`, {
    method: 'POST',
    headers: { ...bearer(secret), 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'csv', name: 'x', csv: 'a'.repeat(JSON_LIMIT) }),
  });
  expect(json.status).toBe(413);
  expect(up.received.length).toBe(before + 1);
});

it('answers a refusal before the body (a bad key) at once, then closes the connection instead of reading the file', async () => {
  const before = up.received.length;
  const answer = await new Promise<{ status: number; closed: boolean }>((resolve, reject) => {
    const u = new URL(`${gw.url}/v1/sources/upload?name=NoKey`);
    let status = 0;
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: `${u.pathname}${u.search}`,
        method: 'POST',
        headers: { authorization: 'Bearer dap_sk_nope', 'content-type': 'text/csv', 'content-length': '100000000' },
      },
      (res) => {
        status = res.statusCode!;
        res.resume();
      },
    );
    // The body never comes: the gateway must close the connection itself (after a short linger).
    req.on('close', () => resolve({ status, closed: true }));
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? undefined : reject(err)));
    req.flushHeaders();
  });
  expect(answer).toEqual({ status: 401, closed: true });
  expect(up.received.length).toBe(before);
});

it('refuses an Idempotency-Key on an upload (it cannot be honoured without buffering) and needs the scope', async () => {
  const res = await fetch(`${gw.url}/v1/sources/upload?name=Idem`, {
    method: 'POST',
    headers: { ...bearer(secret), 'content-type': 'text/csv', 'idempotency-key': 'k-1' },
    body: 'a,b\n1,2\n',
  });
  expect(res.status).toBe(400);
  expect(await res.json()).toMatchObject({ code: 'validation_failed', errors: [{ path: 'Idempotency-Key' }] });

  const { accountId } = await h.newAccount('starter');
  const { secret: readOnly } = await h.accounts.accounts.createKey(accountId, { name: 'ro', scopes: ['sources:read'] });
  const before = up.received.length;
  const forbidden = await fetch(`${gw.url}/v1/sources/upload?name=RO`, { method: 'POST', headers: { ...bearer(readOnly), 'content-type': 'text/csv' }, body: 'a,b\n1,2\n' });
  expect(forbidden.status).toBe(403);
  expect(up.received.length).toBe(before);
});

it('documents the upload operations in the OpenAPI document: the media types, the form, the query and 413/415', async () => {
  const doc = (await (await fetch(`${gw.url}/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, any>> }; // eslint-disable-line @typescript-eslint/no-explicit-any -- asserted field by field
  const upload = doc.paths['/sources/upload']!.post;
  expect(Object.keys(upload.requestBody.content)).toEqual(['text/csv', 'application/x-ndjson', 'application/json', 'multipart/form-data']);
  expect(upload.requestBody.content['multipart/form-data'].schema).toMatchObject({ type: 'object', required: ['file'], properties: { name: {}, format: {} } });
  expect(upload.parameters).toEqual(
    expect.arrayContaining([expect.objectContaining({ name: 'name', in: 'query', required: false }), expect.objectContaining({ name: 'format', in: 'query' })]),
  );
  expect(upload.parameters.map((p: { name: string }) => p.name)).not.toContain('Idempotency-Key');
  expect(Object.keys(upload.responses)).toEqual(expect.arrayContaining(['201', '413', '415']));
  const replace = doc.paths['/sources/{id}/data']!.put;
  expect(replace.operationId).toBe('replaceSourceData');
  expect(Object.keys(replace.responses)).toEqual(expect.arrayContaining(['202', '404', '409', '413', '415']));
  // The JSON route keeps its JSON body.
  expect(Object.keys(doc.paths['/sources']!.post.requestBody.content)).toEqual(['application/json']);
});
