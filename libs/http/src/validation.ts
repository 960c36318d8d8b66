import type { z } from 'zod';
import { AppError, type FieldError } from './errors.ts';

export function fieldErrors(error: z.ZodError): FieldError[] {
  return error.issues.map((i) => ({ path: i.path.map(String).join('.') || '(root)', message: i.message }));
}

/** Validates a value against a schema, or throws a 400 with one entry per bad field. */
export function parseOr400<S extends z.ZodType>(schema: S, value: unknown, where: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const errors = fieldErrors(result.error);
  throw new AppError('validation_failed', `the ${where} is invalid: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`, {
    errors,
  });
}

export const MAX_JSON_DEPTH = 32;

/** A UTF-16 surrogate without its pair: JSON can escape one ("\\ud800"), but it is no character and no store keeps it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Walks a parsed body once, without recursion, refusing deep nesting and keys that MongoDB would read as
 * operators or JavaScript as prototype keys, and strings that are not valid Unicode.
 */
export function checkJsonShape(value: unknown): void {
  const stack: Array<[unknown, number, string]> = [[value, 1, '']];
  while (stack.length) {
    const [v, depth, path] = stack.pop()!;
    if (typeof v === 'string' && LONE_SURROGATE.test(v)) {
      throw new AppError('validation_failed', 'the body has a string that is not valid Unicode (a lone surrogate)', { errors: [{ path: path || '(root)', message: 'not valid Unicode' }] });
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth > MAX_JSON_DEPTH) throw new AppError('validation_failed', `the body nests deeper than ${MAX_JSON_DEPTH} levels`, { errors: [{ path: path || '(root)', message: 'nested too deeply' }] });
    if (Array.isArray(v)) {
      v.forEach((item, i) => stack.push([item, depth + 1, path ? `${path}.${i}` : String(i)]));
      continue;
    }
    for (const [k, item] of Object.entries(v)) {
      const p = path ? `${path}.${k}` : k;
      if (k.startsWith('$') || k === '__proto__' || LONE_SURROGATE.test(k)) {
        throw new AppError('validation_failed', `field name ${JSON.stringify(k)} is not allowed`, { errors: [{ path: p, message: 'field names may not start with $' }] });
      }
      stack.push([item, depth + 1, p]);
    }
  }
}
