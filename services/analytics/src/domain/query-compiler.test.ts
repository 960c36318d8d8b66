import { querySchema, type AnalyticsQuery } from '@dap/contracts';
import type { DatasetColumn } from '@dap/datasets';
import { DomainError } from '@dap/errors';
import { compileQuery, toUtcTimestamp } from './query-compiler.ts';
import { columns } from '@dap/testing';

const SCHEMA: DatasetColumn[] = columns({ country: 'string', amount: 'number', qty: 'integer', paid: 'boolean', ts: 'timestamp', when_text: 'string', 'odd "name"': 'string' });
const FILE = '/data/acct_X/src_Y/file.parquet';
const SRC = 'src_01JCQ3N6W4X8Z5Y7A9B2C4D6E8';

/** Parses like the route does (defaults applied), then compiles. */
function compile(q: Record<string, unknown>) {
  return compileQuery(querySchema.parse({ sourceId: SRC, ...q }) as AnalyticsQuery, SCHEMA, FILE);
}

/** The 400 a query gets, with its field errors. */
function errorsOf(q: Record<string, unknown>): { path: string; message: string }[] {
  try {
    compile(q);
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('validation_failed');
    return (err as DomainError).errors ?? [];
  }
  throw new Error('expected the query to be rejected');
}

describe('compileQuery: SQL text and parameters', () => {
  it('compiles a bare count', () => {
    const c = compile({ measures: [{ op: 'count' }] });
    expect(c.sql).toBe('SELECT count(*) AS "count", count(*) OVER () AS "__total" FROM read_parquet($1) LIMIT $2 OFFSET $3');
    expect(c.params).toEqual([FILE, 1000, 0]);
    expect(c.columns).toEqual([{ name: 'count', role: 'measure' }]);
  });

  it('compiles dimensions, every measure with default aliases, filters, order, limit and offset', () => {
    const c = compile({
      measures: [
        { op: 'count' },
        { op: 'count', field: 'amount' },
        { op: 'countDistinct', field: 'qty' },
        { op: 'sum', field: 'amount', as: 'revenue' },
        { op: 'avg', field: 'amount' },
        { op: 'min', field: 'ts' },
        { op: 'max', field: 'country' },
        { op: 'median', field: 'qty' },
        { op: 'p90', field: 'amount' },
        { op: 'p99', field: 'amount' },
      ],
      dimensions: ['country'],
      filters: [
        { field: 'paid', op: 'eq', value: true },
        { field: 'amount', op: 'gte', value: 10 },
      ],
      orderBy: [{ field: 'revenue', direction: 'desc' }],
      limit: 5,
      offset: 10,
    });
    expect(c.sql).toBe(
      'SELECT "country" AS "country", count(*) AS "count", count("amount") AS "count_amount", count(DISTINCT "qty") AS "countDistinct_qty", ' +
        'sum("amount") AS "revenue", avg("amount") AS "avg_amount", min("ts") AS "min_ts", max("country") AS "max_country", ' +
        'quantile_cont("qty", 0.5) AS "median_qty", quantile_cont("amount", 0.9) AS "p90_amount", quantile_cont("amount", 0.99) AS "p99_amount", count(*) OVER () AS "__total" ' +
        'FROM read_parquet($1) WHERE "paid" = $2 AND "amount" >= $3 GROUP BY 1 ORDER BY 5 DESC NULLS LAST, 1 ASC NULLS LAST LIMIT $4 OFFSET $5',
    );
    expect(c.params).toEqual([FILE, true, 10, 5, 10]);
    // The export reads every row in the same order; the count reads the same groups.
    expect(c.fullSql).toBe(c.sql.replace(', count(*) OVER () AS "__total"', '').replace(' LIMIT $4 OFFSET $5', ''));
    expect(c.fullParams).toEqual([FILE, true, 10]);
    expect(c.countSql).toBe(`SELECT count(*) AS "n" FROM (${c.fullSql.replace(' ORDER BY 5 DESC NULLS LAST, 1 ASC NULLS LAST', '')}) AS r`);
  });

  it('buckets a time dimension, bounds it with from/to parameters and orders time first', () => {
    const c = compile({
      measures: [{ op: 'sum', field: 'qty' }],
      dimensions: ['country'],
      timeDimension: { field: 'ts', granularity: 'week', from: '2024-01-01T00:00:00Z', to: '2024-02-01' },
    });
    expect(c.sql).toBe(
      'SELECT "country" AS "country", date_trunc(\'week\', CAST("ts" AS TIMESTAMP)) AS "ts", sum("qty") AS "sum_qty", count(*) OVER () AS "__total" FROM read_parquet($1) ' +
        'WHERE CAST("ts" AS TIMESTAMP) >= CAST($2 AS TIMESTAMP) AND CAST("ts" AS TIMESTAMP) < CAST($3 AS TIMESTAMP) ' +
        'GROUP BY 1, 2 ORDER BY 2 ASC NULLS LAST, 1 ASC NULLS LAST LIMIT $4 OFFSET $5',
    );
    expect(c.params).toEqual([FILE, '2024-01-01 00:00:00.000', '2024-02-01 00:00:00.000', 1000, 0]);
    expect(c.columns.map((x) => x.role)).toEqual(['dimension', 'time', 'measure']);
  });

  it('refuses a string, integer, number or boolean column as the time dimension, naming the column and its type', () => {
    expect(errorsOf({ measures: [{ op: 'count' }], timeDimension: { field: 'when_text', granularity: 'month' } })).toEqual([
      {
        path: 'timeDimension.field',
        message:
          '"when_text" is a string field; a time dimension needs a timestamp field (ingestion types a column as timestamp when every value in it is a time; this one has values that are not)',
      },
    ]);
    for (const [field, type] of [
      ['qty', 'integer'],
      ['amount', 'number'],
      ['paid', 'boolean'],
    ]) {
      expect(errorsOf({ measures: [{ op: 'count' }], timeDimension: { field, granularity: 'day' } })).toEqual([
        { path: 'timeDimension.field', message: `"${field}" is ${type === 'integer' ? 'an' : 'a'} ${type} field; a time dimension needs a timestamp field` },
      ]);
    }
    // Positive control: the timestamp column is accepted.
    expect(compile({ measures: [{ op: 'count' }], timeDimension: { field: 'ts', granularity: 'month' } }).sql).toContain('date_trunc(\'month\', CAST("ts" AS TIMESTAMP)) AS "ts"');
  });

  it('compiles nested and/or filters and every operator with values as parameters', () => {
    const c = compile({
      measures: [{ op: 'count' }],
      filters: [
        {
          or: [
            {
              and: [
                { field: 'country', op: 'in', value: ['DE', 'FR'] },
                { field: 'qty', op: 'lt', value: 3 },
              ],
            },
            { field: 'country', op: 'notIn', value: ['US'] },
            { field: 'country', op: 'contains', value: "x'; DROP TABLE t; --" },
            { field: 'country', op: 'startsWith', value: 'U' },
            { field: 'amount', op: 'isNull' },
            { field: 'amount', op: 'isNotNull' },
            { field: 'qty', op: 'ne', value: 2 },
            { field: 'qty', op: 'gt', value: 1 },
            { field: 'qty', op: 'lte', value: 9 },
            { field: 'ts', op: 'lt', value: '2024-03-01T12:30:00+02:00' },
          ],
        },
      ],
    });
    expect(c.sql).toBe(
      'SELECT count(*) AS "count", count(*) OVER () AS "__total" FROM read_parquet($1) WHERE (("country" IN ($2, $3) AND "qty" < $4) OR ("country" IS NULL OR "country" NOT IN ($5)) ' +
        'OR contains("country", $6) OR starts_with("country", $7) OR "amount" IS NULL OR "amount" IS NOT NULL OR "qty" IS DISTINCT FROM $8 ' +
        'OR "qty" > $9 OR "qty" <= $10 OR CAST("ts" AS TIMESTAMP) < CAST($11 AS TIMESTAMP)) LIMIT $12 OFFSET $13',
    );
    expect(c.params).toEqual([FILE, 'DE', 'FR', 3, 'US', "x'; DROP TABLE t; --", 'U', 2, 1, 9, '2024-03-01 10:30:00.000', 1000, 0]);
  });

  it('quotes a schema column whose name holds quotes, and never puts a value in the SQL text', () => {
    const c = compile({ measures: [{ op: 'countDistinct', field: 'odd "name"' }], filters: [{ field: 'odd "name"', op: 'eq', value: '"; DROP' }] });
    expect(c.sql).toBe(
      'SELECT count(DISTINCT "odd ""name""") AS "countDistinct_odd ""name""", count(*) OVER () AS "__total" FROM read_parquet($1) WHERE "odd ""name""" = $2 LIMIT $3 OFFSET $4',
    );
    expect(c.sql).not.toContain('DROP');
    expect(c.sql).not.toContain(FILE);
  });

  it.each(['hour', 'day', 'week', 'month', 'year'])('maps granularity %s to a fixed literal', (g) => {
    expect(compile({ measures: [{ op: 'count' }], timeDimension: { field: 'ts', granularity: g } }).sql).toContain(`date_trunc('${g}', `);
  });
  it("compares a number past 2^53 as a double, and takes an integer field's value as digits, exactly", () => {
    const c = compile({
      measures: [{ op: 'count' }],
      filters: [
        { field: 'qty', op: 'gt', value: 1e300 },
        { field: 'qty', op: 'ne', value: '-9007199254740993' },
        { field: 'amount', op: 'lt', value: 2.5 },
      ],
    });
    expect(c.sql).toContain('WHERE "qty" > CAST($2 AS DOUBLE) AND "qty" IS DISTINCT FROM CAST($3 AS HUGEINT) AND "amount" < $4');
    expect(c.params.slice(1, 4)).toEqual(['1e+300', '-9007199254740993', 2.5]);
  });
});

