/**
 * Timestamp formats recognised in text columns, beyond what DuckDB's own detection reads: ISO-8601 with mixed
 * precision or offsets, `2024/01/02`, `01/02/2024 03:04` (month first unless a day above 12 proves otherwise),
 * `02.01.2024`. A column becomes a timestamp only when every value matches one family.
 */
export type TimestampFamily = 'iso' | 'ymd' | 'mdy' | 'dmy' | 'dmyDot';

const TIME = '( \\d{1,2}:\\d{2}(:\\d{2}(\\.\\d{1,6})?)?)?';

function strptimeFamily(date: string, pattern: string) {
  const formats = [`${date} %H:%M:%S.%f`, `${date} %H:%M:%S`, `${date} %H:%M`, date].map((f) => `'${f}'`).join(', ');
  return { pattern, test: new RegExp(`^${pattern}$`), expr: (col: string) => `try_strptime(${col}, [${formats}])` };
}

export const TIMESTAMP_FAMILIES: Record<TimestampFamily, { pattern: string; test: RegExp; expr: (col: string) => string }> = {
  iso: {
    pattern: '\\d{4}-\\d{2}-\\d{2}([T ]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?)? ?([Zz]|[+-]\\d{2}(:?\\d{2})?)?',
    test: /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)? ?([Zz]|[+-]\d{2}(:?\d{2})?)?$/,
    // The loader's session is UTC, so a value without an offset is read as UTC.
    expr: (col) => `timezone('UTC', TRY_CAST(${col} AS TIMESTAMPTZ))`,
  },
  ymd: strptimeFamily('%Y/%m/%d', `\\d{4}/\\d{1,2}/\\d{1,2}${TIME}`),
  mdy: strptimeFamily('%m/%d/%Y', `\\d{1,2}/\\d{1,2}/\\d{4}${TIME}`),
  dmy: strptimeFamily('%d/%m/%Y', `\\d{1,2}/\\d{1,2}/\\d{4}${TIME}`),
  dmyDot: strptimeFamily('%d.%m.%Y', `\\d{1,2}\\.\\d{1,2}\\.\\d{4}${TIME}`),
};

/** The families every sampled value fits, most likely first; empty when the column is not timestamp-like. */
export function detectTimestampFamily(values: readonly string[]): TimestampFamily[] {
  if (!values.length) return [];
  const all = (f: TimestampFamily) => values.every((v) => TIMESTAMP_FAMILIES[f].test.test(v));
  if (all('iso')) return ['iso'];
  if (all('ymd')) return ['ymd'];
  if (all('dmyDot')) return ['dmyDot'];
  if (all('mdy')) {
    const dayFirst = values.some((v) => Number(v.split('/')[0]) > 12);
    return dayFirst ? ['dmy'] : ['mdy', 'dmy'];
  }
  return [];
}
