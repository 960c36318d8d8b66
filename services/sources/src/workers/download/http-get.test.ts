import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { HttpProtocolError, PullTimeoutError } from '../../domain/connectors/remote-errors.ts';
import { SPARE_SLABS } from '@dap/netguard';
import { httpGet, UnsupportedEncodingError, type BodySink, type HttpGetOptions, type HttpGetResponse } from './http-get.ts';

/**
 * The client against servers that write exact bytes: the framings HTTP/1.1 allows, the ones this client
 * refuses, compressed bodies, a sink that stops or is slow, and TLS with the name checked on a pinned address.
 */

/** A test-only key and self-signed certificate for files.example.test (valid until 2126). */
const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg1BolF17fP2qFPUDS
7aztpwvY8y6COykd1TUV4+CkLcyhRANCAAQXtLvdGJYqK9FaF/G0KL+W0KnSn7Tw
26a+gdNCmzG+H5ApkUEfGXf53GL2CS5v984C1hZZOnSmF8EzYKKjnzyi
-----END PRIVATE KEY-----
`;
const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBsDCCAVagAwIBAgIUKsQ4D33mQZZM8UJZFp6D8/o9r58wCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwSZmlsZXMuZXhhbXBsZS50ZXN0MCAXDTI2MTEyMTE3MDAwMloY
DzIxMjYxMDI4MTcwMDAyWjAdMRswGQYDVQQDDBJmaWxlcy5leGFtcGxlLnRlc3Qw
WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQXtLvdGJYqK9FaF/G0KL+W0KnSn7Tw
26a+gdNCmzG+H5ApkUEfGXf53GL2CS5v984C1hZZOnSmF8EzYKKjnzyio3IwcDAd
BgNVHQ4EFgQUdwaqAhePDrEX9GfBzwupWPrNCfcwHwYDVR0jBBgwFoAUdwaqAheP
DrEX9GfBzwupWPrNCfcwHQYDVR0RBBYwFIISZmlsZXMuZXhhbXBsZS50ZXN0MA8G
A1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAKnklkFCkwaMy7kdpQ1y
7SnrIOjsT/piqv1LF5ghCLSyAiAtzEPjqEc59PlO2zdzQMHQKNqkOVvY2BTaHM58
voaS6Q==
-----END CERTIFICATE-----
`;

/** A size well past one socket read, so that bodies span many. */
const READ_BUFFER_BYTES = 1024 * 1024;

/** What a test server does with a connection once the request head has arrived. */
type Responder = (socket: net.Socket, request: string) => void;
let responder: Responder;
const requests: string[] = [];
let closed = 0;

function onConnection(socket: net.Socket): void {
  let head = '';
  socket.on('error', () => undefined);
  socket.on('close', () => closed++);
  socket.on('data', (d) => {
    if (head.endsWith('\r\n\r\n')) return;
    head += d.toString('latin1');
    if (!head.endsWith('\r\n\r\n')) return;
    requests.push(head);
    responder(socket, head);
  });
}

const plain = net.createServer(onConnection);
const secure = tls.createServer({ key: TEST_KEY, cert: TEST_CERT }, onConnection);
let plainPort = 0;
let securePort = 0;
const defaultCAs = tls.getCACertificates('default');

beforeAll(async () => {
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => secure.listen(0, '127.0.0.1', r));
  plainPort = (plain.address() as AddressInfo).port;
  securePort = (secure.address() as AddressInfo).port;
});
afterAll(async () => {
  tls.setDefaultCACertificates(defaultCAs);
  await new Promise((r) => plain.close(r));
  await new Promise((r) => secure.close(r));
});

const opts = (extra: Partial<HttpGetOptions> = {}): HttpGetOptions => ({
  dial: { pinned: { address: '127.0.0.1', family: 4 } },
  connectTimeoutMs: 2_000,
  idleTimeoutMs: 2_000,
  signal: new AbortController().signal,
  ...extra,
});
const url = (path = '/f.csv') => `http://files.example.test:${plainPort}${path}`;

/** Runs `fn` against the plain and the TLS server, trusting the test certificate meanwhile. */
async function overPlainAndTls(fn: (target: string) => Promise<void>): Promise<void> {
  tls.setDefaultCACertificates([...defaultCAs, TEST_CERT]);
  try {
    for (const target of [url(), `https://files.example.test:${securePort}/f.csv`]) await fn(target);
  } finally {
    tls.setDefaultCACertificates(defaultCAs);
  }
}

