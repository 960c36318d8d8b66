/** Time buckets of a query result: where each ends, and whether the latest one is a whole period. */

const DAY_MS = 86_400_000;

/** Where the time bucket starting at `start` ends, for the query's granularity (weeks start on Monday, as the API's do). */
export function bucketEnd(start: Date, granularity: string | null): Date {
  const d = new Date(start.getTime());
  switch (granularity) {
    case 'hour':
      return new Date(d.getTime() + 3_600_000);
    case 'week':
      return new Date(d.getTime() + 7 * DAY_MS);
    case 'month':
      d.setUTCMonth(d.getUTCMonth() + 1);
      return d;
    case 'year':
      d.setUTCFullYear(d.getUTCFullYear() + 1);
      return d;
    default:
      return new Date(d.getTime() + DAY_MS);
  }
}

/** A time cell of a report (ISO, or DuckDB's `2025-03-09 00:00:00`, read as UTC when it names no offset). */
export const parseTime = (v: unknown): Date | null => {
  if (v === null || v === undefined) return null;
  const d = new Date(String(v).replace(' ', 'T') + (/[zZ]|[+-]\d\d:?\d\d$/.test(String(v)) ? '' : 'Z'));
  return Number.isNaN(d.getTime()) ? null : d;
};

/**
 * Whether the latest time bucket covers a period that has not ended (it holds "now") or that the query cut
 * short (its `to` bound falls inside it): its value is not comparable with the full periods before it.
 */
export function lastPeriodPartial(rows: Record<string, unknown>[], query: Record<string, unknown>, now = Date.now()): boolean {
  const td = query.timeDimension as { field?: unknown; granularity?: unknown; to?: unknown } | undefined;
  if (!td || typeof td.field !== 'string') return false;
  const starts = rows.map((r) => parseTime(r[td.field as string])).filter((d): d is Date => d !== null);
  if (starts.length === 0) return false;
  const last = new Date(Math.max(...starts.map((d) => d.getTime())));
  const end = bucketEnd(last, typeof td.granularity === 'string' ? td.granularity : null).getTime();
  const to = typeof td.to === 'string' ? Date.parse(td.to) : NaN;
  return end > now || (Number.isFinite(to) && to < end);
}
