import { isIP, type OnReadOpts, type Socket } from 'node:net';
import { buildConnector } from 'undici';
import { bareHost, type OutboundGuard } from './guard.ts';

/**
 * How a host is dialled: through the guard (every address checked at connect time), or at an address the
 * guard already resolved and checked (`OutboundGuard.pin`, e.g. in another thread), which is then the one dialled.
 */
export type Dial = { guard: OutboundGuard } | { pinned: { address: string; family: 4 | 6 } };

export interface GuardedConnectorOptions {
  /** TCP connect and TLS handshake limit (undici's default is 10 s). */
  timeoutMs?: number;
  /**
   * Read the socket into slabs of this many bytes (see `slabReads`) instead of a fresh 64 KiB buffer per
   * read: for connections that take in large bodies. Unset: Node's own reads.
   */
  readSlabBytes?: number;
  /**
   * With `readSlabBytes`: whether the connection's reader still holds a view of this slab's bytes. Given, a
   * full slab is followed by an earlier one that is free again (see `slabReads`): a few slabs for the whole
   * connection, read into over and over while they are in the CPU's cache, and no garbage to collect.
   */
  slabInUse?: (slab: ArrayBufferLike) => boolean;
}

/** The least room a slab keeps for one read; a slab with less left is replaced by a new one. */
export const MIN_READ_BYTES = 64 * 1024;

/** Full slabs kept for reuse (see `slabReads`): with the one being read into, three per connection at most. */
export const SPARE_SLABS = 2;

/**
 * Slabs that closed connections left free, for the next connection in this thread (a module per thread).
 * Without them each connection's slabs live on until a full collection, as they outlast many young ones:
 * every download added its few MiB of external memory and, every few downloads, a full collection.
 */
const freeSlabs = new Map<number, Buffer<ArrayBuffer>[]>();

function takeSlab(bytes: number): Buffer<ArrayBuffer> {
  return freeSlabs.get(bytes)?.pop() ?? Buffer.allocUnsafeSlow(bytes);
}

function giveSlab(slab: Buffer<ArrayBuffer>): void {
  const free = freeSlabs.get(slab.length) ?? [];
  freeSlabs.set(slab.length, free);
  if (free.length <= SPARE_SLABS && !free.includes(slab)) free.push(slab);
}

/** How many free slabs of this size the thread keeps (for tests). */
export const freeSlabCount = (bytes: number): number => freeSlabs.get(bytes)?.length ?? 0;

/**
 * A socket's `onread` that reads into large slabs, one after another at rising offsets, and hands each read
 * to the socket's stream as a view of its slab (no copy). A large body then arrives in reads as large as the
 * kernel has ready (up to a slab) and costs one allocation per slab, not one per 64 KiB (or per 16 KiB TLS
 * record); a slab is freed once every view of it is. One per socket: each slab region is read into once.
 *
 * With `inUse`, a full slab is kept as a spare, and the next read goes into a spare that nothing can still
 * see: all of its bytes have left the socket's buffer (which is always the latest part of what was read:
 * readers take the stream in order and put back only what they did not take), and `inUse` says the reader
 * kept no view of it. Only when no spare is free is a slab taken from the thread's free ones, or made. When
 * the socket closes, its slabs that `inUse` says are not held are left free for the next connection.
 */
export function slabReads(slabBytes: number, inUse?: (slab: ArrayBufferLike) => boolean): OnReadOpts {
  checkSlabBytes(slabBytes);
  const take = () => (inUse ? takeSlab(slabBytes) : Buffer.allocUnsafeSlow(slabBytes));
  let slab: Buffer<ArrayBuffer> | null = null;
  let used = 0;
  /** Bytes read on this socket, and the full slabs with that count when their last read ended. */
  let total = 0;
  const spares: { slab: Buffer<ArrayBuffer>; end: number }[] = [];
  const release = () => {
    for (const s of [...spares.map((x) => x.slab), ...(slab ? [slab] : [])]) if (!inUse!(s.buffer)) giveSlab(s);
    spares.length = 0;
    slab = null;
  };
  return {
    // Called for the first read and after each one: where the next read goes.
    buffer: () => (slab ??= take()).subarray(used),
    // `this` is the socket (Node calls the callback on it); pushing as Node's own reads do keeps its backpressure.
    callback(this: Socket, n: number, buf: Uint8Array): boolean {
      if (inUse && total === 0) this.once('close', release);
      used += n;
      total += n;
      const more = this.push(Buffer.from(buf.buffer, buf.byteOffset, n));
      if (slabBytes - used >= MIN_READ_BYTES) return more;
      used = 0;
      if (!inUse) {
        slab = take();
        return more;
      }
      const taken = total - this.readableLength;
      const free = spares.findIndex((s) => s.end <= taken && !inUse(s.slab.buffer));
      const next = free >= 0 ? spares.splice(free, 1)[0]!.slab : take();
      spares.push({ slab: slab!, end: total });
      if (spares.length > SPARE_SLABS) spares.shift();
      slab = next;
      return more;
    },
  };
}

function checkSlabBytes(slabBytes: number): void {
  if (!Number.isInteger(slabBytes) || slabBytes < 2 * MIN_READ_BYTES) throw new RangeError(`readSlabBytes must be an integer of at least ${2 * MIN_READ_BYTES}`);
}

/**
 * undici's `connect` for outbound HTTP(S) through the SSRF guard (docs/architecture.md, "Outbound
 * connections"). With a guard, an IP literal is checked before dialling, and a name is resolved by the guard's
 * `lookup`, which refuses it when any of its addresses is not allowed and hands the socket only checked ones:
 * the address dialled is the address checked, on every connection, so a DNS answer that changed since the
 * target was accepted (rebinding) is caught. A pinned address is dialled as it is. TLS verifies the
 * certificate against the URL's host name either way. HTTP/1.1 only (no ALPN h2).
 */
export function guardedConnector(dial: Dial, opts: GuardedConnectorOptions = {}): buildConnector.connector {
  const base = { allowH2: false, ...(opts.timeoutMs ? { timeout: opts.timeoutMs } : {}) };
  const { readSlabBytes: slabBytes, slabInUse } = opts;
  if (slabBytes !== undefined) checkSlabBytes(slabBytes); // refuses a bad size now, not at the first connection
  /** undici's connector with `extra`; with slab reads, a new one per connection, as each socket needs its own `onread`. */
  const connector = (extra: Partial<buildConnector.BuildOptions>): buildConnector.connector => {
    if (slabBytes === undefined) return buildConnector({ ...base, ...extra });
    return (options, callback) => buildConnector({ ...base, ...extra, onread: slabReads(slabBytes, slabInUse) })(options, callback);
  };
  if ('pinned' in dial) {
    const connect = connector({});
    return (options, callback) => {
      const host = bareHost(options.hostname);
      const servername = options.servername || (isIP(host) ? undefined : host);
      connect({ ...options, hostname: dial.pinned.address, ...(servername ? { servername } : {}) }, callback);
    };
  }
  // The guard's checks depend on the port (the platform's own endpoints are host:port): one connector per port.
  const byPort = new Map<number, buildConnector.connector>();
  return (options, callback) => {
    const host = bareHost(options.hostname);
    const port = Number(options.port) || (options.protocol === 'https:' ? 443 : 80);
    let connect = byPort.get(port);
    if (!connect) byPort.set(port, (connect = connector({ lookup: dial.guard.lookupFor(port) })));
    const open = connect;
    dial.guard.checkLiteral(host, port).then(
      () => open({ ...options, hostname: host }, callback),
      (err: unknown) => callback(err as Error, null),
    );
  };
}
