import { parseFilterPath, type FilterScalar, type WebhookFilter } from '@dap/contracts';

/** The value at a path of the filter subset, or undefined when any step is missing. */
function resolve(payload: unknown, steps: Array<string | number>): unknown {
  let v = payload;
  for (const s of steps) {
    if (typeof s === 'number') {
      if (!Array.isArray(v)) return undefined;
      v = v[s];
    } else {
      if (typeof v !== 'object' || v === null || Array.isArray(v) || !Object.hasOwn(v, s)) return undefined;
      v = (v as Record<string, unknown>)[s];
    }
  }
  return v;
}

const pathCache = new Map<string, Array<string | number>>();
function stepsOf(path: string): Array<string | number> {
  let steps = pathCache.get(path);
  if (!steps) {
    steps = parseFilterPath(path) ?? [];
    if (pathCache.size > 10_000) pathCache.clear();
    pathCache.set(path, steps);
  }
  return steps;
}

/** Orders like with like only: a number against a string (or anything else) compares false. */
function compare(a: unknown, b: unknown): number | null {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  return null;
}

/**
 * Whether a payload matches a (validated) filter. A missing field equals nothing (so `ne` matches it) and
 * orders against nothing; objects and arrays are not values, so eq/in never match them.
 */
export function matchesFilter(filter: WebhookFilter, payload: unknown): boolean {
  if ('and' in filter) return filter.and.every((f) => matchesFilter(f, payload));
  if ('or' in filter) return filter.or.some((f) => matchesFilter(f, payload));
  if ('not' in filter) return !matchesFilter(filter.not, payload);
  const v = resolve(payload, stepsOf(filter.path));
  const want = filter.value;
  switch (filter.op) {
    case 'exists':
      return (v !== undefined) === (want ?? true);
    case 'eq':
      return v === want;
    case 'ne':
      return v !== want;
    case 'in':
      return (want as FilterScalar[]).some((w) => w === v);
    default: {
      const c = compare(v, want);
      if (c === null) return false;
      return filter.op === 'gt' ? c > 0 : filter.op === 'gte' ? c >= 0 : filter.op === 'lt' ? c < 0 : c <= 0;
    }
  }
}
