import type { AnalyticsQuery } from '@dap/contracts';
import { addYears, instantOf, parseInstant, wallOf } from './time-zone.ts';

/**
 * The period a query compares with, as UTC instants, and how its rows move onto the current period's buckets:
 * by whole years of local calendar (`previousYear`), or by a wall-clock duration in milliseconds.
 */
export type ComparedPeriod = { from: number; to: number; shiftYears: number; shiftMs: number } | { path: string; error: string };

export function comparedPeriod(compareTo: NonNullable<AnalyticsQuery['compareTo']>, current: { from: number; to: number }, timeZone: string): ComparedPeriod {
  const wallFrom = wallOf(current.from, timeZone);
  const wallTo = wallOf(current.to, timeZone);
  let period: { from: number; to: number; shiftYears: number; shiftMs: number };
  if (compareTo === 'previousPeriod') {
    // As long as the range on the wall clock (a week is seven local days even across a daylight-saving change).
    const length = wallTo - wallFrom;
    period = { from: instantOf(wallFrom - length, timeZone), to: current.from, shiftYears: 0, shiftMs: length };
  } else if (compareTo === 'previousYear') {
    period = { from: instantOf(addYears(wallFrom, -1), timeZone), to: instantOf(addYears(wallTo, -1), timeZone), shiftYears: 1, shiftMs: 0 };
  } else {
    const from = parseInstant(compareTo.from, timeZone);
    const to = parseInstant(compareTo.to, timeZone);
    if (from === null) return { path: 'compareTo.from', error: `must be an ISO-8601 time such as 2024-01-31T00:00:00Z (without an offset, a local time in ${timeZone})` };
    if (to === null) return { path: 'compareTo.to', error: `must be an ISO-8601 time such as 2024-01-31T00:00:00Z (without an offset, a local time in ${timeZone})` };
    if (from >= to) return { path: 'compareTo.to', error: 'to must be later than from (from is inclusive, to exclusive)' };
    period = { from, to, shiftYears: 0, shiftMs: wallFrom - wallOf(from, timeZone) };
  }
  // A row in both periods would be counted in one of them only.
  if (period.from < current.to && current.from < period.to) {
    return { path: 'compareTo', error: "the compared period overlaps the query's range (timeDimension.from to to); compare with a period that does not overlap it" };
  }
  return period;
}
