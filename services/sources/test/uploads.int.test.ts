import { readdir } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { dirname } from 'node:path';
import { newId } from '@dap/contracts';
import { sqlLiteral } from '@dap/datasets';
import { callerHeaders, columns } from '@dap/testing';
import { startHarness, type Harness } from './harness.ts';

const LIMIT = 256 * 1024;
type Body = NonNullable<RequestInit['body']>;
let h: Harness;
const account = newId('acct');
const other = newId('acct');

beforeAll(async () => {
  h = await startHarness({ UPLOAD_LIMIT_BYTES: String(LIMIT), BODY_LIMIT_BYTES: String(64 * 1024) });
}, 60_000);
afterAll(() => h?.stop());

/** A raw request to the service: fetch with a body of any type, the caller's signed context. */
async function send(method: string, path: string, body: Body | undefined, headers: Record<string, string>, acct = account) {
  const res = await fetch(`${h.svc.url}${path}`, { method, body: body ?? null, headers: { ...callerHeaders(acct), ...headers }, duplex: 'half' } as RequestInit);
  const text = await res.text();
  let json: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- asserted field by field
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, body: json, text };
}

/** The published rows, in file order (loads keep row order). */
async function rowsOf(id: string, acct = account): Promise<Record<string, unknown>[]> {
  const file = await h.svc.store.currentFile(acct, id);
  expect(file).toBeTruthy();
  return (await h.svc.store.duck.run(`SELECT * FROM read_parquet(${sqlLiteral(file!)})`)).rows as Record<string, unknown>[];
}

