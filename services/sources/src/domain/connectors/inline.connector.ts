import type { UploadConnector } from './connector.ts';
import { checkColumnCount, type Row } from './rows.ts';

const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** Parses an ISO-8601 date or date-time; one without an offset is UTC (never the server's zone). */
export function parseIsoTimestamp(value: string): { ms: number; hasTime: boolean } | null {
  const m = ISO_TIMESTAMP.exec(value);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const month = Number(mo);
  const day = Number(d);
  const date = Date.UTC(Number(y), month - 1, day);
  if (month < 1 || month > 12 || day < 1 || new Date(date).getUTCDate() !== day) return null;
  if (h === undefined) return { ms: date, hasTime: false };
  const iso = `${y}-${mo}-${d}T${h}:${mi}:${s ?? '00'}.${(frac ?? '0').slice(0, 3).padEnd(3, '0')}${zone ?? 'Z'}`;
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return null;
  return { ms, hasTime: true };
}

/**
 * DuckDB detects one timestamp format per JSON column, so `…T10:00:00Z` beside `…T10:00:00.5Z` would stay a
 * string. A column whose every value is an ISO date-time is rewritten to one canonical UTC form (millisecond
 * precision); date-only columns are left alone, since DuckDB reads those as dates already.
 */
export function normalizeTimestamps(rows: readonly Row[]): Row[] {
  const candidates = new Map<string, boolean>(); // column → has a time part; absent or deleted = not a timestamp column
  const rejected = new Set<string>();
  for (const row of rows) {
    for (const [k, v] of Object.entries(row)) {
      if (v === null || rejected.has(k)) continue;
      const parsed = typeof v === 'string' ? parseIsoTimestamp(v) : null;
      if (!parsed) {
        rejected.add(k);
        candidates.delete(k);
        continue;
      }
      candidates.set(k, (candidates.get(k) ?? false) || parsed.hasTime);
    }
  }
  const columns = [...candidates].filter(([, hasTime]) => hasTime).map(([k]) => k);
  if (!columns.length) return rows as Row[];
  return rows.map((row) => {
    const out: Row = { ...row };
    for (const k of columns) {
      const v = out[k];
      if (typeof v === 'string') out[k] = new Date(parseIsoTimestamp(v)!.ms).toISOString();
    }
    return out;
  });
}

/** One JSON object per line: the format `DatasetStore.ingest` reads as NDJSON. */
export function toNdjson(rows: readonly Row[]): string {
  return (
    normalizeTimestamps(rows)
      .map((r) => JSON.stringify(r))
      .join('\n') + '\n'
  );
}

export const inlineConnector: UploadConnector<'inline'> = {
  type: 'inline',
  mode: 'upload',
  async check(body) {
    checkColumnCount(body.rows, 'rows');
  },
  async stage(body, ctx) {
    await ctx.store.stage(ctx.accountId, ctx.sourceId, 'ndjson', toNdjson(body.rows));
    return 'ndjson';
  },
};
