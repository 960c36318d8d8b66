import { once } from 'node:events';
import { validateHeaderName, validateHeaderValue, type IncomingHttpHeaders } from 'node:http';
import zlib from 'node:zlib';
import { Client, errors, type Dispatcher } from 'undici';
import { guardedConnector, type Dial } from '@dap/netguard';
import { HttpProtocolError, PullTimeoutError } from '../../domain/connectors/remote-errors.ts';

export type { Dial } from '@dap/netguard';

export interface HttpGetOptions {
  dial: Dial;
  headers?: Record<string, string>;
  /** Until the response headers arrive (DNS, TCP, TLS and the server's first answer). */
  connectTimeoutMs: number;
  /** The longest silence allowed while the body streams (not counting time the sink itself takes). */
  idleTimeoutMs: number;
  /** Total deadline and shutdown: aborting it destroys the connection. */
  signal: AbortSignal;
}

/**
 * Takes the body as it arrives (in batches of about SINK_BATCH_BYTES), decoded, in order. The buffers are only valid until the sink returns, or
 * until the promise it returns settles. Returning 'stop' ends the download early (see `readBody`).
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
 * The socket reads into slabs of this size (netguard's `slabReads`): a body arrives in reads as large as the
 * kernel has ready, not 64 KiB (16 KiB TLS records) each in a buffer of its own. Three slabs take turns while
 * the sink keeps up (see `Exchange.holds`).
 */
export const READ_SLAB_BYTES = 1024 * 1024;
/**
 * Body bytes gathered before the sink is called. undici hands over each socket read, which a slow sender
 * or a TLS connection keeps small; a download written read by read made many times the write calls. Half a
 * slab: when a slab is full, the batch being gathered lies in it, and the slab before it is free again.
 */
export const SINK_BATCH_BYTES = READ_SLAB_BYTES / 2;
/** Status line and headers together, like Node's own limit for a response. */
export const MAX_HEADER_BYTES = 64 * 1024;
/** Set by this client; a caller's own value would break the request or its framing. */
const RESERVED_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'keep-alive', 'expect', 'accept-encoding']);

type Decoder = zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress;

/** The decoder a content encoding needs (null: none); throws UnsupportedEncodingError for one it cannot read. */
function decoderOf(encoding: string | undefined): (() => Decoder) | null {
  const e = (encoding ?? '').trim().toLowerCase();
  if (e === '' || e === 'identity') return null;
  if (e === 'gzip' || e === 'x-gzip') return () => zlib.createGunzip();
  if (e === 'deflate') return () => zlib.createInflate();
  if (e === 'br') return () => zlib.createBrotliDecompress();
  throw new UnsupportedEncodingError(e);
}

/** The request's headers: the caller's, checked (no CR/LF, none this client sets), then this client's own. */
function requestHeaders(extra: Record<string, string>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(extra)) {
    validateHeaderName(name);
    validateHeaderValue(name, value);
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower) || lower.startsWith('proxy-')) throw new TypeError(`the header ${name} is set by the client`);
    headers[name] = value;
  }
  return { ...headers, accept: ACCEPT, 'accept-encoding': 'gzip, deflate, br', 'user-agent': USER_AGENT };
}

/** Header values as Node gives them: repeated ones joined, set-cookie as a list. */
function incomingHeaders(raw: Record<string, string | string[] | undefined>): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = Object.create(null) as IncomingHttpHeaders;
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    if (name === 'set-cookie') out['set-cookie'] = Array.isArray(value) ? value : [value];
    else out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

const seconds = (ms: number) => Math.round(ms / 1000);

/** undici's parser, socket and timeout errors, as the customer's reason (other errors pass through unchanged). */
function protocolError(err: Error, opts: HttpGetOptions, inHead: boolean): Error {
  // llhttp's own words, e.g. "Invalid character in chunk size", "Unexpected whitespace after header value".
  if (err instanceof errors.HTTPParserError) {
    const reason = /\(([^)]*)\)\s*$/.exec(err.message)?.[1] ?? err.message;
    return new HttpProtocolError(`the server's response is not valid HTTP: ${reason.charAt(0).toLowerCase()}${reason.slice(1)}`);
  }
  switch ((err as { code?: string }).code) {
    case 'UND_ERR_BODY_TIMEOUT':
      return new PullTimeoutError(`the server sent nothing for ${seconds(opts.idleTimeoutMs)} s`);
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
      return new PullTimeoutError(`the server did not answer within ${seconds(opts.connectTimeoutMs)} s`);
    case 'UND_ERR_HEADERS_OVERFLOW':
      return new HttpProtocolError(`the server's response headers are larger than ${MAX_HEADER_BYTES / 1024} KiB`);
    case 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH':
      // Before the head was through, llhttp refused the Content-Length itself (not digits, or two values).
      if (inHead) return new HttpProtocolError('the server sent an invalid Content-Length');
      return new HttpProtocolError('the connection closed before the whole response arrived');
    case 'UND_ERR_SOCKET':
      // undici refuses a 100 Continue that no request asked for (other interim responses are skipped).
      if (err.message === 'bad response') return new HttpProtocolError("the server's response is not valid HTTP: a 100 Continue that was not asked for");
      return new HttpProtocolError('the connection closed before the whole response arrived');
  }
  return err;
}

