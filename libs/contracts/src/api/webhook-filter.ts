import { z } from 'zod';
import { MAX_WEBHOOK_FILTER_CONDITIONS, MAX_WEBHOOK_FILTER_DEPTH, WEBHOOK_FILTER_OPERATORS } from '../lists.ts';

/**
 * A content filter on a webhook endpoint: field comparisons on the delivery's payload (`{type, timestamp,
 * data}`), combined with and/or/not. Paths are a subset of JSONPath: `$`, then `.name` or `[index]` steps
 * (`$.data.rowCount`, `$.data.columns[0].name`); no wildcards, filters or recursive descent.
 */
export const FILTER_OPERATORS = WEBHOOK_FILTER_OPERATORS;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];
export type FilterScalar = string | number | boolean | null;
export type WebhookFilter =
  { path: string; op: FilterOperator; value?: FilterScalar | FilterScalar[] } | { and: WebhookFilter[] } | { or: WebhookFilter[] } | { not: WebhookFilter };

/** Nesting of and/or/not, and comparisons in all, a filter may have. */
export const MAX_FILTER_DEPTH = MAX_WEBHOOK_FILTER_DEPTH;
export const MAX_FILTER_CONDITIONS = MAX_WEBHOOK_FILTER_CONDITIONS;
const MAX_PATH_LENGTH = 200;
const MAX_IN_VALUES = 100;
const MAX_STRING = 1000;

/** `$` then `.name` / `[index]` steps; answers the steps, or null when the path is outside the subset. */
export function parseFilterPath(path: string): Array<string | number> | null {
  if (path.length > MAX_PATH_LENGTH || !path.startsWith('$')) return null;
  const steps: Array<string | number> = [];
  const step = /\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d{1,6})\]/y;
  step.lastIndex = 1;
  while (step.lastIndex < path.length) {
    const m = step.exec(path);
    if (!m) return null;
    steps.push(m[1] !== undefined ? m[1] : Number(m[2]));
  }
  return steps.length ? steps : null;
}

const isScalar = (v: unknown): v is FilterScalar =>
  v === null || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)) || (typeof v === 'string' && v.length <= MAX_STRING);

/** Checks a filter's shape, naming where it is wrong; answers the number of comparisons. */
function check(node: unknown, at: Array<string | number>, depth: number, ctx: z.RefinementCtx, count: { n: number }): void {
  const fail = (message: string, path: Array<string | number> = at) => ctx.addIssue({ code: 'custom', message, path });
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return fail('must be an object: a comparison {path, op, value} or {and: […]}, {or: […]}, {not: …}');
  const keys = Object.keys(node);
  const n = node as Record<string, unknown>;
  if (keys.length === 1 && (keys[0] === 'and' || keys[0] === 'or' || keys[0] === 'not')) {
    if (depth >= MAX_FILTER_DEPTH) return fail(`nests deeper than ${MAX_FILTER_DEPTH} levels of and/or/not`);
    const key = keys[0];
    if (key === 'not') return check(n.not, [...at, 'not'], depth + 1, ctx, count);
    const list = n[key];
    if (!Array.isArray(list) || list.length === 0) return fail(`${key} must be a non-empty array of filters`, [...at, key]);
    list.forEach((child, i) => check(child, [...at, key, i], depth + 1, ctx, count));
    return;
  }
  if (!('path' in n) || !('op' in n)) return fail('must be a comparison {path, op, value} or have exactly one of and, or, not');
  const extra = keys.filter((k) => k !== 'path' && k !== 'op' && k !== 'value');
  if (extra.length) return fail(`unknown field ${extra.join(', ')}`);
  if (++count.n === MAX_FILTER_CONDITIONS + 1) fail(`has more than ${MAX_FILTER_CONDITIONS} comparisons`, []);
  if (typeof n.path !== 'string' || !parseFilterPath(n.path)) {
    fail('must be a JSONPath of the subset: $ followed by .name or [index] steps, such as $.data.rowCount', [...at, 'path']);
  }
  const op = n.op as FilterOperator;
  if (!FILTER_OPERATORS.includes(op)) return fail(`must be one of ${FILTER_OPERATORS.join(', ')}`, [...at, 'op']);
  const value = n.value;
  if (op === 'exists') {
    if (value !== undefined && typeof value !== 'boolean') fail('must be true or false (or left out, meaning true) for exists', [...at, 'value']);
  } else if (op === 'in') {
    if (!Array.isArray(value) || value.length === 0 || value.length > MAX_IN_VALUES || !value.every(isScalar)) {
      fail(`must be an array of 1 to ${MAX_IN_VALUES} strings, numbers, booleans or nulls for in`, [...at, 'value']);
    }
  } else if (op === 'eq' || op === 'ne') {
    if (!isScalar(value)) fail(`must be a string (at most ${MAX_STRING} characters), number, boolean or null for ${op}`, [...at, 'value']);
  } else if (typeof value !== 'number' && typeof value !== 'string') {
    fail(`must be a number or a string for ${op}`, [...at, 'value']);
  } else if (!isScalar(value)) fail(`must be a finite number or a string of at most ${MAX_STRING} characters`, [...at, 'value']);
}

export const webhookFilterSchema = z
  .custom<WebhookFilter>()
  .superRefine((value, ctx) => check(value, [], 0, ctx, { n: 0 }))
  .meta({
    id: 'WebhookFilter',
    // The shape for the OpenAPI document and generated clients (the check above is what enforces it, with limits).
    oneOf: [
      {
        type: 'object',
        required: ['path', 'op'],
        additionalProperties: false,
        properties: {
          path: { type: 'string', maxLength: MAX_PATH_LENGTH },
          op: { type: 'string', enum: [...FILTER_OPERATORS] },
          value: {
            anyOf: [{ type: ['string', 'number', 'boolean', 'null'] }, { type: 'array', maxItems: MAX_IN_VALUES, items: { type: ['string', 'number', 'boolean', 'null'] } }],
          },
        },
      },
      ...(['and', 'or'] as const).map((key) => ({
        type: 'object',
        required: [key],
        additionalProperties: false,
        properties: { [key]: { type: 'array', minItems: 1, items: { $ref: '#/components/schemas/WebhookFilter' } } },
      })),
      { type: 'object', required: ['not'], additionalProperties: false, properties: { not: { $ref: '#/components/schemas/WebhookFilter' } } },
    ],
    description: `Only events whose payload matches are sent (the others count as filtered in the endpoint's stats). A comparison {path, op, value}: path is $ followed by .name or [index] steps (e.g. $.type, $.data.rowCount, $.data.columns[0]); op is one of ${FILTER_OPERATORS.join(', ')} (in takes an array; exists takes true/false or nothing; gt/gte/lt/lte compare numbers with numbers and strings with strings). Combine with {and: [...]}, {or: [...]}, {not: {...}}; at most ${MAX_FILTER_DEPTH} levels and ${MAX_FILTER_CONDITIONS} comparisons.`,
    examples: [
      {
        and: [
          { path: '$.type', op: 'eq', value: 'report.completed' },
          { path: '$.data.rowCount', op: 'gt', value: 1000 },
        ],
      },
    ],
  });
