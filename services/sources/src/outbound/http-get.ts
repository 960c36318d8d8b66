import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { bareHost, type OutboundGuard } from '@dap/netguard';
import { PullTimeoutError } from '../connectors/remote-errors.ts';

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
  /** Total deadline and shutdown: aborting it destroys the request. */
  signal: AbortSignal;
}

export interface HttpGetResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body, decoded from gzip/deflate/br when the server compressed it. */
  body: Readable;
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

function decoderFor(encoding: string | undefined): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | null {
  const e = (encoding ?? '').trim().toLowerCase();
  if (e === '' || e === 'identity') return null;
  if (e === 'gzip' || e === 'x-gzip') return zlib.createGunzip();
  if (e === 'deflate') return zlib.createInflate();
  if (e === 'br') return zlib.createBrotliDecompress();
  throw new UnsupportedEncodingError(e);
}

/**
 * One GET through the SSRF guard: IP literals are checked before dialling and names inside the socket's
 * `lookup` (connect time), or the request goes to an address the guard pinned (the Host header and the TLS
 * name stay the URL's). Redirects are returned to the caller, never followed; there is no connection reuse,
 * since a sync makes one request.
 */
export function httpGet(target: string, opts: HttpGetOptions): Promise<HttpGetResponse> {
  const url = new URL(target);
  const host = bareHost(url.hostname);
  let dial: { hostname: string; lookup?: OutboundGuard['lookup']; family?: 4 | 6; headers?: Record<string, string> };
  if ('guard' in opts.dial) {
    opts.dial.guard.checkLiteral(host);
    dial = { hostname: host, lookup: opts.dial.guard.lookup };
  } else {
    dial = { hostname: opts.dial.pinned.address, family: opts.dial.pinned.family, headers: { host: url.host } };
  }
  opts.signal.throwIfAborted();
  const isHttps = url.protocol === 'https:';
  return new Promise<HttpGetResponse>((resolve, reject) => {
    const req = (isHttps ? https : http).request({
      method: 'GET',
      hostname: dial.hostname,
      ...(dial.family ? { family: dial.family } : {}),
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      headers: {
        accept: 'text/csv, application/x-ndjson, application/json;q=0.9, text/plain;q=0.5, */*;q=0.1',
        'accept-encoding': 'gzip, deflate, br',
        'user-agent': USER_AGENT,
        ...dial.headers,
        ...opts.headers,
      },
      agent: false,
      ...(dial.lookup ? { lookup: dial.lookup } : {}),
      ...(isHttps && !isIP(host) ? { servername: host } : {}),
    });
    const connectTimer = setTimeout(
      () => req.destroy(new PullTimeoutError(`the server did not answer within ${Math.round(opts.connectTimeoutMs / 1000)} s`)),
      opts.connectTimeoutMs,
    );
    let streaming: { res: IncomingMessage; body: Readable } | null = null;
    const onAbort = () => {
      const reason = opts.signal.reason instanceof Error ? opts.signal.reason : new Error('aborted');
      if (streaming) {
        streaming.body.destroy(reason);
        streaming.res.destroy(reason);
      } else {
        req.destroy(reason);
      }
    };
    opts.signal.addEventListener('abort', onAbort, { once: true });
    const cleanup = () => {
      clearTimeout(connectTimer);
      opts.signal.removeEventListener('abort', onAbort);
    };
    req.on('error', (err) => {
      cleanup();
      reject(err);
    });
    req.on('response', (res: IncomingMessage) => {
      clearTimeout(connectTimer);
      res.socket.setTimeout(opts.idleTimeoutMs, () =>
        res.destroy(new PullTimeoutError(`the server sent nothing for ${Math.round(opts.idleTimeoutMs / 1000)} s`)),
      );
      let body: Readable = res;
      try {
        const decoder = decoderFor(res.headers['content-encoding']);
        if (decoder) {
          res.on('error', (err) => decoder.destroy(err));
          body = res.pipe(decoder);
        }
      } catch (err) {
        cleanup();
        res.destroy();
        return reject(err);
      }
      // The abort listener stays until the body is done, so a total deadline also cuts a slow download.
      streaming = { res, body };
      body.once('close', cleanup);
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        body,
        destroy: () => {
          res.destroy();
          body.destroy();
        },
      });
    });
    req.end();
  });
}
