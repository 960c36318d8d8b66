import { API_OPERATIONS, IDEMPOTENCY_KEY_PATTERN, operationTakesIdempotencyKey, problemSchema, type ApiOperation, type Problem } from '@dap/contracts';
import { DapApiError, DapConnectionError, errorFor, parseRetryAfter } from './errors.ts';
import { type OperationId, type QueryParams, type RequestBody, type ResultOf, type UploadFile } from './operations.ts';
import type { paths } from './generated/openapi.d.ts';
import { backoffDelay } from '@dap/retry';
import createClient, { type Client } from 'openapi-fetch';

/** Success bodies that are bytes, not text. */
const BINARY_TYPE = /^application\/(?:vnd\.apache\.parquet|octet-stream)\b/i;

export interface DapClientOptions {
  /** The API's address, e.g. `https://api.example.com` (a trailing `/v1` is accepted). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Per-attempt timeout; default 60 s. */
  timeoutMs?: number;
  /** Retries after a 429, a 503 or a failed connection (only where repeating is safe); default 2, 0 turns retries off. */
  maxRetries?: number;
  /** A Retry-After longer than this is not waited for: the error is thrown at once. Default 60 s. */
  maxRetryDelayMs?: number;
  /** 'auto' gives every POST that takes one (all but /auth) a fresh Idempotency-Key when none is given, so its retries are safe. */
  idempotencyKeys?: 'auto' | 'manual';
  /** Parse every success body with the operation's zod schema (throws on a mismatch); default false. */
  validateResponses?: boolean;
  /** Extra headers on every request (e.g. a User-Agent suffix). */
  headers?: Record<string, string>;
  /** A fetch implementation; default the global one. */
  fetch?: typeof fetch;
  /**
   * How the client waits before a retry (Retry-After or backoff): resolves after `ms`, rejects with the
   * signal's reason once it aborts. Default a timer; tests pass one that records the wait.
   */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface RequestOptions {
  /** Overrides the client's timeoutMs for this call (uploads have none unless given). */
  timeoutMs?: number;
  /**
   * Sent as Idempotency-Key (POSTs other than /auth and uploads; 1 to 255 visible ASCII characters): the same
   * key and body within 24 h replay the first response.
   */
  idempotencyKey?: string;
  /** Sent as X-Request-Id, so your logs and ours share an id. */
  requestId?: string;
  signal?: AbortSignal;
  headers?: Record<string, string>;
  /** Overrides the client's maxRetries for this call. */
  maxRetries?: number;
}

export interface RateLimitInfo {
  limit: number;
  remaining: number;
  /** When the window frees capacity, as Unix time in seconds (X-RateLimit-Reset). */
  reset: number;
}

/** A success answer with its status and headers (Location, RateLimit, X-Request-Id, …). */
export interface ApiResponse<T> {
  data: T;
  status: number;
  headers: Headers;
  requestId: string | null;
  rateLimit: RateLimitInfo | null;
}

/**
 * What every SDK method returns: await it for the body, or call `.withResponse()` for the status and
 * headers as well. The request starts at once, whichever is used.
 */
export class ApiPromise<T> implements PromiseLike<T> {
  readonly #response: Promise<ApiResponse<T>>;

  constructor(response: Promise<ApiResponse<T>>) {
    this.#response = response;
  }

  withResponse(): Promise<ApiResponse<T>> {
    return this.#response;
  }

  then<A = T, B = never>(onFulfilled?: ((value: T) => A | PromiseLike<A>) | null, onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    return this.#response.then((r) => r.data).then(onFulfilled, onRejected);
  }

