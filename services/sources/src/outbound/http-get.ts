import { once } from 'node:events';
import { validateHeaderName, validateHeaderValue, type IncomingHttpHeaders } from 'node:http';
import net, { isIP } from 'node:net';
import tls from 'node:tls';
import zlib from 'node:zlib';
import { HTTPParser } from 'http-parser-js';
import { bareHost, type OutboundGuard } from '@dap/netguard';
import { HttpProtocolError, PullTimeoutError } from '../connectors/remote-errors.ts';

/**
 * How the host is dialled: through the guard's `lookup` (every address checked at connect time), or at an
 * address the guard already resolved and checked (`OutboundGuard.pin`), which is then the one dialled.
 */
export type Dial = { guard: OutboundGuard } | { pinned: { address: string; family: 4 | 6 } };

export interface HttpGetOptions {
  dial: Dial;
  headers?: Record<string, string>;
  /** Until the response headers arrive (DNS, TCP, TLS and the server's first answer). */
  connectTimeoutMs: number;
  /** The longest silence allowed while the body streams. */
  idleTimeoutMs: number;
  /** Total deadline and shutdown: aborting it destroys the connection. */
  signal: AbortSignal;
}

/**
 * Takes the body as it arrives: the decoded bytes of one socket read, in order. The buffers are only valid
 * until the sink returns, or until the promise it returns settles: the socket's read buffer is reused, and
 * reading waits for the sink. Returning 'stop' ends the download early (see `readBody`).
 */
export type BodySink = (chunks: Buffer<ArrayBuffer>[]) => void | 'stop' | Promise<void>;

export interface HttpGetResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /**
   * Streams the body, decoded from gzip/deflate/br when the server compressed it, to `sink`; once per
   * response. Resolves `complete: true` when the whole body arrived, `false` when the sink said 'stop'
   * (the connection is closed then). Rejects on a network error, a timeout, the signal, a response that
   * breaks HTTP/1.1's framing, or the sink's own error.
   */
  readBody(sink: BodySink): Promise<{ complete: boolean }>;
  /** Stops reading and closes the connection. */
  destroy(): void;
}

export class UnsupportedEncodingError extends Error {
  constructor(encoding: string) {
    super(`the server used an unsupported content encoding (${encoding.slice(0, 40)})`);
    this.name = 'UnsupportedEncodingError';
  }
}

const USER_AGENT = 'dap-sources/1 (+https://docs.dap.dev/sources)';
const ACCEPT = 'text/csv, application/x-ndjson, application/json;q=0.9, text/plain;q=0.5, */*;q=0.1';

/**
 * One socket read's worth of body. Node's streams read 64 KiB at a time into a new buffer each; reading
 * 1 MiB into one reused buffer took a 123 MB download on loopback from ~150 ms and ~180 ms of CPU to ~50 ms
 * (fewer read calls, no garbage per read). It is allocated once per download.
 */
export const READ_BUFFER_BYTES = 1024 * 1024;
/** Status line and headers together, like Node's own limit for a response. */
export const MAX_HEADER_BYTES = 64 * 1024;

function decoderFor(encoding: string | undefined): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | null {
  const e = (encoding ?? '').trim().toLowerCase();
  if (e === '' || e === 'identity') return null;
  if (e === 'gzip' || e === 'x-gzip') return zlib.createGunzip();
  if (e === 'deflate') return zlib.createInflate();
  if (e === 'br') return zlib.createBrotliDecompress();
  throw new UnsupportedEncodingError(e);
}

/** Response headers as Node gives them: names in lower case, repeated ones joined (set-cookie as a list). */
function headerObject(raw: string[]): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = raw[i + 1]!;
    const prev = out[name];
    if (name === 'set-cookie') out['set-cookie'] = [...(prev as string[] | undefined ?? []), value];
    else out[name] = prev === undefined ? value : `${String(prev)}, ${value}`;
  }
  return out;
}

