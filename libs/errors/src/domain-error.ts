import { ERROR_CODES, type ErrorCode } from './codes.ts';
import type { ErrorKind } from './kinds.ts';

export interface FieldError {
  path: string;
  message: string;
}

export interface DomainErrorOptions {
  errors?: FieldError[];
  /** How many field errors were found, when `errors` lists only some of them. */
  errorCount?: number | undefined;
  /** When retrying makes sense, after how many seconds (the edge sends it as Retry-After). */
  retryAfterSeconds?: number;
  cause?: unknown;
}

/**
 * A failure the caller can act on: a stable `code` from the catalogue, its `kind` (which the edge maps to a
 * status) and a `message` written for the customer. Internal details belong in `cause`, which is never shown.
 */
export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly errors: FieldError[] | undefined;
  readonly errorCount: number | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, opts: DomainErrorOptions = {}) {
    super(message, { cause: opts.cause });
    this.name = 'DomainError';
    this.code = code;
    this.errors = opts.errors;
    this.errorCount = opts.errorCount;
    this.retryAfterSeconds = opts.retryAfterSeconds;
  }

  /** Derived from the code, so a code always answers with the same status. */
  get kind(): ErrorKind {
    return ERROR_CODES[this.code].kind;
  }
}

/**
 * An error that names in `reason` which way something failed, for code that acts on it without reading the
 * message: a sealed value that does not open, a webhook delivery that does not verify.
 */
export class ReasonedError<Reason extends string> extends Error {
  readonly reason: Reason;
  constructor(reason: Reason, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** `<what> was not found`, under the code of the thing that was looked for. */
export const notFound = (code: ErrorCode & `${string}_not_found`, what: string) => new DomainError(code, `${what} was not found`);

/** A field-level failure: the detail lists the first few field errors, `errors[]` holds them all. */
export function invalidFields(code: ErrorCode, what: string, errors: FieldError[], opts: Omit<DomainErrorOptions, 'errors'> = {}): DomainError {
  const listed = errors
    .slice(0, 5)
    .map((e) => `${e.path}: ${e.message}`)
    .join('; ');
  return new DomainError(code, `${what}: ${listed}`, { ...opts, errors });
}