function form(parts: Array<{ name: string; value: string; filename?: string; type?: string }>): { body: string; type: string } {
  const boundary = `----dap${Math.random().toString(16).slice(2)}`;
  const body =
    parts
      .map(
        (p) =>
          `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ''}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n${p.value}\r\n`,
      )
      .join('') + `--${boundary}--\r\n`;
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

const CSV = 'region,units,price\nnorth,3,2.5\nsouth,7,1.25\n';

describe('POST /v1/sources/upload', () => {
  it('takes a CSV body, stores it as the staged file and loads it', async () => {
    const res = await send('POST', '/v1/sources/upload?name=Sales', CSV, { 'content-type': 'text/csv; charset=utf-8' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'Sales', type: 'csv', status: 'pending', config: {} });
    expect(res.headers.get('location')).toBe(`/v1/sources/${res.body.id}`);
    const ready = await h.settled(res.body.id, account);
    expect(ready).toMatchObject({ status: 'ready', rowCount: 2, error: null });
    expect(ready.schema).toEqual(columns({ region: 'string', units: 'integer', price: 'number' }));
    expect(await rowsOf(res.body.id)).toEqual([
      { region: 'north', units: 3, price: 2.5 },
      { region: 'south', units: 7, price: 1.25 },
    ]);
    // Another account sees nothing of it.
    expect((await send('GET', `/v1/sources/${res.body.id}`, undefined, {}, other)).status).toBe(404);
  });

  it('takes NDJSON and a JSON array', async () => {
    const nd = await send('POST', '/v1/sources/upload?name=Events', '{"k":"a","v":1}\n{"k":"b","v":2}\n', { 'content-type': 'application/x-ndjson' });
    expect(nd.status).toBe(201);
    expect(nd.body.type).toBe('ndjson');
    const js = await send(
      'POST',
      '/v1/sources/upload?name=Arr',
      JSON.stringify([
        { k: 'x', v: 1.5 },
        { k: 'y', v: null },
      ]),
      { 'content-type': 'application/json' },
    );
    expect(js.status).toBe(201);
    expect(js.body.type).toBe('json');
    const [a, b] = [await h.settled(nd.body.id, account), await h.settled(js.body.id, account)];
    expect(a).toMatchObject({ status: 'ready', rowCount: 2 });
    expect(b).toMatchObject({ status: 'ready', rowCount: 2 });
    expect(await rowsOf(nd.body.id)).toEqual([
      { k: 'a', v: 1 },
      { k: 'b', v: 2 },
    ]);
    expect(await rowsOf(js.body.id)).toEqual([
      { k: 'x', v: 1.5 },
      { k: 'y', v: null },
    ]);
  });

  it('takes a multipart form: the file part with its name and format from the fields, the part type or the file name', async () => {
    const f = form([
      { name: 'name', value: 'From a form' },
      { name: 'file', value: CSV, filename: 'sales.csv', type: 'application/octet-stream' },
    ]);
    const res = await send('POST', '/v1/sources/upload', f.body, { 'content-type': f.type });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'From a form', type: 'csv' });
    expect(await h.settled(res.body.id, account)).toMatchObject({ status: 'ready', rowCount: 2 });

    // Fields after the file, the format named by a field.
    const g = form([
      { name: 'file', value: '{"a":1}\n', filename: 'data.txt', type: 'text/plain' },
      { name: 'format', value: 'ndjson' },
      { name: 'name', value: 'Late fields' },
    ]);
    const late = await send('POST', '/v1/sources/upload', g.body, { 'content-type': g.type });
    expect(late.status).toBe(201);
    expect(late.body).toMatchObject({ name: 'Late fields', type: 'ndjson' });
    expect(await h.settled(late.body.id, account)).toMatchObject({ status: 'ready', rowCount: 1 });
  });

  it('answers 415 for a media type or coding it does not take, before reading the body', async () => {
    const refused: Record<string, string>[] = [
      { 'content-type': 'text/plain' },
      { 'content-type': 'application/xml' },
      {},
      { 'content-type': 'text/csv', 'content-encoding': 'gzip' },
      { 'content-type': 'text/csv; charset=latin1' },
    ];
    for (const headers of refused) {
      const res = await send('POST', '/v1/sources/upload?name=X', CSV, headers);
      expect(res.status).toBe(415);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 415, code: 'upload_unsupported' });
    }
    // A raw body whose media type contradicts the format asked for.
    const mismatch = await send('POST', '/v1/sources/upload?name=X&format=json', CSV, { 'content-type': 'text/csv' });
    expect(mismatch.status).toBe(415);
  });

  it('answers 413 for a file over UPLOAD_LIMIT_BYTES: declared, streamed (chunked) or in a form; nothing is left behind', async () => {
    const big = 'a,b\n' + '1,2\n'.repeat(LIMIT / 4 + 10);
    const declared = await send('POST', '/v1/sources/upload?name=Big', big, { 'content-type': 'text/csv' });
    expect(declared.status).toBe(413);
    expect(declared.body).toMatchObject({ code: 'upload_too_large', detail: `the file is larger than the upload limit of ${LIMIT} bytes` });

    // No Content-Length: the service counts as the body streams.
    const chunks = [Buffer.from('a,b\n'), ...Array.from({ length: 40 }, () => Buffer.from('1,2\n'.repeat(2048)))];
    const stream = new ReadableStream({
      pull(c) {
        const next = chunks.shift();
        if (next) c.enqueue(next);
        else c.close();
      },
    });
    const chunked = await send('POST', '/v1/sources/upload?name=Big', stream, { 'content-type': 'text/csv' });
    expect(chunked.status).toBe(413);
    expect(chunked.body.code).toBe('upload_too_large');

    const f = form([
      { name: 'name', value: 'Big' },
      { name: 'file', value: big, filename: 'big.csv' },
    ]);
    const viaForm = await send('POST', '/v1/sources/upload', new Blob([f.body]).stream(), { 'content-type': f.type });
    expect([viaForm.status, viaForm.body.code]).toEqual([413, 'upload_too_large']);

    // Positive control: just under the limit is taken.
    const fits = 'a,b\n' + '1,2\n'.repeat(LIMIT / 4 - 10);
    expect((await send('POST', '/v1/sources/upload?name=Fits', fits, { 'content-type': 'text/csv' })).status).toBe(201);
    const listed = await send('GET', '/v1/sources?limit=100', undefined, {});
    expect(listed.body.data.filter((s: { name: string }) => s.name === 'Big')).toEqual([]);
    const dirs = await readdir(dirname(h.svc.store.dir(account, newId('src'))));
    const known = new Set(listed.body.data.map((s: { id: string }) => s.id));
    expect(dirs.filter((d) => !known.has(d))).toEqual([]);
  });

  it('answers 400 for a malformed body: bad CSV, broken JSON, a form without a file, a missing name', async () => {
    const cases: Array<[string, Body, Record<string, string>, RegExp]> = [
      ['/v1/sources/upload?name=X', 'a,b\n1,"2\n', { 'content-type': 'text/csv' }, /never closed|could not be parsed/],
      ['/v1/sources/upload?name=X', '[{"a":1},', { 'content-type': 'application/json' }, /not valid JSON/],
      ['/v1/sources/upload?name=X', '{"a":1}\nnope\n', { 'content-type': 'application/x-ndjson' }, /line 2 is not valid JSON/],
      ['/v1/sources/upload?name=X', '', { 'content-type': 'text/csv' }, /empty/],
      ['/v1/sources/upload?name=X', Buffer.from([0x61, 0x2c, 0x62, 0x0a, 0x00, 0x01]), { 'content-type': 'text/csv' }, /NUL bytes/],
      ['/v1/sources/upload', CSV, { 'content-type': 'text/csv' }, /name/],
      ['/v1/sources/upload?name=X', '--x\r\nbroken', { 'content-type': 'multipart/form-data' }, /multipart/],
    ];
    const noFile = form([{ name: 'name', value: 'X' }]);
    cases.push(['/v1/sources/upload', noFile.body, { 'content-type': noFile.type }, /no file part/]);
    const extra = form([
      { name: 'file', value: CSV, filename: 'a.csv' },
      { name: 'owner', value: 'me' },
    ]);
    cases.push(['/v1/sources/upload?name=X', extra.body, { 'content-type': extra.type }, /unknown field/]);
    const unknownFormat = form([{ name: 'file', value: CSV, filename: 'data', type: 'application/octet-stream' }]);
    cases.push(['/v1/sources/upload?name=X', unknownFormat.body, { 'content-type': unknownFormat.type }, /format is unknown/]);
    for (const [path, body, headers, detail] of cases) {
      const res = await send('POST', path, body, headers);
      expect([res.status, res.body?.detail]).toEqual([400, expect.stringMatching(detail)]);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    const listed = await send('GET', '/v1/sources?limit=100', undefined, {});
    expect(listed.body.data.filter((s: { name: string }) => s.name === 'X')).toEqual([]);
  });

  it('keeps the JSON inline upload working beside it', async () => {
    const res = await h.api('POST', '/v1/sources', { account, body: { type: 'csv', name: 'Inline', csv: CSV } });
    expect(res.status).toBe(201);
    expect(await h.settled(res.body.id, account)).toMatchObject({ status: 'ready', rowCount: 2 });
  });
});

