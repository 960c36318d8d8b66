/** A one-line reading of a query: "count, sum(amount) by country, per day". */
export function describeQuery(q: Record<string, unknown>): string {
  const measures = Array.isArray(q.measures)
    ? (q.measures as { op?: string; field?: string; as?: string }[]).map((m) => m.as ?? (m.field ? `${m.op}(${m.field})` : m.op)).join(', ')
    : '?';
  const dims = Array.isArray(q.dimensions) && q.dimensions.length ? ` by ${(q.dimensions as string[]).join(', ')}` : '';
  const td = q.timeDimension as { field?: string; granularity?: string } | undefined;
  const time = td?.field ? `, per ${td.granularity} of ${td.field}` : '';
  const filters = Array.isArray(q.filters) && q.filters.length ? `, ${q.filters.length} filter${q.filters.length > 1 ? 's' : ''}` : '';
  return `${measures}${dims}${time}${filters}`;
}
