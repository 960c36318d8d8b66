import { EventEmitter } from 'node:events';
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo, OnReadOpts, Socket } from 'node:net';
import { Client } from 'undici';
import { tableResolver } from './dns-table.ts';
import { freeSlabCount, guardedConnector, MIN_READ_BYTES, slabReads, SPARE_SLABS, type Dial } from './connector.ts';
import { DisallowedTargetError, OutboundGuard } from './guard.ts';

/** undici through the guard's connector, against a loopback server standing in for hosts of every kind. */

const seen: IncomingMessage[] = [];
const server = http.createServer((req, res) => {
  seen.push(req);
  res.end('ok');
});
let port = 0;

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise((r) => server.close(r)));

async function get(origin: string, dial: Dial): Promise<{ status: number; host: string | undefined }> {
  const client = new Client(origin, { connect: guardedConnector(dial, { timeoutMs: 2_000 }) });
  try {
    const res = await client.request({ path: '/x', method: 'GET' });
    await res.body.text();
    return { status: res.statusCode, host: seen.at(-1)?.headers.host };
  } finally {
    await client.destroy();
  }
}

describe('guardedConnector', () => {
  const dns = tableResolver({ 'public.test': ['127.0.0.1'], 'rebound.test': ['127.0.0.1'], 'mixed.test': ['127.0.0.1', '10.0.0.7'] });
  // 127.0.0.1 plays a public host here; everything else keeps its real class.
  const guard = new OutboundGuard({ allowPrivate: false, resolve: dns, treatAsPublic: ['127.0.0.1'] });
  const strict = new OutboundGuard({ allowPrivate: false, resolve: dns });

  it('dials a name through the guard: an allowed answer connects, with the URL’s host in the request', async () => {
    expect(await get(`http://public.test:${port}`, { guard })).toEqual({ status: 200, host: `public.test:${port}` });
  });

  it('refuses a name that resolves to a private or loopback address, at connect time, before any byte is sent', async () => {
    const before = seen.length;
    await expect(get(`http://rebound.test:${port}`, { guard: strict })).rejects.toThrow(/the host rebound\.test resolves to 127\.0\.0\.1, which is not allowed \(loopback\)/);
    // Any one bad address refuses the name, even next to an allowed one.
    await expect(get(`http://mixed.test:${port}`, { guard })).rejects.toBeInstanceOf(DisallowedTargetError);
    expect(seen.length).toBe(before);
  });

  it('refuses an IP literal that is not allowed, and link-local even where private targets are allowed', async () => {
    const before = seen.length;
    await expect(get(`http://127.0.0.1:${port}`, { guard: strict })).rejects.toThrow(/127\.0\.0\.1 is not allowed \(loopback\)/);
    const open = new OutboundGuard({ allowPrivate: true, resolve: dns });
    await expect(get('http://169.254.169.254:80', { guard: open })).rejects.toThrow(/link-local/);
    expect(seen.length).toBe(before);
    // The positive control: the same literal where loopback is allowed.
    expect((await get(`http://127.0.0.1:${port}`, { guard: open })).status).toBe(200);
  });

  it('dials a pinned address and keeps the URL’s host', async () => {
    expect(await get(`http://files.example.test:${port}`, { pinned: { address: '127.0.0.1', family: 4 } })).toEqual({ status: 200, host: `files.example.test:${port}` });
  });

  it('refuses a read slab too small to keep room for a read', () => {
    expect(() => guardedConnector({ guard }, { readSlabBytes: MIN_READ_BYTES })).toThrow(RangeError);
    expect(() => guardedConnector({ guard }, { readSlabBytes: 1024 * 1024 + 0.5 })).toThrow(RangeError);
    expect(guardedConnector({ guard }, { readSlabBytes: 2 * MIN_READ_BYTES })).toEqual(expect.any(Function));
  });

  it('reads into slabs through the guard too, byte for byte', async () => {
    const origin = `http://public.test:${port}`;
    const client = new Client(origin, { connect: guardedConnector({ guard }, { timeoutMs: 2_000, readSlabBytes: 1024 * 1024 }) });
    try {
      const res = await client.request({ path: '/x', method: 'GET' });
      expect(await res.body.text()).toBe('ok');
    } finally {
      await client.destroy();
    }
  });
});

