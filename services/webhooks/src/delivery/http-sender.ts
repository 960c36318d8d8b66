import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { hostOf, portOf, type OutboundGuard } from '@dap/netguard';

export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  /** The attempt was cut short by shutdown, not by the endpoint: it does not count. */
  aborted: boolean;
}

export interface HttpSenderOptions {
  timeoutMs: number;
  /** The SSRF guard: private ranges the operator allows, never the platform's own endpoints. */
  guard: OutboundGuard;
  userAgent: string;
}

const MAX_RESPONSE_BYTES = 64 * 1024;

class AttemptTimeout extends Error {
  readonly code = 'ERR_ATTEMPT_TIMEOUT';
}

function describe(err: unknown, timeoutMs: number): string {
  const e = err as { code?: string; message?: string };
  switch (e?.code) {
    case 'ERR_ATTEMPT_TIMEOUT':
      return `timed out after ${timeoutMs} ms`;
    case 'ERR_DISALLOWED_TARGET':
      return e.message ?? 'the target address is not allowed';
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
  }
  if (e?.code?.startsWith('ERR_TLS') || e?.code?.includes('CERT')) return `TLS error: ${e.code}`;
  return e?.code ?? e?.message ?? 'request failed';
}

/**
 * One POST per attempt, over keep-alive agents, with the SSRF guard applied where the socket is opened:
 * IP literals are checked here (net skips `lookup` for them), names in the guarded lookup. Redirects are
 * never followed; the whole attempt, connect included, has one deadline.
 */
export class HttpSender {
  private readonly opts: HttpSenderOptions;
  private readonly httpAgent = new http.Agent({ keepAlive: true, timeout: 5_000, scheduling: 'lifo' });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, timeout: 5_000, scheduling: 'lifo' });

  constructor(opts: HttpSenderOptions) {
    this.opts = opts;
  }

  async send(target: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<AttemptResult> {
    const started = performance.now();
    const done = (r: Omit<AttemptResult, 'latencyMs' | 'aborted'>, aborted = false): AttemptResult => ({
      ...r,
      latencyMs: Math.round((performance.now() - started) * 100) / 100,
      aborted,
    });
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return done({ ok: false, statusCode: null, error: 'invalid URL' });
    }
    const host = hostOf(url);
    try {
      await this.opts.guard.checkLiteral(host, portOf(url));
    } catch (err) {
      return done({ ok: false, statusCode: null, error: describe(err, this.opts.timeoutMs) });
    }
    const deadline = started + this.opts.timeoutMs;
    for (let tries = 0; ; tries++) {
      try {
        const status = await this.post(url, host, headers, body, deadline, signal);
        if (status >= 200 && status < 300) return done({ ok: true, statusCode: status, error: null });
        const error = status >= 300 && status < 400 ? `redirect (${status}) not followed` : `HTTP ${status}`;
        return done({ ok: false, statusCode: status, error });
      } catch (err) {
        if (signal?.aborted) return done({ ok: false, statusCode: null, error: 'aborted by shutdown' }, true);
        // A pooled socket the server closed while idle fails at once; one fresh try is what Node recommends.
        const e = err as { reusedSocket?: boolean; code?: string };
        if (e.reusedSocket && tries === 0 && (e.code === 'ECONNRESET' || e.code === 'EPIPE') && performance.now() < deadline) continue;
        return done({ ok: false, statusCode: null, error: describe(err, this.opts.timeoutMs) });
      }
    }
  }

  private post(url: URL, host: string, headers: Record<string, string>, body: string, deadline: number, signal?: AbortSignal): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const isHttps = url.protocol === 'https:';
      const payload = Buffer.from(body, 'utf8');
      // eslint-disable-next-line prefer-const -- the closures below capture it before it is assigned
      let req: ClientRequest;
      const fail = (err: Error) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        reject(Object.assign(err, { reusedSocket: req.reusedSocket }));
      };
      const timer = setTimeout(() => req.destroy(new AttemptTimeout('attempt timed out')), Math.max(1, deadline - performance.now()));
      const onAbort = () => req.destroy(new Error('aborted'));
      const options = {
        method: 'POST',
        hostname: host,
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        headers: { ...headers, 'content-length': String(payload.length) },
        agent: isHttps ? this.httpsAgent : this.httpAgent,
        lookup: this.opts.guard.lookupFor(portOf(url)),
        ...(isHttps && !isIP(host) ? { servername: host } : {}),
      };
      req = (isHttps ? https : http).request(options, (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        let size = 0;
        // Drain the answer so the socket can be reused, but never hold more than a small cap.
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_RESPONSE_BYTES) {
            clearTimeout(timer);
            signal?.removeEventListener('abort', onAbort);
            res.destroy();
            resolve(status);
          }
        });
        res.on('end', () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(status);
        });
        res.on('error', fail);
      });
      req.on('error', fail);
      if (signal?.aborted) return void req.destroy(new Error('aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      req.end(payload);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
