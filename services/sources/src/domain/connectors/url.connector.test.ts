import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { newId } from '@dap/contracts';
import { DatasetStore } from '@dap/datasets';
import { createLogger } from '@dap/logger';
import { OutboundGuard } from '@dap/netguard';
import { ConnectorCheckError, type RemoteContext } from './connector.ts';
import { formatFromBytes, formatFromHeaders, redactUrl, urlConnector } from './url.connector.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
/** Text that does not compress to almost nothing, so that zeroing some of it breaks the stream. */
const NOISY = `a\n${Array.from({ length: 20_000 }, (_, i) => (i * 7919) % 10_007).join('\n')}\n`;
/** A compressed stream with bytes in its middle zeroed. */
const corrupt = (b: Buffer) => b.fill(0, 20, 60);
const routes: Record<string, Handler> = {
  '/data.csv': (_q, r) => r.writeHead(200, { 'content-type': 'text/csv' }).end('a,b\n1,x\n2,y\n'),
  '/data.bin': (_q, r) => r.writeHead(200, { 'content-type': 'application/octet-stream' }).end('{"a":1}\n{"a":2}\n'),
  '/gz.csv': (_q, r) => r.writeHead(200, { 'content-type': 'text/csv', 'content-encoding': 'gzip' }).end(gzipSync('a\n1\n2\n')),
  '/bad-gz.csv': (_q, r) => r.writeHead(200, { 'content-type': 'text/csv', 'content-encoding': 'gzip' }).end(corrupt(gzipSync(NOISY))),
  '/bad-br.csv': (_q, r) => r.writeHead(200, { 'content-type': 'text/csv', 'content-encoding': 'br' }).end(corrupt(brotliCompressSync(NOISY))),
  '/redirect': (_q, r) => r.writeHead(302, { location: 'http://10.0.0.1/secret.csv' }).end(),
  '/page': (_q, r) => r.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>'),
  '/missing': (_q, r) => r.writeHead(404).end(),
  '/empty.csv': (_q, r) => r.writeHead(200, { 'content-type': 'text/csv', 'content-length': '0' }).end(),
  '/huge.csv': (_q, r) => r.writeHead(200, { 'content-type': 'text/csv', 'content-length': String(10 * 1024 * 1024) }).end(),
  '/stream.csv': (_q, r) => {
    r.writeHead(200, { 'content-type': 'text/csv' });
    r.write('a\n');
    const chunk = '1\n'.repeat(4096);
    let sent = 0;
    const more = () => {
      while (sent < 3 * 1024 * 1024) {
        sent += chunk.length;
        if (!r.write(chunk)) return void r.once('drain', more);
      }
      r.end();
    };
    more();
  },
  '/stall.csv': (_q, r) => r.writeHead(200, { 'content-type': 'text/csv' }).write('a\n1\n'),
  '/bad.json': (_q, r) => r.writeHead(200, { 'content-type': 'application/json' }).end('{"a": 1}'),
  '/binary.csv': (_q, r) => r.writeHead(200, { 'content-type': 'text/csv' }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 1])),
};

let server: Server;
let base: string;
let root: string;
let store: DatasetStore;
const hits: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    (routes[req.url ?? ''] ?? ((_q, r) => r.writeHead(404).end()))(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  root = await mkdtemp(join(tmpdir(), 'dap-url-test-'));
  store = await DatasetStore.open(root);
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  store.duck.close();
  await rm(root, { recursive: true, force: true });
});

function ctx(guard = new OutboundGuard({ allowPrivate: true }), limits: Partial<RemoteContext['limits']> = {}): RemoteContext {
  return {
    guard,
    store,
    logger: createLogger({ name: 'test', level: 'silent' }),
    signal: new AbortController().signal,
    limits: { maxBytes: 2 * 1024 * 1024, connectTimeoutMs: 2_000, checkTimeoutMs: 5_000, urlTimeoutMs: 10_000, idleTimeoutMs: 2_000, dbTimeoutMs: 10_000, ...limits },
  };
}

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectorCheckError);
    return (err as Error).message;
  }
  throw new Error('accepted');
}