describe('compileQuery: rejects what does not fit the schema (400 naming the field)', () => {
  it.each([
    ['a quote in a dimension', { dimensions: ['country"; DROP TABLE x; --'] }, 'dimensions.0'],
    ['a semicolon in a measure field', { measures: [{ op: 'sum', field: 'amount; DELETE' }] }, 'measures.0.field'],
    ['a quote in a filter field', { filters: [{ field: "country' OR '1'='1", op: 'eq', value: 'x' }] }, 'filters.0.field'],
    ['an expression as the time field', { timeDimension: { field: 'now()', granularity: 'day' } }, 'timeDimension.field'],
    ['a field differing only in case', { dimensions: ['Country'] }, 'dimensions.0'],
  ])('unknown field: %s', (_name, extra, path) => {
    const errors = errorsOf({ measures: [{ op: 'count' }], ...extra });
    expect(errors).toEqual([expect.objectContaining({ path })]);
    expect(errors[0]!.message).toMatch(/unknown field .*its fields are "country", "amount"/);
  });

  it('rejects orderBy on a field that is not an output of the query, even if it is a real column', () => {
    const errors = errorsOf({ measures: [{ op: 'count' }], dimensions: ['country'], orderBy: [{ field: 'amount' }, { field: 'count"; DROP' }] });
    expect(errors.map((e) => e.path)).toEqual(['orderBy.0.field', 'orderBy.1.field']);
    expect(errors[0]!.message).toContain('cannot order by "amount": it is not a dimension, measure or the time dimension');
  });

  it('orders by the time dimension by its field name', () => {
    const c = compile({ measures: [{ op: 'count' }], timeDimension: { field: 'ts', granularity: 'day' }, orderBy: [{ field: 'ts', direction: 'desc' }] });
    expect(c.sql).toContain('ORDER BY 1 DESC NULLS LAST LIMIT');
  });

  it('rejects a bogus granularity at the schema and again in the compiler', () => {
    expect(querySchema.safeParse({ sourceId: SRC, measures: [{ op: 'count' }], timeDimension: { field: 'ts', granularity: "day'); DROP" } }).success).toBe(false);
    const q = querySchema.parse({ sourceId: SRC, measures: [{ op: 'count' }] }) as AnalyticsQuery;
    const bogus = { ...q, timeDimension: { field: 'ts', granularity: "day') --" } } as unknown as AnalyticsQuery;
    expect(() => compileQuery(bogus, SCHEMA, FILE)).toThrow(/granularity must be one of hour, day, week, month, year/);
  });

  it('rejects a bogus measure op, filter op and direction that slipped past the schema', () => {
    const q = querySchema.parse({ sourceId: SRC, measures: [{ op: 'count' }], dimensions: ['country'] }) as AnalyticsQuery;
    const bad = {
      ...q,
      measures: [{ op: 'sum(1); --' }],
      filters: [{ field: 'country', op: '= 1 OR', value: 'x' }],
      orderBy: [{ field: 'country', direction: 'desc; DROP' }],
    } as unknown as AnalyticsQuery;
    try {
      compileQuery(bad, SCHEMA, FILE);
      throw new Error('expected a 400');
    } catch (err) {
      expect((err as DomainError).errors?.map((e) => e.path)).toEqual(['measures.0.op', 'filters.0.op', 'orderBy.0.direction']);
    }
  });

  it.each([
    ['sum on a string', { measures: [{ op: 'sum', field: 'country' }] }, 'measures.0.field', /sum cannot be computed on "country", a string field/],
    ['avg on a boolean', { measures: [{ op: 'avg', field: 'paid' }] }, 'measures.0.field', /a boolean field/],
    [
      'an integer as the time dimension',
      { timeDimension: { field: 'qty', granularity: 'day' } },
      'timeDimension.field',
      /^"qty" is an integer field; a time dimension needs a timestamp field$/,
    ],
    ['contains on an integer', { filters: [{ field: 'qty', op: 'contains', value: '1' }] }, 'filters.0.op', /contains cannot be used on "qty", an integer field/],
    ['p90 on a timestamp', { measures: [{ op: 'p90', field: 'ts' }] }, 'measures.0.field', /p90 cannot be computed/],
    ['min on a boolean', { measures: [{ op: 'min', field: 'paid' }] }, 'measures.0.field', /min cannot be computed/],
    ['countDistinct without a field', { measures: [{ op: 'countDistinct' }] }, 'measures.0.field', /needs a field/],
    ['contains on a number', { filters: [{ field: 'amount', op: 'contains', value: '1' }] }, 'filters.0.op', /contains cannot be used on "amount", a number field/],
    ['gt on a boolean', { filters: [{ field: 'paid', op: 'gt', value: true }] }, 'filters.0.op', /gt cannot be used/],
    ['a string value for a number', { filters: [{ field: 'amount', op: 'eq', value: '10' }] }, 'filters.0.value', /needs a number, got string/],
    ['a number value for a string', { filters: [{ field: 'country', op: 'eq', value: 1 }] }, 'filters.0.value', /needs a string, got number/],
    ['a bad time value', { filters: [{ field: 'ts', op: 'gte', value: 'yesterday' }] }, 'filters.0.value', /ISO-8601/],
    ['eq null', { filters: [{ field: 'country', op: 'eq', value: null }] }, 'filters.0.value', /use isNull/],
    ['in without an array', { filters: [{ field: 'country', op: 'in', value: 'DE' }] }, 'filters.0.value', /non-empty array/],
    ['in with an empty array', { filters: [{ field: 'country', op: 'in', value: [] }] }, 'filters.0.value', /non-empty array/],
    [
      'in with a bad item',
      { filters: [{ field: 'qty', op: 'in', value: [1, 'two'] }] },
      'filters.0.value.1',
      /^in on an integer field needs a number or a string of digits, got string$/,
    ],
    ['a fraction as text for an integer', { filters: [{ field: 'qty', op: 'eq', value: '1.5' }] }, 'filters.0.value', /a string of digits/],
    ['isNull with a value', { filters: [{ field: 'qty', op: 'isNull', value: 1 }] }, 'filters.0.value', /takes no value/],
    ['a nested bad field', { filters: [{ or: [{ and: [{ field: 'nope', op: 'eq', value: 1 }] }] }] }, 'filters.0.or.0.and.0.field', /unknown field "nope"/],
    ['a number time dimension', { timeDimension: { field: 'qty', granularity: 'day' } }, 'timeDimension.field', /needs a timestamp field/],
    ['a bad from', { timeDimension: { field: 'ts', granularity: 'day', from: 'last week' } }, 'timeDimension.from', /ISO-8601/],
    ['from after to', { timeDimension: { field: 'ts', granularity: 'day', from: '2024-02-01', to: '2024-01-01' } }, 'timeDimension.to', /later than from/],
    ['a duplicate dimension', { dimensions: ['country', 'country'] }, 'dimensions.1', /already has a column named "country"/],
    ['a dimension that is the time dimension', { dimensions: ['ts'], timeDimension: { field: 'ts', granularity: 'day' } }, 'dimensions.0', /already the time dimension/],
  ])('%s', (_name, extra, path, message) => {
    const errors = errorsOf({ measures: [{ op: 'count' }], ...extra });
    const hit = errors.find((e) => e.path === path);
    expect(hit?.message).toMatch(message);
  });

  it('rejects a measure alias that collides with another output', () => {
    const errors = errorsOf({ measures: [{ op: 'count', as: 'country' }], dimensions: ['country'] });
    expect(errors).toEqual([{ path: 'measures.0.as', message: expect.stringContaining('already has a column named "country"') }]);
    expect(
      errorsOf({
        measures: [
          { op: 'sum', field: 'qty' },
          { op: 'sum', field: 'qty' },
        ],
      })[0]!.path,
    ).toBe('measures.1');
  });

  it('lists every problem at once', () => {
    const errors = errorsOf({ measures: [{ op: 'sum', field: 'x' }], dimensions: ['y'], filters: [{ field: 'z', op: 'eq', value: 1 }] });
    expect(errors.map((e) => e.path).sort()).toEqual(['dimensions.0', 'filters.0.field', 'measures.0.field']);
  });

  it('refuses aliases that are not plain names at the schema', () => {
    expect(querySchema.safeParse({ sourceId: SRC, measures: [{ op: 'count', as: 'x" FROM t; --' }] }).success).toBe(false);
  });
});

