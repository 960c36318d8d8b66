import { dailySeries, hourStartOf, seriesStart } from './usage.repository.ts';

const at = (iso: string) => new Date(iso);

describe('usage buckets', () => {
  it('truncates to the UTC hour', () => {
    expect(hourStartOf(at('2025-03-09T23:59:59.999Z')).toISOString()).toBe('2025-03-09T23:00:00.000Z');
    expect(hourStartOf(at('2025-03-10T00:00:00.000Z')).toISOString()).toBe('2025-03-10T00:00:00.000Z');
  });

  it('starts a 30-day series at midnight UTC 29 days before today', () => {
    expect(seriesStart(at('2025-03-01T15:30:00Z'), 30).toISOString()).toBe('2025-01-31T00:00:00.000Z');
  });

  it('sums hours into UTC days, fills missing days with zeros, oldest first and today last', () => {
    const now = at('2025-03-01T15:30:00Z');
    const series = dailySeries(
      [
        { hour: at('2025-03-01T00:00:00Z'), requests: 5, rejected: 1 },
        { hour: at('2025-03-01T15:00:00Z'), requests: 2, rejected: 0 },
        { hour: at('2025-02-28T23:00:00Z'), requests: 7, rejected: 3 }, // 2025 is no leap year: the day before March 1st
        { hour: at('2025-01-31T00:00:00Z'), requests: 1, rejected: 0 },
      ],
      now,
      30,
    );
    expect(series).toHaveLength(30);
    expect(series[0]).toEqual({ date: '2025-01-31', requests: 1, rejected: 0 });
    expect(series[1]).toEqual({ date: '2025-02-01', requests: 0, rejected: 0 });
    expect(series[28]).toEqual({ date: '2025-02-28', requests: 7, rejected: 3 });
    expect(series[29]).toEqual({ date: '2025-03-01', requests: 7, rejected: 1 });
    const dates = series.map((d) => d.date);
    expect([...dates].sort()).toEqual(dates);
    expect(new Set(dates).size).toBe(30);
  });

  it('ignores hours outside the series', () => {
    const series = dailySeries([{ hour: at('2025-01-30T23:00:00Z'), requests: 9, rejected: 9 }], at('2025-03-01T00:00:00Z'), 30);
    expect(series.every((d) => d.requests === 0 && d.rejected === 0)).toBe(true);
  });
});