const spec = (path: string, extra: object = {}) => urlConnector.specOf({ type: 'url', name: 'n', url: `${base}${path}`, ...extra });

describe('the URL connector', () => {
  it('checks and pulls a CSV, a gzip-encoded CSV, and NDJSON served as octet-stream', async () => {
    for (const [path, format, text] of [
      ['/data.csv', 'csv', 'a,b\n1,x\n2,y\n'],
      ['/gz.csv', 'csv', 'a\n1\n2\n'],
      ['/data.bin', 'ndjson', '{"a":1}\n{"a":2}\n'],
    ] as const) {
      await urlConnector.check(spec(path), ctx());
      const accountId = newId('acct');
      const sourceId = newId('src');
      const pulled = await urlConnector.pull(spec(path), { ...ctx(), accountId, sourceId });
      expect(pulled.format).toBe(format);
      expect(await readFile(store.stagingFile(accountId, sourceId, format), 'utf8')).toBe(text);
    }
  });

  it('never follows a redirect, and says so', async () => {
    const before = hits.length;
    expect(await refusal(urlConnector.check(spec('/redirect'), ctx()))).toMatch(/answered 302, a redirect; redirects are not followed/);
    expect(hits.slice(before)).toEqual(['/redirect']);
  });

  it('refuses a redirect to a private address when private targets are not allowed (the file host standing in for a public one)', async () => {
    const guard = new OutboundGuard({ allowPrivate: false, treatAsPublic: ['127.0.0.1'] });
    expect(await refusal(urlConnector.check(spec('/redirect'), ctx(guard)))).toMatch(/redirects are not followed/);
    const strict = new OutboundGuard({ allowPrivate: false });
    expect(await refusal(urlConnector.check(spec('/data.csv'), ctx(strict)))).toMatch(/127\.0\.0\.1 is not allowed \(loopback\)/);
  });

  it('refuses wrong content types, HTTP errors, empty, binary, unparsable and oversize files', async () => {
    expect(await refusal(urlConnector.check(spec('/page'), ctx()))).toMatch(/content type text\/html; expected CSV, JSON or NDJSON/);
    expect(await refusal(urlConnector.check(spec('/missing'), ctx()))).toBe('the server answered HTTP 404');
    expect(await refusal(urlConnector.check(spec('/empty.csv'), ctx()))).toBe('the file is empty');
    expect(await refusal(urlConnector.check(spec('/binary.csv'), ctx()))).toMatch(/NUL bytes/);
    expect(await refusal(urlConnector.check(spec('/bad.json'), ctx()))).toMatch(/not valid JSON: the JSON must be an array of objects/);
    expect(await refusal(urlConnector.check(spec('/huge.csv'), ctx()))).toBe('the file is 10 MiB, larger than the limit of 2 MiB');
  });

  it('stops a pull that outgrows the size limit, and one whose server goes quiet', async () => {
    const accountId = newId('acct');
    const sourceId = newId('src');
    expect(await refusal(urlConnector.pull(spec('/stream.csv'), { ...ctx(), accountId, sourceId }))).toBe('the data is larger than the limit of 2 MiB');
    expect(await refusal(urlConnector.pull(spec('/stall.csv'), { ...ctx(undefined, { idleTimeoutMs: 300 }), accountId, sourceId }))).toMatch(/sent nothing for/);
    expect(await refusal(urlConnector.pull(spec('/stall.csv'), { ...ctx(undefined, { urlTimeoutMs: 1_000, idleTimeoutMs: 5_000 }), accountId, sourceId }))).toMatch(
      /downloading the file took longer than 1 s/,
    );
  });

  it('pulls through the guard: the address it resolved and checked is the one dialled, and a refused one is never dialled', async () => {
    const accountId = newId('acct');
    const sourceId = newId('src');
    const before = hits.length;
    const strict = new OutboundGuard({ allowPrivate: false });
    expect(await refusal(urlConnector.pull(spec('/data.csv'), { ...ctx(strict), accountId, sourceId }))).toBe(
      'could not download the file: the address 127.0.0.1 is not allowed (loopback)',
    );
    expect(hits.length).toBe(before);
    // A name no system resolver knows, which the guard resolves (to an address it treats as public).
    const pinned = new OutboundGuard({ allowPrivate: false, treatAsPublic: ['127.0.0.1'], resolve: async () => [{ address: '127.0.0.1', family: 4 }] });
    const url = `http://files.example.test:${new URL(base).port}/data.csv`;
    const pulled = await urlConnector.pull(urlConnector.specOf({ type: 'url', name: 'n', url }), { ...ctx(pinned), accountId, sourceId });
    expect(pulled.format).toBe('csv');
    expect(await readFile(store.stagingFile(accountId, sourceId, 'csv'), 'utf8')).toBe('a,b\n1,x\n2,y\n');
  });

  it('reports a refused connection and an unknown host', async () => {
    expect(await refusal(urlConnector.check(urlConnector.specOf({ type: 'url', name: 'n', url: 'http://127.0.0.1:1/x.csv' }), ctx()))).toMatch(/connection was refused/);
    expect(await refusal(urlConnector.check(urlConnector.specOf({ type: 'url', name: 'n', url: 'http://nope.invalid/x.csv' }), ctx()))).toMatch(/not found/);
  });

  it('reports a gzip or brotli body that does not decode', async () => {
    for (const path of ['/bad-gz.csv', '/bad-br.csv']) {
      const accountId = newId('acct');
      const sourceId = newId('src');
      expect(await refusal(urlConnector.pull(spec(path), { ...ctx(), accountId, sourceId }))).toBe('the compressed response could not be decoded');
    }
  });

  it('reports https:// to a server that does not speak TLS as a TLS error (a 400, not a 500)', async () => {
    const url = base.replace('http://', 'https://') + '/data.csv';
    expect(await refusal(urlConnector.check(urlConnector.specOf({ type: 'url', name: 'n', url }), ctx()))).toBe(
      'could not download the file: TLS error (ERR_SSL_WRONG_VERSION_NUMBER)',
    );
  });
});

