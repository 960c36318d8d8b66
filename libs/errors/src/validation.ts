import type { z } from 'zod';
import { DomainError, type FieldError } from './domain-error.ts';

export function fieldErrors(error: z.ZodError): FieldError[] {
  return error.issues.flatMap((i) => issueErrors(i, []));
}

type Issue = z.core.$ZodIssue;

/**
 * One issue as field errors. A union that took none of its options says only "Invalid input" at its own
 * path; the entry is made more useful: when every option is a plain type (a scalar field), it names them
 * all; otherwise it gives the issues of the option the value got furthest in (the fewest issues), so a
 * filter with a bad `op` is told about `op`, not that it is neither a filter nor an `and` nor an `or`.
 */
function issueErrors(issue: Issue, base: PropertyKey[]): FieldError[] {
  const at = [...base, ...issue.path];
  if (issue.code === 'invalid_union' && issue.errors.length) {
    const options = issue.errors;
    if (options.every((o) => o.length === 1 && o[0]!.code === 'invalid_type' && o[0]!.path.length === 0)) {
      const expected = [...new Set(options.map((o) => (o[0] as Extract<Issue, { code: 'invalid_type' }>).expected))];
      const received = /received (\w+)/.exec(options[0]![0]!.message)?.[1];
      const list = expected.length > 1 ? `${expected.slice(0, -1).join(', ')} or ${expected.at(-1)}` : expected[0];
      return [{ path: pathOf(at), message: `Invalid input: expected ${list}${received ? `, received ${received}` : ''}` }];
    }
    const closest = options.reduce((a, b) => (b.length < a.length ? b : a));
    return closest.flatMap((i) => issueErrors(i, at));
  }
  // A strict object's unknown keys: one entry each, at the key itself.
  if (issue.code === 'unrecognized_keys') return issue.keys.map((k) => ({ path: pathOf([...at, k]), message: 'unknown field' }));
  return [{ path: pathOf(at), message: issue.message }];
}

const pathOf = (path: PropertyKey[]) => path.map(String).join('.') || '(root)';

/** A validation failure lists at most this many field errors; `errorCount` then says how many were found. */
export const MAX_LISTED_ERRORS = 100;
/** The detail line repeats the first few of them; `errors` has the rest. */
const ERRORS_IN_DETAIL = 5;
/**
 * A value with more nodes (array items and object entries) than this is checked only up to its first invalid
 * item of each array or object: listing every error of a large body costs memory in proportion to the body
 * (10,000 rows of 10 bad fields are 100,000 issues, some 130 MB inside zod).
 */
export const FULL_CHECK_MAX_NODES = 10_000;

/** zod's own abortEarly (what `schema.validate` uses): a container stops before its next child once one failed. */
const STOP_EARLY = { abortEarly: true } as z.core.ParseContext<z.core.$ZodIssue>;

/** Whether a JSON-like value has more than `limit` nodes; walks at most `limit` of them. */
function hasMoreNodesThan(value: unknown, limit: number): boolean {
  const stack: unknown[] = [value];
  let seen = 0;
  while (stack.length) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    for (const item of Array.isArray(v) ? v : Object.values(v)) {
      if (++seen > limit) return true;
      stack.push(item);
    }
  }
  return false;
}

/**
 * Validates a value against a schema, or throws `validation_failed` with one entry per bad field (at most
 * MAX_LISTED_ERRORS of them, and `errorCount` when there were more). A valid value is parsed once, exactly as
 * without early stopping; an invalid one is parsed again in full only when it is small enough.
 */
export function parseOrInvalid<S extends z.ZodType>(schema: S, value: unknown, where: string): z.infer<S> {
  const first = schema.safeParse(value, STOP_EARLY);
  if (first.success) return first.data;
  const complete = !hasMoreNodesThan(value, FULL_CHECK_MAX_NODES);
  const found = fieldErrors(complete ? schema.safeParse(value).error! : first.error);
  const errors = found.slice(0, MAX_LISTED_ERRORS);
  const listed = errors
    .slice(0, ERRORS_IN_DETAIL)
    .map((e) => `${e.path}: ${e.message}`)
    .join('; ');
  const more = found.length > ERRORS_IN_DETAIL ? `; and ${found.length - ERRORS_IN_DETAIL} more in errors[]` : '';
  const partial = complete ? '' : ' (a large body is checked only up to its first invalid items; there may be more)';
  throw new DomainError('validation_failed', `the ${where} is invalid: ${listed}${more}${partial}`, {
    errors,
    errorCount: found.length > errors.length ? found.length : undefined,
  });
}
