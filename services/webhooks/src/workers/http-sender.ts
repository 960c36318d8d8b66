import { Agent, type Dispatcher } from 'undici';
import { guardedConnector, type OutboundGuard } from '@dap/netguard';
import { parseRetryAfter, PUSHBACK_STATUSES } from '../domain/retry-schedule.ts';
import { MAX_HEADER_VALUE_CHARS, MAX_RECORDED_BODY_BYTES, MAX_RECORDED_HEADERS, type ResponseRecord } from '../domain/response-record.ts';

export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  /** The attempt was cut short by shutdown, not by the endpoint: it does not count. */
  aborted: boolean;
  /** A 429 or 503 answer's `Retry-After`, in ms from the answer (unbounded), else null. */
  retryAfterMs: number | null;
  /** The headers sent (content-length included); null when the URL could not be parsed and nothing was sent. */
  requestHeaders: Record<string, string> | null;
  /** What the receiver answered, capped (see ResponseRecord); null when no answer came. */
  response: ResponseRecord | null;
}

export interface HttpSenderOptions {
  timeoutMs: number;
  /** Checks every address dialled (platform endpoints, private ranges): the service's one guard. */
  guard: OutboundGuard;
  userAgent: string;
}

const MAX_RESPONSE_BYTES = 64 * 1024;

class AttemptTimeout extends Error {
  readonly code = 'ERR_ATTEMPT_TIMEOUT';
}

function describe(err: unknown, timeoutMs: number): string {
  const e = err as { code?: string; message?: string; cause?: unknown };
  switch (e?.code) {
    case 'ERR_ATTEMPT_TIMEOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return `timed out after ${timeoutMs} ms`;
    case 'ERR_DISALLOWED_TARGET':
      return e.message ?? 'the target address is not allowed';
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'connection reset';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    case 'UND_ERR_HEADERS_OVERFLOW':
      return 'response headers too large';
  }
  if ((err as Error)?.name === 'HTTPParserError') return 'invalid HTTP response';
  if (e?.code?.startsWith('ERR_TLS') || e?.code?.includes('CERT')) return `TLS error: ${e.code}`;
  if (err instanceof AggregateError && err.errors.length) return describe(err.errors[0], timeoutMs);
  return e?.code ?? e?.message ?? 'request failed';
}

/**
 * One POST per attempt with undici, over keep-alive connections, each one opened by the SSRF guard's
 * connector (the address dialled is the address checked; see libs/netguard). Redirects are never followed;
 * the whole attempt, connect included, has one deadline; at most 64 KiB of an answer is read. undici checks
 * an idle pooled connection before reusing it, so a connection the receiver closed while idle is replaced
 * rather than failing the attempt.
 */
export class HttpSender {
  private readonly opts: HttpSenderOptions;
  private readonly agent: Agent;

  constructor(opts: HttpSenderOptions) {
    this.opts = opts;
    this.agent = new Agent({
      connect: guardedConnector({ guard: opts.guard }, { timeoutMs: opts.timeoutMs }),
      // The attempt's own deadline covers these; undici's must not cut it shorter or run past it.
      headersTimeout: 0,
      bodyTimeout: 0,
      keepAliveTimeout: 4_000,
      maxResponseSize: -1,
    });
  }

  async send(target: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<AttemptResult> {
    const started = performance.now();
    const payload = Buffer.from(body, 'utf8');
    const sent = { ...headers, 'content-length': String(payload.length) };
    const done = (
      r: Pick<AttemptResult, 'ok' | 'statusCode' | 'error'>,
      extra: { aborted?: boolean; retryAfterMs?: number | null; response?: ResponseRecord | null; requestHeaders?: Record<string, string> | null } = {},
    ): AttemptResult => ({
      ...r,
      retryAfterMs: extra.retryAfterMs ?? null,
      latencyMs: Math.round((performance.now() - started) * 100) / 100,
      aborted: extra.aborted ?? false,
      requestHeaders: extra.requestHeaders === undefined ? sent : extra.requestHeaders,
      response: extra.response ?? null,
    });
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return done({ ok: false, statusCode: null, error: 'invalid URL' }, { requestHeaders: null });
    }
    try {
      const { status, retryAfter, response } = await this.post(url, sent, payload, this.opts.timeoutMs, signal);
      if (status >= 200 && status < 300) return done({ ok: true, statusCode: status, error: null }, { response });
      const error = status >= 300 && status < 400 ? `redirect (${status}) not followed` : `HTTP ${status}`;
      const retryAfterMs = PUSHBACK_STATUSES.includes(status) ? parseRetryAfter(retryAfter, Date.now()) : null;
      return done({ ok: false, statusCode: status, error }, { retryAfterMs, response });
    } catch (err) {
      if (signal?.aborted) return done({ ok: false, statusCode: null, error: 'aborted by shutdown' }, { aborted: true });
      return done({ ok: false, statusCode: null, error: describe(err, this.opts.timeoutMs) });
    }
  }

