import { DomainError, ERROR_CODES, type DomainErrorOptions, type ErrorCode, type ErrorKind, type FieldError } from '@dap/errors';

export type { FieldError } from '@dap/errors';

/**
 * The problem types: each has a page at `/docs/problems/<slug>` and one status. A kind names its type; three
 * 400 codes have a page of their own, since what the caller fixes differs (a field, the JSON, the media type).
 */
export const PROBLEM_TYPES = Object.freeze({
  invalid: { status: 400, title: 'Bad Request', slug: 'validation-failed' },
  malformed_json: { status: 400, title: 'Bad Request', slug: 'malformed-json' },
  unsupported_content_type: { status: 400, title: 'Bad Request', slug: 'unsupported-content-type' },
  bad_request: { status: 400, title: 'Bad Request', slug: 'bad-request' },
  unauthenticated: { status: 401, title: 'Unauthorized', slug: 'unauthorized' },
  forbidden: { status: 403, title: 'Forbidden', slug: 'forbidden' },
  not_found: { status: 404, title: 'Not Found', slug: 'not-found' },
  method_not_allowed: { status: 405, title: 'Method Not Allowed', slug: 'method-not-allowed' },
  conflict: { status: 409, title: 'Conflict', slug: 'conflict' },
  too_large: { status: 413, title: 'Payload Too Large', slug: 'payload-too-large' },
  unsupported_media_type: { status: 415, title: 'Unsupported Media Type', slug: 'unsupported-media-type' },
  unprocessable: { status: 422, title: 'Unprocessable Content', slug: 'unprocessable' },
  rate_limited: { status: 429, title: 'Too Many Requests', slug: 'quota-exceeded' },
  internal: { status: 500, title: 'Internal Server Error', slug: 'internal' },
  bad_gateway: { status: 502, title: 'Bad Gateway', slug: 'bad-gateway' },
  unavailable: { status: 503, title: 'Service Unavailable', slug: 'unavailable' },
  timeout: { status: 504, title: 'Gateway Timeout', slug: 'timeout' },
} as const satisfies Record<ErrorKind | 'malformed_json' | 'unsupported_content_type', { status: number; title: string; slug: string }>);
export type ProblemTypeName = keyof typeof PROBLEM_TYPES;

/** The problem type a code answers with. */
export function problemTypeOf(code: ErrorCode): ProblemTypeName {
  return code === 'malformed_json' || code === 'unsupported_content_type' ? code : ERROR_CODES[code].kind;
}

/** The HTTP status a code answers with: chosen here, at the edge, from the code's kind. */
export const statusOf = (code: ErrorCode): number => PROBLEM_TYPES[problemTypeOf(code)].status;

/**
 * A relative reference (RFC 9457 section 3.1.1: resolved against the request URL), so every service's problem
 * bodies point at the page the gateway serves for them at its own public origin, whatever that is.
 */
export const PROBLEM_TYPE_BASE = '/docs/problems/';

/** A failure raised at the HTTP edge that needs headers of its own (Allow, WWW-Authenticate). */
export class AppError extends DomainError {
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, detail: string, opts: DomainErrorOptions & { headers?: Record<string, string> } = {}) {
    super(code, detail, opts);
    this.name = 'AppError';
    this.headers = opts.headers ?? {};
  }
}

/** The headers a problem response carries besides its body. */
export function problemHeaders(err: DomainError): Record<string, string> {
  const headers: Record<string, string> = err.retryAfterSeconds !== undefined ? { 'Retry-After': String(err.retryAfterSeconds) } : {};
  return err instanceof AppError ? { ...headers, ...err.headers } : headers;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: ErrorCode;
  requestId: string;
  errors?: FieldError[];
  errorCount?: number;
}

export function problemOf(err: DomainError, instance: string, requestId: string): ProblemBody {
  const entry = PROBLEM_TYPES[problemTypeOf(err.code)];
  const body: ProblemBody = {
    type: PROBLEM_TYPE_BASE + entry.slug,
    title: entry.title,
    status: entry.status,
    detail: err.message,
    instance,
    code: err.code,
    requestId,
  };
  if (err.errors) body.errors = err.errors;
  if (err.errorCount !== undefined) body.errorCount = err.errorCount;
  return body;
}
