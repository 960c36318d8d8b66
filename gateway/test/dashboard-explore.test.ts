import { ApiError } from '../dashboard/src/api/client.ts';
import { buildQuery, builderProblems, decodeBuilderState, exploreUrl, measureNames, nextMeasure, type BuilderState } from '../dashboard/src/explore-state.ts';
import { bucketEnd, lastPeriodPartial } from '../dashboard/src/periods.ts';

/** The dashboard's pure pieces behind Explore and its forms (the browser tests drive them end to end). */
const schema = [
  { name: 'country', type: 'string' as const },
  { name: 'amount', type: 'number' as const },
  { name: 'units', type: 'integer' as const },
  { name: 'at', type: 'timestamp' as const },
];
const base: BuilderState = {
  sourceId: 'src_1',
  measures: [{ op: 'count', field: '', as: '' }],
  dimensions: [],
  time: null,
  filters: [],
  order: null,
  limit: 1000,
};

describe('measure names', () => {
  it('gives each added measure a name of its own, and sends the suffixed ones as `as`', () => {
    let measures = base.measures;
    for (let i = 0; i < 3; i++) measures = [...measures, nextMeasure(measures, schema)];
    expect(measureNames(measures)).toEqual(['count', 'sum_amount', 'sum_units', 'sum_amount_2']);
    const q = buildQuery({ ...base, measures }, schema);
    expect(q.measures).toEqual([{ op: 'count' }, { op: 'sum', field: 'amount' }, { op: 'sum', field: 'units' }, { op: 'sum', field: 'amount', as: 'sum_amount_2' }]);
    expect(builderProblems({ ...base, measures })).toEqual([]);
  });

  it('flags two measures the customer gave the same name', () => {
    const measures = [
      { op: 'count' as const, field: '', as: 'n' },
      { op: 'sum' as const, field: 'amount', as: 'n' },
    ];
    expect(builderProblems({ ...base, measures })).toEqual([{ path: 'measures.1.as', message: expect.stringContaining('already named “n”') }]);
  });
});

describe('filters', () => {
  it('flags a filter with no value before the query is sent, but not one whose operator takes none', () => {
    const filters = [
      { field: 'country', op: 'eq' as const, value: '  ' },
      { field: 'country', op: 'in' as const, value: ' , ' },
      { field: 'country', op: 'isNull' as const, value: '' },
      { field: 'country', op: 'eq' as const, value: 'FR' },
    ];
    expect(builderProblems({ ...base, filters }).map((p) => p.path)).toEqual(['filters.0.value', 'filters.1.value']);
  });
});

describe('the query in the URL', () => {
  it('round-trips the builder through the URL, and refuses what is not a builder state', () => {
    const st: BuilderState = {
      ...base,
      measures: [{ op: 'sum', field: 'amount', as: 'revenue' }],
      dimensions: ['country'],
      time: { field: 'at', granularity: 'week', from: '2025-01-01', to: '', timezone: 'Europe/Berlin', compareTo: '' },
      filters: [{ field: 'country', op: 'in', value: 'FR, DE' }],
      order: { field: 'revenue', direction: 'asc' },
      limit: 50,
    };
    const url = new URL(exploreUrl(st, 'area'), 'http://x');
    expect(url.pathname).toBe('/analytics');
    expect(url.searchParams.get('chart')).toBe('area');
    expect(decodeBuilderState(url.searchParams.get('q'))).toEqual(st);
    expect(decodeBuilderState(null)).toBeNull();
    expect(decodeBuilderState('{"sourceId":')).toBeNull();
    expect(decodeBuilderState('{"sourceId":"src_1","measures":[]}')).toBeNull();
    // Unknown operators and out-of-range limits from a hand-edited link fall back to safe values.
    expect(decodeBuilderState('{"sourceId":"src_1","measures":[{"op":"drop"}],"limit":1e9,"time":{"field":"at","granularity":"decade"}}')).toMatchObject({
      measures: [{ op: 'count', field: '', as: '' }],
      limit: 1000,
      time: { field: 'at', granularity: 'day' },
    });
  });
});

describe('partial periods', () => {
  const now = Date.parse('2026-11-27T09:30:00Z');
  const query = (granularity: string, to?: string) => ({ timeDimension: { field: 'at', granularity, ...(to ? { to } : {}) } });
  it('marks the last bucket when its period has not ended, or the query cut it short', () => {
    const days = [{ at: '2026-11-25T00:00:00Z' }, { at: '2026-11-26 00:00:00' }, { at: '2026-11-27T00:00:00Z' }];
    expect(lastPeriodPartial(days, query('day'), now)).toBe(true);
    // Positive control: the same buckets, seen the day after, are whole.
    expect(lastPeriodPartial(days, query('day'), Date.parse('2026-11-28T00:00:00Z'))).toBe(false);
    expect(lastPeriodPartial(days.slice(0, 2), query('day'), now)).toBe(false);
    expect(lastPeriodPartial(days.slice(0, 2), query('day', '2026-11-26T12:00:00Z'), now)).toBe(true);
    expect(lastPeriodPartial([{ at: '2026-11-01T00:00:00Z' }], query('month'), now)).toBe(true);
    expect(lastPeriodPartial([{ at: '2026-10-01T00:00:00Z' }], query('month'), now)).toBe(false);
    expect(lastPeriodPartial(days, {}, now)).toBe(false);
  });

  it('ends buckets by the calendar', () => {
    expect(bucketEnd(new Date('2026-02-01T00:00:00Z'), 'month').toISOString()).toBe('2026-03-01T00:00:00.000Z');
    expect(bucketEnd(new Date('2026-11-23T00:00:00Z'), 'week').toISOString()).toBe('2026-11-30T00:00:00.000Z');
    expect(bucketEnd(new Date('2026-01-01T00:00:00Z'), 'year').toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(bucketEnd(new Date('2026-01-01T05:00:00Z'), 'hour').toISOString()).toBe('2026-01-01T06:00:00.000Z');
  });
});

describe('field errors', () => {
  const err = new ApiError({
    status: 400,
    code: 'validation_failed',
    title: 'Check the highlighted fields',
    detail: '',
    errors: [
      { path: 'email', message: 'Enter a valid email address' },
      { path: 'measures.0.field', message: 'Choose a field' },
    ],
  });
  it('drops a fixed field, keeps the others, and goes once every field is fixed', () => {
    const fixed = err.withField('email')!;
    expect(fixed.fieldErrors).toEqual([{ path: 'measures.0.field', message: 'Choose a field' }]);
    expect(fixed.withField('measures.0')).toBeNull();
    // Still wrong: the new message replaces the old one.
    expect(err.withField('email', 'Too long')!.fieldError('email')).toBe('Too long');
    // A field with no error leaves the error as it is (typing before the first submit adds nothing).
    expect(err.withField('password', 'Use at least 10 characters')).toBe(err);
  });
});