describe('URL helpers', () => {
  it('shows a URL without its query string', () => {
    expect(redactUrl('https://files.example.com/a/b.csv?token=s3cret&x=1')).toBe('https://files.example.com/a/b.csv?[redacted]');
    expect(redactUrl('https://files.example.com:8443/b.csv')).toBe('https://files.example.com:8443/b.csv');
  });

  it('takes the format from the content type, the request, the extension, then the bytes', () => {
    const s = (url: string, format?: 'csv' | 'json' | 'ndjson') => ({ url, ...(format ? { format } : {}) });
    expect(formatFromHeaders(s('http://h/x'), 200, { 'content-type': 'text/csv; charset=utf-8' }, 100)).toBe('csv');
    expect(formatFromHeaders(s('http://h/x'), 200, { 'content-type': 'application/x-ndjson' }, 100)).toBe('ndjson');
    expect(formatFromHeaders(s('http://h/x', 'ndjson'), 200, { 'content-type': 'application/json' }, 100)).toBe('ndjson');
    expect(formatFromHeaders(s('http://h/data.jsonl'), 200, { 'content-type': 'text/plain' }, 100)).toBe('ndjson');
    expect(formatFromHeaders(s('http://h/download'), 200, {}, 100)).toBeNull();
    expect(formatFromBytes(Buffer.from('\uFEFF  [{"a":1}]'))).toBe('json');
    expect(formatFromBytes(Buffer.from('{"a":1}\n'))).toBe('ndjson');
    expect(formatFromBytes(Buffer.from('a,b\n'))).toBe('csv');
    expect(() => formatFromHeaders(s('http://h/x', 'json'), 200, { 'content-type': 'text/csv' }, 100)).toThrow(/CSV, not json/);
  });
});