describe('PUT /v1/sources/{id}/data', () => {
  it("replaces a file source's data and loads it again; another account's source is a 404", async () => {
    const created = await send('POST', '/v1/sources/upload?name=Replace', CSV, { 'content-type': 'text/csv' });
    await h.settled(created.body.id, account);
    const id = created.body.id as string;

    expect((await send('PUT', `/v1/sources/${id}/data`, 'region,units,price\neast,1,9\n', { 'content-type': 'text/csv' }, other)).status).toBe(404);

    const f = form([{ name: 'file', value: 'region,units,price\neast,1,9\nwest,2,8\nmid,3,7\n', filename: 'new.csv' }]);
    const put = await send('PUT', `/v1/sources/${id}/data`, f.body, { 'content-type': f.type });
    expect(put.status).toBe(202);
    expect(put.body).toMatchObject({ id, name: 'Replace', status: 'pending' });
    const ready = await h.settled(id, account);
    expect(ready).toMatchObject({ status: 'ready', rowCount: 3 });
    expect((await rowsOf(id)).map((r) => r.region)).toEqual(['east', 'west', 'mid']);
  });

  it('replaces an inline-JSON source with a streamed JSON file (its staged NDJSON goes)', async () => {
    const res = await h.api('POST', '/v1/sources', { account, body: { type: 'json', name: 'J', json: '[{"a":1}]' } });
    await h.settled(res.body.id, account);
    const put = await send('PUT', `/v1/sources/${res.body.id}/data`, '[{"a":2},{"a":3}]', { 'content-type': 'application/json' });
    expect(put.status).toBe(202);
    expect(await h.settled(res.body.id, account)).toMatchObject({ status: 'ready', rowCount: 2 });
    expect((await rowsOf(res.body.id)).map((r) => r.a)).toEqual([2, 3]);
    const files = await readdir(h.svc.store.dir(account, res.body.id));
    expect(files.filter((f) => f.startsWith('staging.'))).toEqual(['staging.json']);
  });

  it('refuses: 415 for another format, 409 for a non-file source or a running sync, 400 for bad data (the old data stays)', async () => {
    const created = await send('POST', '/v1/sources/upload?name=Keep', CSV, { 'content-type': 'text/csv' });
    const id = created.body.id as string;
    await h.settled(id, account);

    const wrong = await send('PUT', `/v1/sources/${id}/data`, '{"a":1}\n', { 'content-type': 'application/x-ndjson' });
    expect([wrong.status, wrong.body.code]).toEqual([415, 'upload_format_mismatch']);

    const inline = await h.api('POST', '/v1/sources', { account, body: { type: 'inline', name: 'Rows', rows: [{ a: 1 }] } });
    const notFile = await send('PUT', `/v1/sources/${inline.body.id}/data`, CSV, { 'content-type': 'text/csv' });
    expect([notFile.status, notFile.body.code]).toEqual([409, 'source_not_uploadable']);

    const bad = await send('PUT', `/v1/sources/${id}/data`, 'a,b\n1,"2\n', { 'content-type': 'text/csv' });
    expect(bad.status).toBe(400);
    expect(await h.settled(id, account)).toMatchObject({ status: 'ready', rowCount: 2 });
    expect((await rowsOf(id)).map((r) => r.region)).toEqual(['north', 'south']);

    // A live sync holds the source: the upload waits its turn (409); once it is settled the upload goes through.
    await h.svc.repo.coll.raw.updateOne({ _id: id } as never, {
      $set: { status: 'syncing', syncToken: newId('msg'), syncOwner: 'another', syncLeaseUntil: new Date(Date.now() + 60_000) },
    });
    const busy = await send('PUT', `/v1/sources/${id}/data`, 'region,units,price\nx,1,1\n', { 'content-type': 'text/csv' });
    expect([busy.status, busy.body.code]).toEqual([409, 'source_sync_running']);
    await h.svc.repo.coll.raw.updateOne({ _id: id } as never, { $set: { status: 'ready', syncToken: null, syncOwner: null, syncLeaseUntil: null } });
    const ok = await send('PUT', `/v1/sources/${id}/data`, 'region,units,price\nx,1,1\n', { 'content-type': 'text/csv' });
    expect(ok.status).toBe(202);
    expect(await h.settled(id, account)).toMatchObject({ status: 'ready', rowCount: 1 });
    const files = await readdir(h.svc.store.dir(account, id));
    expect(files.filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});

/**
 * Sends the headers and `first` of a body it declares as `declared` bytes; resolves with the answer and with
 * whether the server closed the connection (it is never closed from this side).
 */
function headersFirst(path: string, headers: Record<string, string>, declared: number, first = ''): Promise<{ status: number; closedByServer: boolean }> {
  const u = new URL(`${h.svc.url}${path}`);
  const keepAlive = new Agent({ keepAlive: true }); // its own, so no earlier connection is reused
  return new Promise<{ status: number; closedByServer: boolean }>((resolve, reject) => {
    let status = 0;
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: `${u.pathname}${u.search}`,
        method: 'POST',
        agent: false,
        headers: { ...callerHeaders(account), ...headers, 'content-length': String(declared) },
      },
      (res) => {
        status = res.statusCode!;
        res.resume();
        // A whole request: the connection stays open for the next one (positive control).
        if (first.length === declared) res.on('end', () => resolve({ status, closedByServer: res.headers.connection === 'close' }));
      },
    );
    req.on('socket', (socket) => socket.once('close', () => resolve({ status, closedByServer: true })));
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? undefined : reject(err)));
    if (first) req.write(first);
    else req.flushHeaders();
    if (first.length === declared) req.end();
  }).finally(() => keepAlive.destroy());
}