/** The framing this client accepts: what would make it read the body wrongly is refused instead. */
function checkFraming(headers: IncomingHttpHeaders): void {
  const te = headers['transfer-encoding'];
  if (te !== undefined && te.trim().toLowerCase() !== 'chunked') throw new HttpProtocolError(`the server used an unsupported transfer encoding (${te.slice(0, 40)})`);
  const cl = headers['content-length'];
  if (cl !== undefined && te === undefined && !/^\d+$/.test(cl.trim())) throw new HttpProtocolError('the server sent an invalid Content-Length');
}

function requestHead(url: URL, hostHeader: string, extra: Record<string, string>): string {
  const lines = [`GET ${url.pathname}${url.search} HTTP/1.1`, `Host: ${hostHeader}`, `Accept: ${ACCEPT}`, 'Accept-Encoding: gzip, deflate, br', `User-Agent: ${USER_AGENT}`];
  for (const [name, value] of Object.entries(extra)) {
    validateHeaderName(name);
    validateHeaderValue(name, value);
    lines.push(`${name}: ${value}`);
  }
  lines.push('Connection: close', '', '');
  return lines.join('\r\n');
}

/**
 * One GET through the SSRF guard: IP literals are checked before dialling and names inside the socket's
 * `lookup` (connect time), or the request goes to an address the guard pinned (the Host header and the TLS
 * name stay the URL's). Redirects are returned to the caller, never followed; there is no connection reuse,
 * since a sync makes one request.
 *
 * The socket reads into one reused buffer (READ_BUFFER_BYTES) and http-parser-js, a pure-JS HTTP/1.1 parser
 * that hands the body over as views of that buffer, frames the response; Node's own client copies each
 * read into a fresh 64 KiB buffer, which was most of a large download's cost. Framing the parser would read
 * leniently is refused (`checkFraming`); bytes after the end of the response are ignored, as curl does.
 */
export function httpGet(target: string, opts: HttpGetOptions): Promise<HttpGetResponse> {
  const url = new URL(target);
  const host = bareHost(url.hostname);
  const isHttps = url.protocol === 'https:';
  const port = Number(url.port || (isHttps ? 443 : 80));
  let connect: net.NetConnectOpts & tls.ConnectionOptions;
  if ('guard' in opts.dial) {
    opts.dial.guard.checkLiteral(host);
    connect = { host, port, lookup: opts.dial.guard.lookup };
  } else {
    connect = { host: opts.dial.pinned.address, port, family: opts.dial.pinned.family };
  }
  const head = requestHead(url, url.host, opts.headers ?? {});
  opts.signal.throwIfAborted();
  return new Promise<HttpGetResponse>((resolve, reject) => new Exchange(connect, isHttps ? host : null, head, opts, resolve, reject));
}

type Phase = 'head' | 'body' | 'done' | 'failed';
const MESSAGE_END = Symbol('the end of the response');

/** One request and its response, from connect to the last body byte; see httpGet. */
class Exchange {
  private readonly socket: net.Socket;
  private readonly parser = new HTTPParser(HTTPParser.RESPONSE);
  private readonly opts: HttpGetOptions;
  private readonly resolveHead: (res: HttpGetResponse) => void;
  private readonly rejectHead: (err: unknown) => void;
  private readonly connectTimer: NodeJS.Timeout;
  private phase: Phase = 'head';
  /** Body bytes parsed from the current read and not yet given to the sink (views of the read buffer). */
  private pending: Buffer<ArrayBuffer>[] = [];
  private complete = false;
  /** Bytes read before the response's headers were complete. */
  private headBytes = 0;
  private sink: BodySink | null = null;
  private delivering = false;
  private settleBody: { resolve: (v: { complete: boolean }) => void; reject: (err: unknown) => void } | null = null;
  /** Set once the exchange is over: how it ended. */
  private outcome: { complete: boolean } | null = null;
  private error: Error | null = null;
  private readonly onAbort = () => this.fail(this.opts.signal.reason instanceof Error ? this.opts.signal.reason : new Error('aborted'));