/** Framing undici would read leniently: only chunked transfer coding, and a Content-Length of digits, given once. */
function checkFraming(headers: IncomingHttpHeaders): void {
  const te = headers['transfer-encoding'];
  // Another coding (gzip, chunked) would hand over bytes still coded.
  if (te !== undefined && te.trim().toLowerCase() !== 'chunked') throw new HttpProtocolError(`the server used an unsupported transfer encoding (${te.slice(0, 40)})`);
  const cl = headers['content-length'];
  if (cl === undefined) return;
  const values = new Set(cl.split(',').map((v) => v.trim()));
  const [only] = values;
  if (values.size !== 1 || !/^\d{1,15}$/.test(only!)) throw new HttpProtocolError('the server sent an invalid Content-Length');
}

/**
 * One GET through the SSRF guard, with undici: the connection is made by the guard's connector (IP literals
 * checked before dialling, names at connect time, or the address the guard pinned, with the Host header and
 * the TLS name still the URL's). Redirects are returned to the caller, never followed; one connection per
 * call, closed after it, since a sync makes one request.
 */
export function httpGet(target: string, opts: HttpGetOptions): Promise<HttpGetResponse> {
  const url = new URL(target);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`only http and https URLs can be fetched, not ${url.protocol}`);
  const headers = requestHeaders(opts.headers ?? {});
  opts.signal.throwIfAborted();
  return new Promise<HttpGetResponse>((resolve, reject) => new Exchange(url, headers, opts, resolve, reject));
}

type Phase = 'head' | 'body' | 'done' | 'failed';