/** The whole body as the sink received it (copied, as the chunks are views of the read buffer). */
async function body(res: HttpGetResponse, sink?: (chunks: Buffer[]) => Promise<void>): Promise<{ text: string; complete: boolean }> {
  const parts: Buffer[] = [];
  const take: BodySink = (chunks) => {
    for (const c of chunks) parts.push(Buffer.from(c));
    return sink?.(chunks);
  };
  const { complete } = await res.readBody(take);
  return { text: Buffer.concat(parts).toString('latin1'), complete };
}

async function failure(p: Promise<unknown>): Promise<Error> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  // Not toBeInstanceOf(Error): zlib's and TLS's errors come from outside the test's realm.
  expect(err).toEqual(expect.objectContaining({ message: expect.any(String) }));
  return err as Error;
}

/** A body of `n` bytes that is not one repeated byte (so a misplaced slice shows). */
const pattern = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => 97 + ((i * 7 + (i >> 10)) % 26)));

/** A responder that answers `data` with its length, after `headers`. */
const serving =
  (data: Buffer, headers: Record<string, string> = {}) =>
  (s: net.Socket): void => {
    const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
    s.write(`HTTP/1.1 200 OK\r\n${head.join('')}Content-Length: ${data.length}\r\n\r\n`);
    s.end(data);
  };

