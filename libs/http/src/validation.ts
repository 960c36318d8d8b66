import { DomainError } from '@dap/errors';

/** The route-side name of `parseOrInvalid` (@dap/errors): a request part that fails its schema answers 400. */
export { parseOrInvalid as parseOr400, MAX_LISTED_ERRORS, FULL_CHECK_MAX_NODES, fieldErrors } from '@dap/errors';

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
      throw new DomainError('validation_failed', 'the body has a string that is not valid Unicode (a lone surrogate)', {
        errors: [{ path: path || '(root)', message: 'not valid Unicode' }],
      });
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth > MAX_JSON_DEPTH)
      throw new DomainError('validation_failed', `the body nests deeper than ${MAX_JSON_DEPTH} levels`, { errors: [{ path: path || '(root)', message: 'nested too deeply' }] });
    if (Array.isArray(v)) {
      v.forEach((item, i) => stack.push([item, depth + 1, path ? `${path}.${i}` : String(i)]));
      continue;
    }
    for (const [k, item] of Object.entries(v)) {
      const p = path ? `${path}.${k}` : k;
      if (k.startsWith('$') || k === '__proto__' || LONE_SURROGATE.test(k)) {
        const why = k.startsWith('$') ? 'field names may not start with $' : k === '__proto__' ? 'the field name __proto__ is not allowed' : 'not valid Unicode';
        throw new DomainError('validation_failed', `field name ${JSON.stringify(k)} is not allowed`, { errors: [{ path: p, message: why }] });
      }
      stack.push([item, depth + 1, p]);
    }
  }
}