it('answers a refusal before the body has arrived, then closes the connection rather than reading the rest', async () => {
  expect(await headersFirst('/v1/sources/upload?name=X', { 'content-type': 'text/plain' }, 200_000)).toEqual({ status: 415, closedByServer: true });
  expect(await headersFirst('/v1/sources/upload', { 'content-type': 'text/csv' }, 200_000, 'a,b\n')).toEqual({ status: 400, closedByServer: true });
  // The same request sent whole is taken.
  expect((await headersFirst('/v1/sources/upload?name=Whole', { 'content-type': 'text/csv' }, CSV.length, CSV)).status).toBe(201);
});

// A body cut off mid-way leaves no source and no temporary file.
it('a client that goes away mid-upload leaves nothing behind', async () => {
  const acct = newId('acct');
  const u = new URL(`${h.svc.url}/v1/sources/upload?name=Cut`);
  await new Promise<void>((resolve) => {
    const req = request({
      host: u.hostname,
      port: u.port,
      path: `${u.pathname}${u.search}`,
      method: 'POST',
      headers: { ...callerHeaders(acct), 'content-type': 'text/csv', 'content-length': '100000' },
    });
    req.on('error', () => resolve());
    req.write('a,b\n1,2\n');
    setTimeout(() => {
      req.destroy();
      resolve();
    }, 200);
  });
  const root = dirname(h.svc.store.dir(acct, newId('src')));
  await expect(
    (async () => {
      for (let i = 0; i < 50; i++) {
        const left = await readdir(root).catch(() => []);
        if (left.length === 0) return 'clean';
        await new Promise((r) => setTimeout(r, 20));
      }
      return 'left';
    })(),
  ).resolves.toBe('clean');
});
