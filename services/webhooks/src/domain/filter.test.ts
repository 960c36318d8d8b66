import { webhookFilterSchema, type WebhookFilter } from '@dap/contracts';
import { matchesFilter } from './filter.ts';

const payload = {
  type: 'report.completed',
  timestamp: '2026-11-27T10:00:00.000Z',
  data: { id: 'rpt_1', rowCount: 1500, durationMs: 12, name: 'sales', tags: ['eu', 'daily'], nested: { ok: true, none: null } },
};

describe('content filter evaluator (golden cases)', () => {
  const cases: Array<[string, WebhookFilter, boolean]> = [
    ['eq on a string', { path: '$.type', op: 'eq', value: 'report.completed' }, true],
    ['eq on another string', { path: '$.type', op: 'eq', value: 'report.failed' }, false],
    ['eq does not coerce', { path: '$.data.rowCount', op: 'eq', value: '1500' }, false],
    ['eq null', { path: '$.data.nested.none', op: 'eq', value: null }, true],
    ['eq null on a missing field', { path: '$.data.missing', op: 'eq', value: null }, false],
    ['ne', { path: '$.data.name', op: 'ne', value: 'hr' }, true],
    ['ne on a missing field', { path: '$.data.missing', op: 'ne', value: 'x' }, true],
    ['gt', { path: '$.data.rowCount', op: 'gt', value: 1000 }, true],
    ['gt at the bound', { path: '$.data.rowCount', op: 'gt', value: 1500 }, false],
    ['gte at the bound', { path: '$.data.rowCount', op: 'gte', value: 1500 }, true],
    ['lt', { path: '$.data.durationMs', op: 'lt', value: 12 }, false],
    ['lte', { path: '$.data.durationMs', op: 'lte', value: 12 }, true],
    ['gt on strings', { path: '$.data.name', op: 'gt', value: 'r' }, true],
    ['gt number against string', { path: '$.data.rowCount', op: 'gt', value: 'a' }, false],
    ['gt on a missing field', { path: '$.data.missing', op: 'gt', value: 0 }, false],
    ['in', { path: '$.data.name', op: 'in', value: ['hr', 'sales'] }, true],
    ['in, no match', { path: '$.data.name', op: 'in', value: ['hr'] }, false],
    ['array index', { path: '$.data.tags[1]', op: 'eq', value: 'daily' }, true],
    ['array index out of range', { path: '$.data.tags[5]', op: 'exists' }, false],
    ['index on an object', { path: '$.data[0]', op: 'exists' }, false],
    ['exists', { path: '$.data.nested.ok', op: 'exists' }, true],
    ['exists false', { path: '$.data.missing', op: 'exists', value: false }, true],
    ['exists on a null value', { path: '$.data.nested.none', op: 'exists', value: true }, true],
    ['no prototype lookups', { path: '$.data.constructor', op: 'exists' }, false],
    ['eq never matches an object', { path: '$.data.nested', op: 'eq', value: null }, false],
    [
      'and',
      {
        and: [
          { path: '$.type', op: 'eq', value: 'report.completed' },
          { path: '$.data.rowCount', op: 'gt', value: 1000 },
        ],
      },
      true,
    ],
    [
      'and, one false',
      {
        and: [
          { path: '$.type', op: 'eq', value: 'report.completed' },
          { path: '$.data.rowCount', op: 'gt', value: 2000 },
        ],
      },
      false,
    ],
    [
      'or',
      {
        or: [
          { path: '$.type', op: 'eq', value: 'x' },
          { path: '$.data.name', op: 'eq', value: 'sales' },
        ],
      },
      true,
    ],
    [
      'or, none',
      {
        or: [
          { path: '$.type', op: 'eq', value: 'x' },
          { path: '$.data.name', op: 'eq', value: 'y' },
        ],
      },
      false,
    ],
    ['not', { not: { path: '$.data.name', op: 'eq', value: 'sales' } }, false],
    ['nested', { not: { or: [{ path: '$.data.tags[0]', op: 'eq', value: 'us' }, { not: { path: '$.data.nested.ok', op: 'eq', value: true } }] } }, true],
  ];
  it.each(cases)('%s', (_name, filter, expected) => {
    expect(webhookFilterSchema.safeParse(filter).success).toBe(true);
    expect(matchesFilter(filter, payload)).toBe(expected);
  });
});

describe('content filter validation', () => {
  const issues = (f: unknown) => {
    const r = webhookFilterSchema.safeParse(f);
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };
  const deep = (n: number): unknown => (n === 0 ? { path: '$.type', op: 'exists' } : { not: deep(n - 1) });

  it.each([
    [{ path: 'data.x', op: 'eq', value: 1 }, /^path: must be a JSONPath/],
    [{ path: '$.data.*', op: 'eq', value: 1 }, /^path: must be a JSONPath/],
    [{ path: '$..x', op: 'eq', value: 1 }, /^path: must be a JSONPath/],
    [{ path: '$', op: 'exists' }, /^path: must be a JSONPath/],
    [{ path: '$.a', op: 'like', value: 'x' }, /^op: must be one of eq, ne, gt, gte, lt, lte, in, exists/],
    [{ path: '$.a', op: 'in', value: 'x' }, /^value: must be an array/],
    [{ path: '$.a', op: 'in', value: [] }, /^value: must be an array/],
    [{ path: '$.a', op: 'gt', value: true }, /^value: must be a number or a string for gt/],
    [{ path: '$.a', op: 'eq', value: { a: 1 } }, /^value: must be a string .* for eq/],
    [{ path: '$.a', op: 'exists', value: 'yes' }, /^value: must be true or false/],
    [{ path: '$.a', op: 'eq', value: 1, extra: 1 }, /unknown field extra/],
    [{ and: [] }, /^and: and must be a non-empty array/],
    [
      {
        or: [
          { path: '$.a', op: 'exists' },
          { path: 'bad', op: 'exists' },
        ],
      },
      /^or\.1\.path: must be a JSONPath/,
    ],
    [{ and: [{ path: '$.a', op: 'exists' }], or: [] }, /must be a comparison/],
    ['x', /must be an object/],
  ])('refuses %j naming the field', (filter, message) => {
    const got = issues(filter);
    expect(got.length).toBeGreaterThan(0);
    expect(got.some((m) => message.test(m))).toBe(true);
  });

  it('bounds depth and size', () => {
    expect(issues(deep(5))).toEqual([]); // positive control: at the limit
    expect(issues(deep(6)).join()).toMatch(/deeper than 5 levels/);
    const many = (n: number) => ({ or: Array.from({ length: n }, () => ({ path: '$.type', op: 'exists' })) });
    expect(issues(many(50))).toEqual([]);
    expect(issues(many(51)).join()).toMatch(/more than 50 comparisons/);
  });
});