/**
 * One request and its response, from connect to the last body byte (see httpGet). Reading is paused
 * (undici stops reading the socket) whenever body chunks wait for the sink: before readBody is called, and
 * while a sink's promise is pending; undici's body timeout does not run while paused.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private readonly client: Client;
  private readonly opts: HttpGetOptions;
  private readonly resolveHead: (res: HttpGetResponse) => void;
  private readonly rejectHead: (err: unknown) => void;
  private readonly headTimer: NodeJS.Timeout;
  private controller: Dispatcher.DispatchController | null = null;
  private phase: Phase = 'head';
  /** Body chunks received and not yet given to the sink. */
  private pending: Buffer<ArrayBuffer>[] = [];
  private pendingBytes = 0;
  /** The response has ended (all of its body is in `pending` or given). */
  private ended = false;
  /** Body bytes received, and how many the Content-Length announced (null: chunked or until the close). */
  private received = 0;
  private expected: number | null = null;
  /** The sink's promise is pending. */
  private waiting = false;
  /** The chunks that sink holds until its promise settles. */
  private handed: Buffer[] = [];
  /** The body goes through zlib, which keeps the chunks it is given past the sink's return. */
  private decoding = false;
  private sink: BodySink | null = null;
  private settleBody: { resolve: (v: { complete: boolean }) => void; reject: (err: unknown) => void } | null = null;
  private error: Error | null = null;
  private readonly onAbort = () => this.fail(this.opts.signal.reason instanceof Error ? this.opts.signal.reason : new Error('aborted'));

  constructor(url: URL, headers: Record<string, string>, opts: HttpGetOptions, resolve: (res: HttpGetResponse) => void, reject: (err: unknown) => void) {
    this.opts = opts;
    this.resolveHead = resolve;
    this.rejectHead = reject;
    this.client = new Client(url.origin, {
      connect: guardedConnector(opts.dial, { timeoutMs: opts.connectTimeoutMs, readSlabBytes: READ_SLAB_BYTES, slabInUse: (slab) => this.holds(slab) }),
      // The head has one deadline of ours (connect included); the body, undici's time between reads.
      headersTimeout: 0,
      bodyTimeout: opts.idleTimeoutMs,
      maxHeaderSize: MAX_HEADER_BYTES,
      pipelining: 1,
    });
    this.headTimer = setTimeout(() => this.fail(new PullTimeoutError(`the server did not answer within ${seconds(opts.connectTimeoutMs)} s`)), opts.connectTimeoutMs);
    opts.signal.addEventListener('abort', this.onAbort, { once: true });
    this.client.dispatch({ origin: url.origin, path: `${url.pathname}${url.search}`, method: 'GET', headers, reset: true }, this);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.error) controller.abort(this.error);
  }

  onResponseStart(controller: Dispatcher.DispatchController, status: number, raw: Record<string, string | string[] | undefined>): void {
    // An interim response (100 Continue, 103 Early Hints) has no body; the real one follows.
    if (this.phase !== 'head' || status < 200) return;
    const headers = incomingHeaders(raw);
    let decoder: (() => Decoder) | null;
    try {
      checkFraming(headers);
      decoder = decoderOf(headers['content-encoding']);
    } catch (err) {
      this.fail(err as Error);
      return;
    }
    clearTimeout(this.headTimer);
    this.phase = 'body';
    if (headers['content-length'] !== undefined && headers['transfer-encoding'] === undefined) this.expected = Number(headers['content-length']);
    this.pause(); // until readBody
    this.resolveHead({
      status,
      headers,
      readBody: (sink) => (decoder ? this.readDecoded(decoder(), sink) : this.readRaw(sink)),
      destroy: () => this.fail(new Error('the response was closed')),
    });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    // undici hands over empty chunks when resumed; pausing on one would only bring the next.
    if (this.phase !== 'body' || chunk.length === 0) return;
    this.received += chunk.length;
    this.pending.push(chunk as Buffer<ArrayBuffer>);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes >= SINK_BATCH_BYTES) this.drain();
    // A pause asked for earlier takes effect as this call returns: never after the last byte (see pause()).
    if (this.expected !== null && this.received >= this.expected && controller.paused) controller.resume();
  }

  onResponseEnd(): void {
    if (this.phase !== 'body') return;
    this.ended = true;
    this.drain();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.fail(protocolError(err, this.opts, this.phase === 'head'));
  }

  /**
   * Gives the pending body to the sink: at once while it answers at once, else when its promise settles.
   * Called once SINK_BATCH_BYTES have gathered, at the end of the response, and when reading resumes.
   */
  private drain(): void {
    while (this.phase === 'body' && this.sink && !this.waiting && this.pending.length) {
      const chunks = this.pending;
      this.pending = [];
      this.pendingBytes = 0;
      let answer: ReturnType<BodySink>;
      try {
        answer = this.sink(chunks);
      } catch (err) {
        this.fail(err as Error);
        return;
      }
      if (answer === 'stop') return this.finish(false);
      if (answer) {
        this.waiting = true;
        this.handed = chunks;
        this.pause();
        answer.then(
          () => {
            this.waiting = false;
            this.handed = [];
            if (this.phase !== 'body') return;
            this.controller?.resume();
            this.drain();
          },
          (err: unknown) => {
            this.waiting = false;
            this.handed = [];
            this.fail(err as Error);
          },
        );
        return;
      }
    }
    if (this.phase === 'body' && this.sink && !this.waiting && this.ended) this.finish(true);
  }

  /**
   * Whether a body chunk given out or waiting may still be a view of `slab` (the socket reader asks before it
   * reads into a slab again). A sink's chunks are its own only until it returns or its promise settles.
   */
  private holds(slab: ArrayBufferLike): boolean {
    if (this.decoding) return true;
    for (const c of this.pending) if (c.buffer === slab) return true;
    for (const c of this.handed) if (c.buffer === slab) return true;
    return false;
  }

  /**
   * Stops undici reading the socket, unless every byte of a counted body is here already: undici, paused
   * after the last byte and before it saw the message complete, takes the server's close for a cut-off
   * response (an idle keep-alive close would do). A chunked or close-framed body is safe: its end is still
   * unread on the socket, or is the close itself.
   */
  private pause(): void {
    if (this.expected !== null && this.received >= this.expected) return;
    this.controller?.pause();
  }

  private readRaw(sink: BodySink): Promise<{ complete: boolean }> {
    if (this.sink) return Promise.reject(new Error('the body was already read'));
    if (this.error) return Promise.reject(this.error);
    this.sink = sink;
    return new Promise((resolve, reject) => {
      this.settleBody = { resolve, reject };
      this.controller?.resume();
      this.drain();
    });
  }

  /**
   * The compressed bytes go through zlib, its output to the sink. The signal is checked for each piece zlib
   * gives: the last compressed bytes may still decode to much.
   */
  private async readDecoded(decoder: Decoder, sink: BodySink): Promise<{ complete: boolean }> {
    this.decoding = true;
    let stopped = false;
    const feeding = this.readRaw(async (chunks) => {
      for (const c of chunks) if (!decoder.write(c)) await once(decoder, 'drain');
    }).then(
      () => void decoder.end(),
      (err: unknown) => void decoder.destroy(err as Error),
    );
    try {
      for await (const out of decoder as AsyncIterable<Buffer<ArrayBuffer>>) {
        this.opts.signal.throwIfAborted();
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
    this.pending = [];
    this.pendingBytes = 0;
    if (!complete) this.controller?.abort(new Error('the response was closed'));
    this.cleanup();
    this.settleBody?.resolve({ complete });
  }

  private fail(err: Error): void {
    if (this.phase === 'done' || this.phase === 'failed') return;
    const wasHead = this.phase === 'head';
    this.phase = 'failed';
    this.error = err;
    this.pending = [];
    this.pendingBytes = 0;
    this.controller?.abort(err);
    this.cleanup();
    if (wasHead) this.rejectHead(err);
    this.settleBody?.reject(err);
  }

  /** Closes the connection (this client's only one) and drops the timers and the signal's listener. */
  private cleanup(): void {
    clearTimeout(this.headTimer);
    this.opts.signal.removeEventListener('abort', this.onAbort);
    this.client.destroy().catch(() => undefined);
  }
}
