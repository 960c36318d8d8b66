/** The single error catalogue: a code names what went wrong; the status is chosen from it at the edge. */
export const ERROR_CATALOGUE = Object.freeze({
  validation_failed: { status: 400, title: 'Bad Request', slug: 'validation-failed' },
  malformed_json: { status: 400, title: 'Bad Request', slug: 'malformed-json' },
  unsupported_content_type: { status: 400, title: 'Bad Request', slug: 'unsupported-content-type' },
  bad_request: { status: 400, title: 'Bad Request', slug: 'bad-request' },
  unauthorized: { status: 401, title: 'Unauthorized', slug: 'unauthorized' },
  forbidden: { status: 403, title: 'Forbidden', slug: 'forbidden' },
  not_found: { status: 404, title: 'Not Found', slug: 'not-found' },
  method_not_allowed: { status: 405, title: 'Method Not Allowed', slug: 'method-not-allowed' },
  conflict: { status: 409, title: 'Conflict', slug: 'conflict' },
  payload_too_large: { status: 413, title: 'Payload Too Large', slug: 'payload-too-large' },
  unsupported_media_type: { status: 415, title: 'Unsupported Media Type', slug: 'unsupported-media-type' },
  unprocessable: { status: 422, title: 'Unprocessable Content', slug: 'unprocessable' },
  quota_exceeded: { status: 429, title: 'Too Many Requests', slug: 'quota-exceeded' },
  internal: { status: 500, title: 'Internal Server Error', slug: 'internal' },
  bad_gateway: { status: 502, title: 'Bad Gateway', slug: 'bad-gateway' },
  unavailable: { status: 503, title: 'Service Unavailable', slug: 'unavailable' },
  timeout: { status: 504, title: 'Gateway Timeout', slug: 'timeout' },
} as const);
export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/**
 * A relative reference (RFC 9457 section 3.1.1: resolved against the request URL), so every service's problem
 * bodies point at the page the gateway serves for them at its own public origin, whatever that is.
 */
export const PROBLEM_TYPE_BASE = '/docs/problems/';

export interface FieldError {
  path: string;
  message: string;
}

interface AppErrorOptions {
  errors?: FieldError[];
  /** How many field errors were found, when `errors` lists only some of them. */
  errorCount?: number | undefined;
  headers?: Record<string, string>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly errors: FieldError[] | undefined;
  /** How many field errors were found, when `errors` lists only some of them. */
  readonly errorCount: number | undefined;
  readonly headers: Record<string, string>;

  /** A validation failure always names its fields (`errors[]`), so a client can point at them. */
  constructor(code: 'validation_failed', detail: string, opts: AppErrorOptions & { errors: FieldError[] });
  constructor(code: Exclude<ErrorCode, 'validation_failed'>, detail: string, opts?: AppErrorOptions);
  constructor(code: ErrorCode, detail: string, opts: AppErrorOptions = {}) {
    super(detail, { cause: opts.cause });
    this.name = 'AppError';
    this.code = code;
    this.errors = opts.errors;
    this.errorCount = opts.errorCount;
    this.headers = opts.headers ?? {};
  }

  get status(): number {
    return ERROR_CATALOGUE[this.code].status;
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} was not found`);

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

export function problemOf(err: AppError, instance: string, requestId: string): ProblemBody {
  const entry = ERROR_CATALOGUE[err.code];
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