  constructor(
    connect: net.NetConnectOpts & tls.ConnectionOptions,
    tlsName: string | null,
    head: string,
    opts: HttpGetOptions,
    resolve: (res: HttpGetResponse) => void,
    reject: (err: unknown) => void,
  ) {
    this.opts = opts;
    this.resolveHead = resolve;
    this.rejectHead = reject;
    // The parser adds a whole read to its header count when a response ends inside it, so its own limit would
    // trip on the last read of every large body; the limit is kept here instead (onRead).
    this.parser.maxHeaderSize = Number.MAX_SAFE_INTEGER;
    this.parser[HTTPParser.kOnHeadersComplete] = (info) => this.onHeaders(info.statusCode, info.headers);
    // The chunk is the read buffer given to execute (a Buffer over an ArrayBuffer); the parser's types say only Buffer.
    this.parser[HTTPParser.kOnBody] = (chunk, offset, length) => void this.pending.push((chunk as Buffer<ArrayBuffer>).subarray(offset, offset + length));
    // Thrown out of the parser at the response's end, so that it stops right there (see onRead).
    this.parser[HTTPParser.kOnMessageComplete] = () => {
      if (this.phase !== 'body') return; // an interim response's end
      this.complete = true;
      throw MESSAGE_END;
    };
    const onread = { buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES), callback: (n: number, buf: Uint8Array) => this.onRead(buf as Buffer, n) };
    if (tlsName !== null) {
      // TLS sockets take `onread` too (Node 15.1, nodejs/node#35753); @types/node lists it only for net.
      const options: tls.ConnectionOptions & Pick<net.SocketConstructorOpts, 'onread'> = {
        ...connect,
        ...(isIP(tlsName) ? {} : { servername: tlsName }),
        ALPNProtocols: ['http/1.1'],
        onread,
      };
      this.socket = tls.connect(options);
    } else {
      this.socket = net.connect({ ...connect, onread });
    }
    this.connectTimer = setTimeout(
      () => this.fail(new PullTimeoutError(`the server did not answer within ${Math.round(opts.connectTimeoutMs / 1000)} s`)),
      opts.connectTimeoutMs,
    );
    opts.signal.addEventListener('abort', this.onAbort, { once: true });
    this.socket.once(tlsName !== null ? 'secureConnect' : 'connect', () => this.socket.write(head));
    this.socket.on('error', (err) => this.fail(err));
    this.socket.on('end', () => this.onEnd());
    this.socket.on('close', () => this.fail(new HttpProtocolError('the connection closed before the whole response arrived')));
  }

  private onHeaders(status: number, raw: string[]): void {
    // Headers that arrived in one read are only counted here (onRead counts the reads that end inside them).
    let size = 0;
    for (const h of raw) size += h.length + 2;
    if (size > MAX_HEADER_BYTES) throw new HttpProtocolError(`the server's response headers are larger than ${MAX_HEADER_BYTES / 1024} KiB`);
    // An interim answer (100 Continue, 103 Early Hints) comes before the real one.
    if (status >= 100 && status < 200 && status !== 101) return;
    const headers = headerObject(raw);
    checkFraming(headers);
    const decoder = decoderFor(headers['content-encoding']);
    clearTimeout(this.connectTimer);
    this.socket.setTimeout(this.opts.idleTimeoutMs, () =>
      this.fail(new PullTimeoutError(`the server sent nothing for ${Math.round(this.opts.idleTimeoutMs / 1000)} s`)),
    );
    this.phase = 'body';
    this.resolveHead({
      status,
      headers,
      readBody: (sink) => (decoder ? this.readDecoded(decoder, sink) : this.readRaw(sink)),
      destroy: () => this.fail(new Error('the response was closed')),
    });
  }

  /** Called with each read; returning false pauses the socket until the sink has taken the body. */
  private onRead(buf: Buffer, n: number): boolean {
    if (this.phase === 'done' || this.phase === 'failed') return false;
    let parsed: number | Error;
    try {
      parsed = this.parser.execute(buf, 0, n);
    } catch (err) {
      // Past the end, like curl, nothing more is read: the connection closes.
      parsed = err === MESSAGE_END ? n : (err as Error);
    }
    if (parsed instanceof Error) {
      this.fail(parsed instanceof HttpProtocolError || parsed instanceof UnsupportedEncodingError ? parsed : new HttpProtocolError(`the server's response is not valid HTTP (${parsed.message.slice(0, 60)})`));
      return false;
    }
    if (this.phase === 'head' && (this.headBytes += n) > MAX_HEADER_BYTES) {
      this.fail(new HttpProtocolError(`the server's response headers are larger than ${MAX_HEADER_BYTES / 1024} KiB`));
      return false;
    }
    return this.deliver();
  }

  private onEnd(): void {
    if (this.phase === 'done' || this.phase === 'failed') return;
    // A body without Content-Length or chunks ends with the connection.
    let finished: void | Error = undefined;
    try {
      finished = this.parser.finish();
    } catch (err) {
      if (err !== MESSAGE_END) throw err;
    }
    if (finished instanceof Error || !this.complete) return this.fail(new HttpProtocolError('the connection closed before the whole response arrived'));
    this.deliver();
  }

  /**
   * Gives the pending body to the sink. A sink that answers at once keeps the socket reading; one that
   * returns a promise pauses it (the pending views stay valid) until the promise settles.
   */
  private deliver(): boolean {
    if (this.delivering) return false;
    while (this.pending.length && this.sink) {
      const chunks = this.pending;
      this.pending = [];
      let answer: ReturnType<BodySink>;
      try {
        answer = this.sink(chunks);
      } catch (err) {
        this.fail(err as Error);
        return false;
      }
      if (answer === 'stop') {
        this.finish(false);
        return false;
      }
      if (answer) {
        this.delivering = true;
        answer.then(
          () => {
            this.delivering = false;
            if (this.phase !== 'body') return;
            if (this.deliver()) this.socket.resume();
          },
          (err: unknown) => {
            this.delivering = false;
            this.fail(err as Error);
          },
        );
        return false;
      }
    }
    if (this.pending.length) return false; // nobody reads the body yet: wait for readBody
    if (this.complete) {
      this.finish(true);
      return false;
    }
    return true;
  }

  private readRaw(sink: BodySink): Promise<{ complete: boolean }> {
    if (this.sink) return Promise.reject(new Error('the body was already read'));
    if (this.error) return Promise.reject(this.error);
    this.sink = sink;
    if (this.outcome) return Promise.resolve(this.outcome); // an empty body, over before it was asked for
    return new Promise((resolve, reject) => {
      this.settleBody = { resolve, reject };
      if (this.deliver()) this.socket.resume();
    });
  }

  /** The compressed bytes go through zlib (copied: zlib keeps them past the read), its output to the sink. */
  private async readDecoded(decoder: zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress, sink: BodySink): Promise<{ complete: boolean }> {
    let stopped = false;
    const feeding = this.readRaw(async (chunks) => {
      for (const c of chunks) if (!decoder.write(Buffer.from(c))) await once(decoder, 'drain');
    }).then(
      () => void decoder.end(),
      (err: unknown) => void decoder.destroy(err as Error),
    );
    try {
      // zlib's output buffers are its own (over ArrayBuffers), so they outlive the read buffer.
      for await (const out of decoder as AsyncIterable<Buffer<ArrayBuffer>>) {
        const answer = sink([out]);
        if (answer === 'stop') {
          stopped = true;
          break;
        }
        if (answer) await answer;
      }
    } catch (err) {
      this.fail(err as Error);
      throw this.error ?? err;
    } finally {
      if (stopped) this.fail(new Error('the response was closed'));
      decoder.destroy();
    }
    await feeding;
    if (this.error && !stopped) throw this.error;
    return { complete: !stopped };
  }

  private finish(complete: boolean): void {
    this.phase = 'done';
    this.outcome = { complete };
    this.cleanup();
    this.socket.destroy();
    this.settleBody?.resolve({ complete });
  }

  private fail(err: Error): void {
    if (this.phase === 'done' || this.phase === 'failed') return;
    const wasHead = this.phase === 'head';
    this.phase = 'failed';
    this.error = err;
    this.cleanup();
    this.socket.destroy();
    if (wasHead) this.rejectHead(err);
    this.settleBody?.reject(err);
  }

  private cleanup(): void {
    clearTimeout(this.connectTimer);
    this.opts.signal.removeEventListener('abort', this.onAbort);
  }
}