describe('time zones, week starts and comparisons', () => {
  it('passes the zone as a parameter, never in the SQL, and starts weeks on the day asked', () => {
    const q = compile({ measures: [{ op: 'count' }], timeDimension: { field: 'ts', granularity: 'week', timezone: 'America/New_York', weekStartsOn: 0 } });
    expect(q.sql).not.toContain('New_York');
    expect(q.params).toContain('America/New_York');
    expect(q.sql).toContain("TIMESTAMP '2000-01-02'");
    // Monday is date_trunc's ISO week, in UTC the plain truncation of before.
    expect(compile({ measures: [{ op: 'count' }], timeDimension: { field: 'ts', granularity: 'week' } }).sql).toContain(`date_trunc('week', CAST("ts" AS TIMESTAMP))`);
  });

  it('reads from and to without an offset as local times in the zone', () => {
    const q = compile({
      measures: [{ op: 'count' }],
      timeDimension: { field: 'ts', granularity: 'day', timezone: 'Europe/Berlin', from: '2024-07-01', to: '2024-07-02T00:00:00Z' },
    });
    expect(q.params).toEqual(expect.arrayContaining(['2024-06-30 22:00:00.000', '2024-07-02 00:00:00.000']));
    expect(q.scan.ranges).toEqual([{ from: Date.parse('2024-06-30T22:00:00Z'), to: Date.parse('2024-07-02T00:00:00Z') }]);
  });

  it('adds the previous value and the changes after each measure, and reads both periods', () => {
    const q = compile({
      measures: [{ op: 'sum', field: 'amount', as: 'revenue' }],
      timeDimension: { field: 'ts', granularity: 'day', from: '2024-03-08T00:00:00Z', to: '2024-03-15T00:00:00Z' },
      compareTo: 'previousPeriod',
    });
    expect(q.columns.map((c) => c.name)).toEqual(['ts', 'revenue', 'revenue_previous', 'revenue_change', 'revenue_relativeChange']);
    expect(q.scan.ranges).toEqual([
      { from: Date.parse('2024-03-01T00:00:00Z'), to: Date.parse('2024-03-08T00:00:00Z') },
      { from: Date.parse('2024-03-08T00:00:00Z'), to: Date.parse('2024-03-15T00:00:00Z') },
    ]);
    expect(q.sql).toContain('FILTER (WHERE');
  });

  it('names compareTo when it has no range or overlaps it, and a name clash of the added columns', () => {
    expect(errorsOf({ measures: [{ op: 'count' }], compareTo: 'previousYear' })).toEqual([{ path: 'compareTo', message: expect.stringContaining('from and to') }]);
    const range = { field: 'ts', granularity: 'day', from: '2024-03-01T00:00:00Z', to: '2024-03-10T00:00:00Z' };
    expect(errorsOf({ measures: [{ op: 'count' }], timeDimension: range, compareTo: { from: '2024-03-09T00:00:00Z', to: '2024-03-12T00:00:00Z' } })).toEqual([
      { path: 'compareTo', message: expect.stringContaining('overlaps') },
    ]);
    expect(errorsOf({ measures: [{ op: 'count' }], timeDimension: range, compareTo: { from: 'last week', to: '2024-03-01T00:00:00Z' } })).toEqual([
      { path: 'compareTo.from', message: expect.stringContaining('ISO-8601') },
    ]);
    expect(errorsOf({ measures: [{ op: 'count' }, { op: 'count', field: 'qty', as: 'count_previous' }], timeDimension: range, compareTo: 'previousPeriod' })).toEqual([
      { path: 'measures.1.as', message: expect.stringContaining('"count_previous"') },
    ]);
    // Positive control: the same comparison without the clash compiles.
    expect(compile({ measures: [{ op: 'count' }], timeDimension: range, compareTo: 'previousPeriod' }).columns).toHaveLength(5);
  });

  it('refuses an unknown zone at the schema', () => {
    expect(querySchema.safeParse({ sourceId: SRC, measures: [{ op: 'count' }], timeDimension: { field: 'ts', granularity: 'day', timezone: 'Nowhere/Land' } }).success).toBe(false);
    expect(querySchema.safeParse({ sourceId: SRC, measures: [{ op: 'count' }], timeDimension: { field: 'ts', granularity: 'day', timezone: 'Asia/Kolkata' } }).success).toBe(true);
  });
});

describe('toUtcTimestamp', () => {
  it.each([
    ['2024-01-05', '2024-01-05 00:00:00.000'],
    ['2024-01-05T10:00:00Z', '2024-01-05 10:00:00.000'],
    ['2024-01-05T10:00:00', '2024-01-05 10:00:00.000'],
    ['2024-01-05 10:00', '2024-01-05 10:00:00.000'],
    ['2024-01-05T10:00:00.5+01:00', '2024-01-05 09:00:00.500'],
  ])('%s → %s', (input, out) => expect(toUtcTimestamp(input)).toBe(out));

  it.each(['', 'now', '2024-13-45', "2024-01-01'; --", '1704067200', '2024-01-01T10:00:00Zjunk'])('rejects %j', (input) => {
    expect(toUtcTimestamp(input)).toBeNull();
  });
});
