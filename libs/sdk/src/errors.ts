import type { Problem } from '@dap/contracts';
import type { ErrorCode } from '@dap/errors';

/**
 * The codes an error can carry: the API's (the table in the OpenAPI document's Problem schema), and the SDK's
 * own for answers that are no problem body: `invalid_response` (a body that does not match the API's schema)
 * and `http_<status>` (an intermediary's page, such as a load balancer's 502).
 */
export type DapErrorCode = ErrorCode | 'invalid_response' | `http_${number}`;

/** Every error the SDK throws. */
export class DapError extends Error {
  constructor(message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = 'DapError';
  }
}

/** The API answered with an error status; `problem` is its RFC 9457 body. */
export class DapApiError extends DapError {
  readonly status: number;
  readonly problem: Problem;
  /** The request id to quote to support: from the problem body, else the X-Request-Id header. */
  readonly requestId: string | null;
  readonly headers: Headers;
  /**
   * The page explaining this error: the problem `type` resolved against the request URL (RFC 9457), e.g.
   * `https://api.example.com/docs/problems/not-found`; null when the type is `about:blank` or unreadable.
   */
  readonly typeUrl: string | null;

  constructor(status: number, problem: Problem, headers: Headers, requestUrl?: string) {
    super(`${status} ${problem.title}: ${problem.detail}`);
    this.name = 'DapApiError';
    this.status = status;
    this.problem = problem;
    this.headers = headers;
    this.requestId = problem.requestId || headers.get('x-request-id');
    this.typeUrl = typeUrlOf(problem.type, requestUrl);
  }

  /**
   * The machine-readable code of what failed, e.g. `source_not_found`, `model_not_ready` or `validation_failed`.
   * A code this SDK does not know yet (added to the API later) comes through as it is.
   */
  get code(): DapErrorCode | (string & {}) {
    return this.problem.code;
  }

  /** Whether the error is this code; the argument is checked against the known codes, so a typo does not compile. */
  is(code: DapErrorCode): boolean {
    return this.problem.code === code;
  }
}

/** 429: the account's plan limit is used up; `retryAfter` says how many seconds to wait. */
export class RateLimitedError extends DapApiError {
  readonly retryAfter: number | null;

  constructor(status: number, problem: Problem, headers: Headers, requestUrl?: string) {
    super(status, problem, headers, requestUrl);
    this.name = 'RateLimitedError';
    this.retryAfter = parseRetryAfter(headers.get('retry-after'));
  }
}

/** No answer: the connection failed or the request timed out. */
export class DapConnectionError extends DapError {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'DapConnectionError';
  }
}

/** Retry-After as seconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3); null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

function typeUrlOf(type: string | undefined, requestUrl: string | undefined): string | null {
  if (!type || type === 'about:blank') return null;
  try {
    return new URL(type, requestUrl).href;
  } catch {
    return null;
  }
}

export function errorFor(status: number, problem: Problem, headers: Headers, requestUrl?: string): DapApiError {
  return status === 429 ? new RateLimitedError(status, problem, headers, requestUrl) : new DapApiError(status, problem, headers, requestUrl);
}