  /** Answers the status (and any Retry-After); rejects on a network error, the deadline or the signal. */
  private post(url: URL, headers: Record<string, string>, payload: Buffer, timeoutMs: number, signal?: AbortSignal): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      const attempt = new Attempt(resolve, reject, signal);
      attempt.arm(timeoutMs);
      if (attempt.settled) return;
      try {
        this.agent.dispatch(
          {
            origin: url.origin,
            path: `${url.pathname}${url.search}`,
            method: 'POST',
            headers,
            body: payload,
          },
          attempt,
        );
      } catch (err) {
        attempt.onResponseError(null, err as Error); // an origin or header undici refuses
      }
    });
  }

  close(): void {
    this.agent.destroy().catch(() => undefined);
  }
}

interface Answer {
  status: number;
  retryAfter: string | null;
  response: ResponseRecord;
}

/** The answer's headers as the log keeps them (see ResponseRecord). */
function recordHeaders(headers: Record<string, string | string[] | undefined>): Pick<ResponseRecord, 'headers' | 'headersTruncated'> {
  const all: [string, string][] = [];
  for (const [name, value] of Object.entries(headers)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) all.push([name.toLowerCase(), v]);
  }
  let truncated = all.length > MAX_RECORDED_HEADERS;
  const kept = all.slice(0, MAX_RECORDED_HEADERS).map(([n, v]): [string, string] => {
    if (n.length <= MAX_HEADER_VALUE_CHARS && v.length <= MAX_HEADER_VALUE_CHARS) return [n, v];
    truncated = true;
    return [n.slice(0, MAX_HEADER_VALUE_CHARS), v.slice(0, MAX_HEADER_VALUE_CHARS)];
  });
  return { headers: kept, headersTruncated: truncated };
}

/**
 * The handler of one POST. The attempt settles at its deadline or at the signal even while undici is still
 * connecting (the request is dropped as soon as undici starts it); the answer is drained up to
 * MAX_RESPONSE_BYTES so the connection can be reused, and cut off past that.
 */
class Attempt implements Dispatcher.DispatchHandler {
  settled = false;
  private status = 0;
  private retryAfter: string | null = null;
  private headers: Pick<ResponseRecord, 'headers' | 'headersTruncated'> = { headers: [], headersTruncated: false };
  /** The start of the body, kept for the log (see ResponseRecord). */
  private readonly kept: Buffer[] = [];
  private size = 0;
  private timer: NodeJS.Timeout | undefined;
  private controller: Dispatcher.DispatchController | null = null;
  private readonly resolve: (answer: Answer) => void;
  private readonly reject: (err: unknown) => void;
  private readonly signal: AbortSignal | undefined;
  private readonly onAbort = () => this.fail(new Error('aborted'));

  constructor(resolve: (answer: Answer) => void, reject: (err: unknown) => void, signal?: AbortSignal) {
    this.resolve = resolve;
    this.reject = reject;
    this.signal = signal;
  }

  arm(timeoutMs: number): void {
    if (this.signal?.aborted) return this.fail(new Error('aborted'));
    this.signal?.addEventListener('abort', this.onAbort, { once: true });
    this.timer = setTimeout(() => this.fail(new AttemptTimeout('attempt timed out')), timeoutMs);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.settled) controller.abort(new Error('the attempt is over'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, status: number, headers: Record<string, string | string[] | undefined>): void {
    if (status < 200) return;
    this.status = status;
    const ra = headers['retry-after'];
    this.retryAfter = (Array.isArray(ra) ? ra[0] : ra) ?? null;
    this.headers = recordHeaders(headers);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const room = MAX_RECORDED_BODY_BYTES + 1 - Math.min(this.size, MAX_RECORDED_BODY_BYTES + 1);
    if (room > 0) this.kept.push(chunk.subarray(0, room));
    this.size += chunk.length;
    if (this.size > MAX_RESPONSE_BYTES) {
      const answer = this.answer();
      this.finish();
      this.resolve(answer);
      controller.abort(new Error('the response is larger than the attempt reads'));
    }
  }

  onResponseEnd(): void {
    if (this.settled) return;
    this.finish();
    this.resolve(this.answer());
  }

  private answer(): Answer {
    // One byte past the cap is kept to tell a body of exactly the cap from a longer one.
    const start = Buffer.concat(this.kept);
    const bodyTruncated = start.length > MAX_RECORDED_BODY_BYTES;
    // A streaming decode leaves out a character cut in half at the cap instead of showing U+FFFD.
    const body = new TextDecoder('utf-8').decode(start.subarray(0, MAX_RECORDED_BODY_BYTES), { stream: bodyTruncated });
    return { status: this.status, retryAfter: this.retryAfter, response: { ...this.headers, body, bodyTruncated } };
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, err: Error): void {
    this.fail(err);
  }

  private fail(err: Error): void {
    if (this.settled) return;
    this.finish();
    this.controller?.abort(err);
    this.reject(err);
  }

  private finish(): void {
    this.settled = true;
    clearTimeout(this.timer);
    this.signal?.removeEventListener('abort', this.onAbort);
  }
}