describe('slabReads', () => {
  const SLAB = 2 * MIN_READ_BYTES;
  /** A stand-in for the socket: what it was pushed, and how many bytes its reader has not taken yet. */
  const socket = () =>
    Object.assign(new EventEmitter(), {
      readableLength: 0,
      push(chunk: Buffer) {
        this.readableLength += chunk.length;
        return true;
      },
    });
  /** Where the next read goes (the slab's buffer). */
  const where = (reads: OnReadOpts) => (reads.buffer as () => Uint8Array)().buffer;
  /** One read of `n` bytes into where `reads` says, as Node makes it; then where the next one goes. */
  function read(reads: OnReadOpts, s: ReturnType<typeof socket>, n: number): ArrayBufferLike {
    const into = (reads.buffer as () => Uint8Array)();
    expect(into.length).toBeGreaterThanOrEqual(n);
    (reads.callback as (this: Socket, n: number, buf: Uint8Array) => boolean).call(s as unknown as Socket, n, into);
    return where(reads);
  }

  it('without a reader to ask, makes a new slab for each full one', () => {
    const reads = slabReads(SLAB);
    const s = socket();
    const used = new Set([where(reads), ...Array.from({ length: 4 }, () => read(reads, s, SLAB))]);
    expect(used.size).toBe(5);
  });

  it('reads into a full slab again once its bytes have left the socket’s buffer and the reader holds none of them', () => {
    const held = new Set<ArrayBufferLike>();
    const reads = slabReads(SLAB, (slab) => held.has(slab));
    const s = socket();
    const a = where(reads);
    const b = read(reads, s, SLAB);
    expect(b).not.toBe(a);
    // The reader took a's bytes: b, once full, is followed by a.
    s.readableLength = 0;
    expect(read(reads, s, SLAB)).toBe(a);
    // b's bytes are still in the socket's buffer: a new slab.
    const c = read(reads, s, SLAB);
    expect([a, b]).not.toContain(c);
    // All taken, but the reader still holds a view of b: a, the other spare.
    s.readableLength = 0;
    held.add(b);
    expect(read(reads, s, SLAB)).toBe(a);
    held.clear();
    expect(read(reads, s, SLAB)).toBe(b);
    // A slab with room left takes the next read too; full, it is followed by the free spare.
    s.readableLength = 0;
    expect(read(reads, s, SLAB / 2)).toBe(b);
    expect(read(reads, s, SLAB / 2)).toBe(c);
    expect(SPARE_SLABS).toBe(2);
  });

  it('leaves a closed connection’s slabs that the reader does not hold to the next connection in the thread', () => {
    const size = 3 * MIN_READ_BYTES; // a size no other test uses
    const held = new Set<ArrayBufferLike>();
    const first = slabReads(size, (slab) => held.has(slab));
    const s = socket();
    const a = where(first);
    const b = read(first, s, size);
    s.readableLength = 0;
    const c = read(first, s, size); // a again
    expect(c).toBe(a);
    held.add(a);
    expect(freeSlabCount(size)).toBe(0);
    s.emit('close');
    // b is free, a is still held: only b is left.
    expect(freeSlabCount(size)).toBe(1);
    const next = slabReads(size, () => false);
    expect(where(next)).toBe(b);
    expect(freeSlabCount(size)).toBe(0);
    // Without a reader to ask, nothing is taken from or left to the free slabs.
    const plain = slabReads(size);
    const t = socket();
    read(plain, t, size);
    t.emit('close');
    expect(freeSlabCount(size)).toBe(0);
  });
});