  catch<B = never>(onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<T | B> {
    return this.then(undefined, onRejected);
  }

  finally(onFinally?: (() => void) | null): Promise<T> {
    return this.then().finally(onFinally);
  }
}

export interface CallInput<K extends OperationId> {
  params?: Record<string, string>;
  query?: QueryParams<K>;
  body?: RequestBody<K>;
  /** A file sent as the raw body of an upload operation, streamed when it is a stream. */
  upload?: { file: UploadFile; contentType: string };
}

type Body = NonNullable<RequestInit['body']>;

/** A stream can be sent once: an upload from one is never retried. */
function uploadBodyOf(file: UploadFile): { body: Body; replayable: boolean } {
  if (typeof file === 'string' || file instanceof Blob || file instanceof ArrayBuffer) return { body: file, replayable: true };
  if (file instanceof Uint8Array) return { body: file as Uint8Array<ArrayBuffer>, replayable: true };
  if (file instanceof ReadableStream) return { body: file, replayable: false };
  return { body: ReadableStream.from(file), replayable: false };
}

const OPERATIONS_BY_ID = new Map<string, ApiOperation>(API_OPERATIONS.map((o) => [o.operationId, o]));
const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 8_000;

function rateLimitOf(headers: Headers): RateLimitInfo | null {
  const [limit, remaining, reset] = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'].map((h) => headers.get(h));
  if (limit === null || remaining === null || reset === null) return null;
  return { limit: Number(limit), remaining: Number(remaining), reset: Number(reset) };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A problem body, or one made from whatever an intermediary (a proxy, a load balancer) answered. The generated
 * client hands over an error body parsed as JSON when it is JSON, else as its text.
 */
function problemFrom(status: number, statusText: string, body: unknown, path: string, headers: Headers): Problem {
  const parsed = problemSchema.safeParse(body);
  if (parsed.success) return parsed.data;
  const text = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
  return {
    type: 'about:blank',
    title: statusText || `HTTP ${status}`,
    status,
    detail: text.slice(0, 500) || `the server answered ${status} without a problem body`,
    instance: path,
    code: `http_${status}`,
    requestId: headers.get('x-request-id') ?? '',
  };
}

/** How the generated client reads a success body: by the media type the contracts give the operation. */
function parseAsOf(operation: ApiOperation): 'json' | 'text' | 'arrayBuffer' {
  const media = operation.success.mediaType ?? 'application/json';
  if (BINARY_TYPE.test(media)) return 'arrayBuffer';
  return /\bjson\b/i.test(media) ? 'json' : 'text';
}

/**
 * Sends requests through the client generated from the OpenAPI document (openapi-fetch over the generated
 * `paths`), adding auth, timeouts, typed errors, retries and idempotency keys.
 */
export class Transport {
  readonly #opts: DapClientOptions;
  readonly #api: Client<paths>;

  constructor(opts: DapClientOptions) {
    if (!/^https?:\/\//.test(opts.baseUrl)) throw new TypeError('baseUrl must be an http(s) URL');
    this.#opts = opts;
    const base = opts.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
    // The fetch is looked up per request (not captured now), so a test or polyfill installed later is used.
    this.#api = createClient<paths>({ baseUrl: `${base}/v1`, fetch: (request) => (opts.fetch ?? fetch)(request) });
  }

  call<K extends OperationId>(operationId: K, input: CallInput<K> = {}, options: RequestOptions = {}): ApiPromise<ResultOf<K>> {
    return new ApiPromise(this.#send(operationId, input, options));
  }

  async #send<K extends OperationId>(operationId: K, input: CallInput<K>, options: RequestOptions): Promise<ApiResponse<ResultOf<K>>> {
    const operation = OPERATIONS_BY_ID.get(operationId);
    if (!operation) throw new TypeError(`the API has no operation ${operationId}`);
    for (const name of operation.path.matchAll(/\{(\w+)\}/g)) {
      const value = input.params?.[name[1]!];
      if (value === undefined || value === '') throw new TypeError(`${operationId} needs the path parameter ${name[1]}`);
    }
    const method = operation.method.toUpperCase();
    const headers: Record<string, string> = {
      accept: 'application/json, text/csv;q=0.9, application/vnd.apache.parquet;q=0.9, application/problem+json',
      ...this.#opts.headers,
      ...options.headers,
    };
    if (this.#opts.apiKey) headers.authorization = `Bearer ${this.#opts.apiKey}`;
    if (options.requestId) headers['x-request-id'] = options.requestId;
    let idempotent = method !== 'POST';
    if (options.idempotencyKey !== undefined && (!operationTakesIdempotencyKey(operation) || input.upload))
      throw new TypeError(`${operationId} takes no Idempotency-Key (only POST operations outside /auth, and not uploads, do)`);
    if (options.idempotencyKey !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(options.idempotencyKey))
      throw new TypeError('an Idempotency-Key is 1 to 255 visible ASCII characters');
    // An upload cannot carry an Idempotency-Key (the gateway streams it and refuses one).
    if (operationTakesIdempotencyKey(operation) && !input.upload) {
      const key = options.idempotencyKey ?? (this.#opts.idempotencyKeys === 'auto' ? globalThis.crypto.randomUUID() : undefined);
      if (key) {
        headers['idempotency-key'] = key;
        idempotent = true;
      }
    }
    const parseAs = parseAsOf(operation);
    let body: Body | undefined;
    let replayable = true;
    if (input.upload) {
      headers['content-type'] = input.upload.contentType;
      ({ body, replayable } = uploadBodyOf(input.upload.file));
    }
    // A large upload takes as long as it takes: no per-attempt timeout unless one is asked for.
    const timeoutMs = options.timeoutMs ?? (input.upload ? undefined : (this.#opts.timeoutMs ?? 60_000));

    const maxRetries = replayable ? (options.maxRetries ?? this.#opts.maxRetries ?? 2) : 0;
    const maxDelay = this.#opts.maxRetryDelayMs ?? 60_000;
    const wait = this.#opts.sleep ?? sleep;
    for (let attempt = 0; ; attempt++) {
      const backoff = backoffDelay(attempt, { baseMs: BACKOFF_BASE_MS, capMs: BACKOFF_CAP_MS, jitter: [0.5, 1] });
      const signals = [...(timeoutMs !== undefined ? [AbortSignal.timeout(timeoutMs)] : []), ...(options.signal ? [options.signal] : [])];
      let result: { data?: unknown; error?: unknown; response: Response };
      try {
        // The operation's path template with its parameters; the generated client fills and encodes them. An
        // upload's file is the raw body (sent as is, not serialized as JSON); a stream is sent half-duplex, the
        // only way fetch streams a request body.
        result = await this.#api.request(
          method as 'get',
          operation.path as never,
          {
            params: { path: input.params, query: input.query },
            ...(input.upload ? { body, bodySerializer: (b: unknown) => b } : { body: input.body }),
            ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
            headers,
            parseAs,
            signal: AbortSignal.any(signals),
            redirect: 'manual',
          } as never,
        );
      } catch (err) {
        if (options.signal?.aborted) throw err;
        if (idempotent && attempt < maxRetries) {
          await wait(backoff, options.signal);
          continue;
        }
        throw new DapConnectionError(`${method} ${this.#urlOf(operation)} failed: ${(err as Error).message}`, err);
      }
      const res = result.response;

      if (res.status >= 200 && res.status < 300)
        return this.#success(operationId, operation, res, parseAs === 'arrayBuffer' && result.data instanceof ArrayBuffer ? new Uint8Array(result.data) : result.data);

      const url = res.url || this.#urlOf(operation);
      const error = errorFor(res.status, problemFrom(res.status, res.statusText, result.error, new URL(url).pathname, res.headers), res.headers, url);
      const retryable = res.status === 429 || (res.status === 503 && idempotent);
      if (!retryable || attempt >= maxRetries) throw error;
      const retryAfter = parseRetryAfter(res.headers.get('retry-after'));
      const delay = retryAfter === null ? backoff : retryAfter * 1000;
      if (delay > maxDelay) throw error;
      await wait(delay, options.signal);
    }
  }

  #urlOf(operation: ApiOperation): string {
    return `${this.#opts.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1${operation.path}`;
  }

  #success<K extends OperationId>(operationId: K, operation: ApiOperation, res: Response, body: unknown): ApiResponse<ResultOf<K>> {
    const schema = operation.success.schema;
    let data = schema === null || body === '' ? undefined : body;
    if (this.#opts.validateResponses && schema !== null && !(data instanceof Uint8Array)) {
      // Another status may answer with an alternative schema (a running report, a model in training, a dry run's estimate).
      const target = operation.success.alt?.find((a) => a.status === res.status)?.schema ?? schema;
      const parsed = target.safeParse(data);
      if (!parsed.success) {
        const problem: Problem = {
          type: 'about:blank',
          title: 'Unexpected response',
          status: res.status,
          detail: `the ${operationId} response does not match its schema: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
          instance: new URL(res.url || 'http://x/').pathname,
          code: 'invalid_response',
          requestId: res.headers.get('x-request-id') ?? '',
        };
        throw new DapApiError(res.status, problem, res.headers);
      }
      data = parsed.data;
    }
    return { data: data as ResultOf<K>, status: res.status, headers: res.headers, requestId: res.headers.get('x-request-id'), rateLimit: rateLimitOf(res.headers) };
  }
}
