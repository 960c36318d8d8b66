import { bucketLabel, fillGaps, futureDates, seriesQuery, toSeries, type SeriesSpec } from '../dashboard/src/source-series.ts';

/** The series a forecast or anomaly check takes from a source (the browser test drives it end to end). */
const spec: SeriesSpec = { sourceId: 'src_1', timeField: 'at', column: 'amount', op: 'sum', granularity: 'day', buckets: 100 };
const NOW = Date.parse('2025-03-10T12:00:00Z');

describe('the query', () => {
  it('asks for one measure per UTC bucket, newest first, one bucket more than kept (the running one may be dropped)', () => {
    expect(seriesQuery(spec)).toEqual({
      sourceId: 'src_1',
      measures: [{ op: 'sum', field: 'amount', as: 'value' }],
      dimensions: [],
      timeDimension: { field: 'at', granularity: 'day', timezone: 'UTC', weekStartsOn: 1 },
      filters: [],
      orderBy: [{ field: 'at', direction: 'desc' }],
      limit: 101,
    });
    expect(seriesQuery({ ...spec, op: 'count' }).measures).toEqual([{ op: 'count', as: 'value' }]);
  });
});

describe('rows to a regular series', () => {
  it('orders the buckets, fills a missing day with 0 for a sum, and drops the day still running', () => {
    const rows = [
      { at: '2025-03-10 00:00:00', value: 99 }, // today: partial
      { at: '2025-03-09 00:00:00', value: 7 },
      { at: '2025-03-06T00:00:00Z', value: 3 },
      { at: '2025-03-07 00:00:00', value: '5' },
    ];
    const s = toSeries(rows, spec, NOW);
    expect(s.dates).toEqual(['2025-03-06T00:00:00.000Z', '2025-03-07T00:00:00.000Z', '2025-03-08T00:00:00.000Z', '2025-03-09T00:00:00.000Z']);
    expect(s.values).toEqual([3, 5, 0, 7]);
    expect(s).toMatchObject({ filled: 1, droppedPartial: true });
  });

  it('interpolates a gap for an average, keeps a finished last bucket, and keeps only the newest buckets', () => {
    const rows = [
      { at: '2025-03-01', value: 10 },
      { at: '2025-03-04', value: 40 },
      { at: '2025-03-05', value: 50 },
    ];
    const s = toSeries(rows, { ...spec, op: 'avg', buckets: 4 }, NOW);
    expect(s.dates.map((d) => d.slice(0, 10))).toEqual(['2025-03-02', '2025-03-03', '2025-03-04', '2025-03-05']);
    expect(s.values).toEqual([20, 30, 40, 50]);
    expect(s).toMatchObject({ filled: 2, droppedPartial: false });
  });

  it('steps months by the calendar, and drops the month still running', () => {
    const rows = [
      { at: '2024-12-01', value: 1 },
      { at: '2025-02-01', value: 3 },
      { at: '2025-03-01', value: 9 },
    ];
    const s = toSeries(rows, { ...spec, granularity: 'month' }, NOW);
    expect(s.dates.map((d) => bucketLabel(d, 'month'))).toEqual(['2024-12', '2025-01', '2025-02']);
    expect(s.values).toEqual([1, 0, 3]);
    expect(s.droppedPartial).toBe(true);
  });

  it('fills edges with the nearest known value', () => {
    expect(fillGaps([null, 2, null, 6, null], false)).toEqual({ values: [2, 2, 4, 6, 6], filled: 3 });
    expect(fillGaps([null, 2, null], true)).toEqual({ values: [0, 2, 0], filled: 2 });
  });
});

describe('dates', () => {
  it('gives the periods after the last bucket, and labels them at their granularity', () => {
    expect(futureDates('2025-01-01T00:00:00.000Z', 'month', 2)).toEqual(['2025-02-01T00:00:00.000Z', '2025-03-01T00:00:00.000Z']);
    expect(futureDates('2025-03-09T00:00:00.000Z', 'day', 2)).toEqual(['2025-03-10T00:00:00.000Z', '2025-03-11T00:00:00.000Z']);
    expect(futureDates('2025-03-03T00:00:00.000Z', 'week', 1)).toEqual(['2025-03-10T00:00:00.000Z']);
    expect(bucketLabel('2025-03-09T14:00:00.000Z', 'hour')).toBe('2025-03-09 14:00');
    expect(bucketLabel('2025-03-09T00:00:00.000Z', 'week')).toBe('2025-03-09');
    expect(bucketLabel('2025-03-01T00:00:00.000Z', 'year')).toBe('2025');
  });
});