describe('httpGet', () => {
  it('sends one GET with the URL’s host to the pinned address, with the caller’s headers', async () => {
    responder = (s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    const res = await httpGet(url('/a/b.csv?x=1&y=%20'), opts({ headers: { Authorization: 'Bearer t0ken' } }));
    expect(res.status).toBe(200);
    expect(await body(res)).toEqual({ text: 'ok', complete: true });
    const head = requests.at(-1)!;
    expect(head.startsWith('GET /a/b.csv?x=1&y=%20 HTTP/1.1\r\n')).toBe(true);
    expect(head).toMatch(new RegExp(`\r\nHost: files\\.example\\.test:${plainPort}\r\n`, 'i'));
    expect(head).toContain('\r\nAuthorization: Bearer t0ken\r\n');
    expect(head).toMatch(/\r\nConnection: close\r\n/i);
    expect(() => httpGet(url(), opts({ headers: { 'X-A': 'v\r\nInjected: 1' } }))).toThrow(/Invalid character/);
  });

  it('reads a Content-Length body larger than its read buffer, byte for byte', async () => {
    const data = pattern(3 * READ_BUFFER_BYTES + 12345);
    responder = serving(data, { 'Content-Type': 'text/csv' });
    const res = await httpGet(url(), opts());
    expect(res.headers['content-type']).toBe('text/csv');
    const got = await body(res);
    expect(got.complete).toBe(true);
    expect(Buffer.from(got.text, 'latin1').equals(data)).toBe(true);
  });

  it('reads a large body into three slabs taken in turn, not a buffer per socket read, in plain HTTP and TLS', async () => {
    const data = pattern(8 * READ_BUFFER_BYTES);
    responder = serving(data);
    await overPlainAndTls(async (target) => {
      const parts: Buffer[] = [];
      const slabs = new Set<ArrayBufferLike>();
      const res = await httpGet(target, opts());
      const { complete } = await res.readBody((chunks) => {
        for (const c of chunks) {
          slabs.add(c.buffer);
          parts.push(Buffer.from(c));
        }
      });
      expect(complete).toBe(true);
      expect(Buffer.concat(parts).equals(data)).toBe(true);
      // Node's own reads give every 64 KiB (every 16 KiB TLS record) a buffer: 128 (512) here; a new slab
      // for each full one made 8 or 9.
      expect(slabs.size).toBeGreaterThanOrEqual(2);
      expect(slabs.size).toBeLessThanOrEqual(1 + SPARE_SLABS);
    });
  });

  it('keeps every byte when a sink that holds its chunks for a while alternates with one that does not, in plain HTTP and TLS', async () => {
    const data = pattern(6 * READ_BUFFER_BYTES + 4321);
    responder = serving(data);
    await overPlainAndTls(async (target) => {
      const parts: Buffer[] = [];
      const slabs = new Set<ArrayBufferLike>();
      let calls = 0;
      const res = await httpGet(target, opts());
      const { complete } = await res.readBody((chunks) => {
        for (const c of chunks) slabs.add(c.buffer);
        // Every third batch is read only after a pause, while the socket goes on filling slabs.
        if (++calls % 3 !== 0) {
          for (const c of chunks) parts.push(Buffer.from(c));
          return;
        }
        return new Promise<void>((r) =>
          setTimeout(() => {
            for (const c of chunks) parts.push(Buffer.from(c));
            r();
          }, 5),
        );
      });
      expect(complete).toBe(true);
      expect(Buffer.concat(parts).equals(data)).toBe(true);
      expect(calls).toBeGreaterThan(3);
    });
  });

  it('reads a chunked body whose chunks and framing are split across writes, and one that ends with the connection', async () => {
    responder = (s) => {
      s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel');
      setTimeout(() => s.write('lo\r\n'), 20);
      setTimeout(() => s.write('6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n'), 40);
    };
    expect(await body(await httpGet(url(), opts()))).toEqual({ text: 'hello world', complete: true });
    responder = (s) => {
      s.write('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil ');
      setTimeout(() => s.end('the end'), 20);
    };
    expect(await body(await httpGet(url(), opts()))).toEqual({ text: 'until the end', complete: true });
  });

  it('gives an empty body that was over before it was asked for', async () => {
    responder = (s) => s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n');
    const res = await httpGet(url(), opts());
    await new Promise((r) => setTimeout(r, 20));
    expect(await body(res)).toEqual({ text: '', complete: true });
  });

  it('skips an interim response, and refuses a 100 Continue it did not ask for', async () => {
    responder = (s) => s.end('HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc');
    const res = await httpGet(url(), opts());
    expect(res.status).toBe(200);
    expect((await body(res)).text).toBe('abc');
    responder = (s) => s.end('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc');
    expect((await failure(httpGet(url(), opts()))).message).toBe("the server's response is not valid HTTP: a 100 Continue that was not asked for");
  });

  it('fails a body cut short, whether counted or chunked', async () => {
    responder = (s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this');
    let err = await failure(httpGet(url(), opts()).then(body));
    expect(err).toBeInstanceOf(HttpProtocolError);
    expect(err.message).toBe('the connection closed before the whole response arrived');
    responder = (s) => s.end('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n');
    err = await failure(httpGet(url(), opts()).then(body));
    expect(err.message).toBe('the connection closed before the whole response arrived');
  });

  it('refuses framing it would read wrongly, a response that is not HTTP, and oversized headers', async () => {
    responder = (s) => s.end('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n');
    expect((await failure(httpGet(url(), opts()))).message).toBe('the server used an unsupported transfer encoding (gzip, chunked)');
    responder = (s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 12abc\r\n\r\n');
    expect((await failure(httpGet(url(), opts()))).message).toBe('the server sent an invalid Content-Length');
    responder = (s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd');
    expect((await failure(httpGet(url(), opts()))).message).toBe('the server sent an invalid Content-Length');
    responder = (s) => s.end('HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n');
    expect((await failure(httpGet(url(), opts()))).message).toBe("the server's response is not valid HTTP: unexpected whitespace after header value");
    responder = (s) => s.end('SSH-2.0-OpenSSH_9.6\r\n\r\n');
    expect((await failure(httpGet(url(), opts()))).message).toMatch(/^the server's response is not valid HTTP: expected HTTP\//);
    // 72 KiB of names and values (what the limit counts), 120 KiB on the wire.
    responder = (s) => s.end(`HTTP/1.1 200 OK\r\n${'X-Pad: y\r\n'.repeat(12_000)}\r\n`);
    expect((await failure(httpGet(url(), opts()))).message).toBe("the server's response headers are larger than 64 KiB");
    responder = (s) => s.end('HTTP/1.1 200 OK\r\nContent-Encoding: zip\r\n\r\n');
    expect(await failure(httpGet(url(), opts()))).toBeInstanceOf(UnsupportedEncodingError);
  });

  it('decodes gzip, deflate and br, and fails a corrupt stream', async () => {
    const text = 'a,b\n'.repeat(100_000);
    for (const [encoding, encoded] of [
      ['gzip', gzipSync(text)],
      ['deflate', deflateSync(text)],
      ['br', brotliCompressSync(text)],
    ] as const) {
      responder = serving(encoded, { 'Content-Encoding': encoding });
      expect(await body(await httpGet(url(), opts()))).toEqual({ text, complete: true });
    }
    const corrupt = gzipSync(text);
    corrupt.fill(0, 20, 40);
    responder = serving(corrupt, { 'Content-Encoding': 'gzip' });
    expect(await failure(httpGet(url(), opts()).then(body))).toMatchObject({ code: 'Z_DATA_ERROR' });
  });

  it('stops when the sink has enough, and closes the connection', async () => {
    const data = pattern(8 * READ_BUFFER_BYTES);
    responder = serving(data);
    const closedBefore = closed;
    const res = await httpGet(url(), opts());
    let seen = 0;
    const { complete } = await res.readBody((chunks) => {
      for (const c of chunks) seen += c.length;
      return seen >= 100_000 ? 'stop' : undefined;
    });
    expect(complete).toBe(false);
    expect(seen).toBeLessThan(data.length);
    for (let i = 0; i < 50 && closed === closedBefore; i++) await new Promise((r) => setTimeout(r, 10));
    expect(closed).toBe(closedBefore + 1);
  });

  it('waits for a slow sink without losing or reordering bytes, and passes on its error', async () => {
    const data = pattern(2 * READ_BUFFER_BYTES + 777);
    responder = serving(data);
    // The sink reads its chunks only after a pause of its own: they must still hold their bytes.
    const parts: Buffer[] = [];
    const slow = await httpGet(url(), opts());
    const { complete } = await slow.readBody(async (chunks) => {
      await new Promise((r) => setTimeout(r, 5));
      for (const c of chunks) parts.push(Buffer.from(c));
    });
    expect(complete).toBe(true);
    expect(Buffer.concat(parts).equals(data)).toBe(true);
    const res = await httpGet(url(), opts());
    await expect(res.readBody(async () => Promise.reject(new Error('disk full')))).rejects.toThrow('disk full');
  });

  it('stops at the signal and at the time limits', async () => {
    responder = (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc');
    const ac = new AbortController();
    const res = await httpGet(url(), opts({ signal: ac.signal }));
    setTimeout(() => ac.abort(new Error('shutting down')), 20);
    expect((await failure(body(res))).message).toBe('shutting down');
    expect((await failure(httpGet(url(), opts({ idleTimeoutMs: 100 })).then(body))).message).toBe('the server sent nothing for 0 s');
    responder = () => undefined;
    expect((await failure(httpGet(url(), opts({ connectTimeoutMs: 100 })))).message).toBe('the server did not answer within 0 s');
  });

  it('refuses chunk sizes that are not hex digits, instead of looping, truncating or growing without end', async () => {
    for (const [size, message] of [
      ['-5', /^the server's response is not valid HTTP: invalid character in chunk size$/],
      ['zz', /^the server's response is not valid HTTP: invalid character in chunk size$/],
      ['', /^the server's response is not valid HTTP: invalid character in chunk size$/],
      ['0x5', /^the server's response is not valid HTTP: invalid character in chunk size$/],
    ] as const) {
      responder = (s) => s.end(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${size}\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n`);
      const err = await failure(httpGet(url(), opts()).then(body));
      expect(err).toBeInstanceOf(HttpProtocolError);
      expect(err.message).toMatch(message);
    }
    // A chunk with more data than its size says.
    responder = (s) => s.end('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n');
    expect((await failure(httpGet(url(), opts()).then(body))).message).toBe("the server's response is not valid HTTP: expected LF after chunk data");
  });

  it('ends a chunk line or trailers that never end: no body arrives, so the idle limit stops it', async () => {
    const endless = (prefix: string) => (s: net.Socket) => {
      s.write(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${prefix}`);
      const more = () => {
        if (s.destroyed || !s.writable) return;
        if (s.write('x'.repeat(64 * 1024))) setImmediate(more);
        else s.once('drain', more);
      };
      s.on('error', () => undefined);
      more();
    };
    // llhttp keeps none of a chunk extension, so memory stays flat however long it runs.
    responder = endless('5;ext=');
    const started = Date.now();
    const err = await failure(httpGet(url(), opts({ idleTimeoutMs: 300 })).then(body));
    expect(err).toBeInstanceOf(PullTimeoutError);
    expect(err.message).toBe('the server sent nothing for 0 s');
    expect(Date.now() - started).toBeLessThan(1_500);
    responder = endless('0\r\nX-Trailer: ');
    expect((await failure(httpGet(url(), opts({ idleTimeoutMs: 300 })).then(body))).message).toBe("the server's response headers are larger than 64 KiB");
  });

  it('never lets an interim response carry a body into the real one', async () => {
    responder = (s) => s.end('HTTP/1.1 103 Early Hints\r\nContent-Length: 4\r\n\r\nEVILHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc');
    expect((await failure(httpGet(url(), opts()))).message).toMatch(/^the server's response is not valid HTTP: expected HTTP\//);
  });

  it('refuses caller headers the client sets itself, and sends values as latin1', async () => {
    for (const name of ['Host', 'content-length', 'Transfer-Encoding', 'Connection', 'Proxy-Authorization']) {
      expect(() => httpGet(url(), opts({ headers: { [name]: 'x' } }))).toThrow(/is set by the client/);
    }
    responder = (s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
    await body(await httpGet(url(), opts({ headers: { 'X-Name': 'café' } })));
    expect(requests.at(-1)).toContain('\r\nX-Name: café\r\n'); // the server decoded the head as latin1
    expect(() => httpGet('ftp://files.example.test/x.csv', opts())).toThrow(/only http and https/);
  });

  it('runs no idle time while its own sink is slow, and stops decoding at the signal after the last byte', async () => {
    // Small, so that it takes a read or two: each waits 300 ms for the sink, past the 100-ms idle limit.
    const data = pattern(64 * 1024);
    responder = serving(data);
    const slow = await body(await httpGet(url(), opts({ idleTimeoutMs: 100 })), () => new Promise((r) => setTimeout(r, 300)));
    expect(slow.complete).toBe(true);
    // A small gzip body that decodes to 40 MB: all of it has arrived when the signal aborts.
    const bomb = gzipSync(Buffer.alloc(40 * 1024 * 1024));
    responder = serving(bomb, { 'Content-Encoding': 'gzip' });
    const ac = new AbortController();
    const res = await httpGet(url(), opts({ signal: ac.signal }));
    let decoded = 0;
    const err = await failure(
      res.readBody(async (chunks) => {
        for (const c of chunks) decoded += c.length;
        if (decoded > 1024 * 1024) ac.abort(new Error('deadline'));
        await new Promise((r) => setImmediate(r));
      }),
    );
    expect(err.message).toBe('deadline');
    expect(decoded).toBeLessThan(4 * 1024 * 1024);
  });

  it('keeps a header named like an Object property as a plain value', async () => {
    responder = (s) => s.end('HTTP/1.1 200 OK\r\nConstructor: c\r\nContent-Length: 0\r\n\r\n');
    const res = await httpGet(url(), opts());
    expect(res.headers.constructor).toBe('c');
    await body(res);
  });

  it('speaks TLS to a pinned address, checking the certificate against the URL’s host name', async () => {
    responder = (s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret');
    const https = (host: string) => `https://${host}:${securePort}/f.csv`;
    // Not trusted yet: a self-signed certificate is refused.
    expect(await failure(httpGet(https('files.example.test'), opts()))).toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    tls.setDefaultCACertificates([...defaultCAs, TEST_CERT]);
    expect(await body(await httpGet(https('files.example.test'), opts()))).toEqual({ text: 'secret', complete: true });
    expect(requests.at(-1)).toMatch(new RegExp(`\r\nHost: files\\.example\\.test:${securePort}\r\n`, 'i'));
    // A large compressed body through an async sink: TLS keeps handing over decrypted records while reading
    // is held, and none may land in the read buffer the sink is still reading.
    const text = pattern(6 * READ_BUFFER_BYTES).toString('latin1');
    for (const [encoding, encoded] of [
      ['identity', Buffer.from(text, 'latin1')],
      ['gzip', gzipSync(text)],
      ['br', brotliCompressSync(text)],
    ] as const) {
      responder = serving(encoded, { 'Content-Encoding': encoding });
      // The sink reads its chunks only after a pause of its own.
      const parts: Buffer[] = [];
      const res = await httpGet(https('files.example.test'), opts());
      const { complete } = await res.readBody(async (chunks) => {
        await new Promise((r) => setTimeout(r, 1));
        for (const c of chunks) parts.push(Buffer.from(c));
      });
      expect(complete).toBe(true);
      expect(Buffer.concat(parts).toString('latin1') === text).toBe(true);
    }
    // The same address under another name: the certificate does not cover it.
    expect(await failure(httpGet(https('other.example.test'), opts()))).toMatchObject({ code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
  });
});
