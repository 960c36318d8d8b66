/**
 * The golden dataset and a plain-TypeScript reference for every measure, granularity and filter, computed
 * independently of DuckDB so the integration test can compare the API's numbers against it.
 */

export type Cell = string | number | boolean | null;
export interface GoldenRow {
  id: number;
  country: string | null;
  status: string;
  amount: number | null;
  qty: number;
  paid: boolean;
  ts: string;
}

const COUNTRIES = ['DE', 'FR', 'US', 'UK', null] as const;
const STATUSES = ['paid', 'pending', 'refunded', 'paid_late'] as const;

/** 80 deterministic rows spanning Dec 2023 to Feb 2025, with nulls in country and amount. */
export function goldenRows(): GoldenRow[] {
  let seed = 20240101;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const base = Date.UTC(2023, 11, 29, 22, 0, 0);
  const rows: GoldenRow[] = [];
  for (let i = 0; i < 80; i++) {
    const minutes = Math.floor(rnd() * 60);
    const t = new Date(base + i * 127 * 3_600_000 + minutes * 60_000);
    rows.push({
      id: i + 1,
      country: COUNTRIES[Math.floor(rnd() * COUNTRIES.length)] ?? null,
      status: STATUSES[Math.floor(rnd() * STATUSES.length)]!,
      amount: i % 7 === 3 ? null : Math.round(rnd() * 100_000) / 100 + 0.25,
      qty: Math.floor(rnd() * 10),
      paid: rnd() < 0.6,
      ts: t.toISOString().replace('.000Z', 'Z'),
    });
  }
  return rows;
}

export type Granularity = 'hour' | 'day' | 'week' | 'month' | 'year';

/** UTC truncation; weeks start on Monday (ISO), like DuckDB's date_trunc. */
export function truncate(iso: string, g: Granularity): string {
  const d = new Date(iso);
  const [y, m, day, h] = [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours()];
  switch (g) {
    case 'hour':
      return new Date(Date.UTC(y, m, day, h)).toISOString();
    case 'day':
      return new Date(Date.UTC(y, m, day)).toISOString();
    case 'week': {
      const back = (d.getUTCDay() + 6) % 7;
      return new Date(Date.UTC(y, m, day - back)).toISOString();
    }
    case 'month':
      return new Date(Date.UTC(y, m, 1)).toISOString();
    case 'year':
      return new Date(Date.UTC(y, 0, 1)).toISOString();
  }
}

type Field = keyof GoldenRow;
const values = (rows: GoldenRow[], f: Field) => rows.map((r) => r[f]).filter((v): v is NonNullable<typeof v> => v !== null);
const numbers = (rows: GoldenRow[], f: Field) => values(rows, f) as number[];

/** Linear interpolation between the closest ranks (DuckDB quantile_cont, numpy's default). */
export function quantile(xs: number[], q: number): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

export const MEASURES = {
  count: (rows: GoldenRow[]) => rows.length,
  count_amount: (rows: GoldenRow[]) => values(rows, 'amount').length,
  countDistinct_country: (rows: GoldenRow[]) => new Set(values(rows, 'country')).size,
  sum_amount: (rows: GoldenRow[]) => (numbers(rows, 'amount').length ? numbers(rows, 'amount').reduce((a, b) => a + b, 0) : null),
  sum_qty: (rows: GoldenRow[]) => numbers(rows, 'qty').reduce((a, b) => a + b, 0),
  avg_amount: (rows: GoldenRow[]) => {
    const xs = numbers(rows, 'amount');
    return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
  },
  min_amount: (rows: GoldenRow[]) => (numbers(rows, 'amount').length ? Math.min(...numbers(rows, 'amount')) : null),
  max_qty: (rows: GoldenRow[]) => Math.max(...numbers(rows, 'qty')),
  min_ts: (rows: GoldenRow[]) => new Date(Math.min(...rows.map((r) => Date.parse(r.ts)))).toISOString(),
  max_status: (rows: GoldenRow[]) => [...values(rows, 'status')].sort().at(-1) ?? null,
  median_amount: (rows: GoldenRow[]) => quantile(numbers(rows, 'amount'), 0.5),
  p90_amount: (rows: GoldenRow[]) => quantile(numbers(rows, 'amount'), 0.9),
  p99_qty: (rows: GoldenRow[]) => quantile(numbers(rows, 'qty'), 0.99),
} as const;

/** The DSL measures matching MEASURES: each key is a measure's default alias, `op` or `op_field`. */
export const MEASURE_DSL = Object.keys(MEASURES).map((alias) => {
  const [op, field] = alias.split('_') as [string, string | undefined];
  return field === undefined ? { op } : { op, field };
});

export function measureRow(rows: GoldenRow[]): Record<string, Cell> {
  return Object.fromEntries(Object.entries(MEASURES).map(([k, f]) => [k, f(rows)]));
}

/** Groups with keys in ascending order, nulls last (what the API's default order gives). */
export function groupRows<K extends Cell>(rows: GoldenRow[], key: (r: GoldenRow) => K): [K, GoldenRow[]][] {
  const groups = new Map<K, GoldenRow[]>();
  for (const r of rows) groups.set(key(r), [...(groups.get(key(r)) ?? []), r]);
  return [...groups].sort(([a], [b]) => (a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1));
}

/** Reference semantics of each filter operator; ne and notIn keep rows whose field is null. */
export const FILTER_CASES: { name: string; filter: Record<string, unknown>; keep: (r: GoldenRow) => boolean }[] = [
  { name: 'eq string', filter: { field: 'country', op: 'eq', value: 'DE' }, keep: (r) => r.country === 'DE' },
  { name: 'eq boolean', filter: { field: 'paid', op: 'eq', value: true }, keep: (r) => r.paid },
  { name: 'eq time', filter: { field: 'ts', op: 'eq', value: goldenRows()[5]!.ts }, keep: (r) => r.ts === goldenRows()[5]!.ts },
  { name: 'ne (nulls kept)', filter: { field: 'country', op: 'ne', value: 'DE' }, keep: (r) => r.country !== 'DE' },
  { name: 'gt number', filter: { field: 'amount', op: 'gt', value: 500 }, keep: (r) => r.amount !== null && r.amount > 500 },
  { name: 'gte integer', filter: { field: 'qty', op: 'gte', value: 7 }, keep: (r) => r.qty >= 7 },
  { name: 'lt time', filter: { field: 'ts', op: 'lt', value: '2024-06-01T00:00:00Z' }, keep: (r) => Date.parse(r.ts) < Date.parse('2024-06-01T00:00:00Z') },
  { name: 'lte string', filter: { field: 'status', op: 'lte', value: 'paid_late' }, keep: (r) => r.status <= 'paid_late' },
  { name: 'in', filter: { field: 'country', op: 'in', value: ['FR', 'UK'] }, keep: (r) => r.country === 'FR' || r.country === 'UK' },
  { name: 'in numbers', filter: { field: 'qty', op: 'in', value: [0, 3, 9] }, keep: (r) => [0, 3, 9].includes(r.qty) },
  { name: 'notIn (nulls kept)', filter: { field: 'country', op: 'notIn', value: ['DE', 'US'] }, keep: (r) => r.country !== 'DE' && r.country !== 'US' },
  { name: 'contains', filter: { field: 'status', op: 'contains', value: 'aid' }, keep: (r) => r.status.includes('aid') },
  { name: 'contains is case-sensitive', filter: { field: 'status', op: 'contains', value: 'PAID' }, keep: () => false },
  { name: 'startsWith', filter: { field: 'status', op: 'startsWith', value: 'pa' }, keep: (r) => r.status.startsWith('pa') },
  { name: 'isNull', filter: { field: 'amount', op: 'isNull' }, keep: (r) => r.amount === null },
  { name: 'isNotNull', filter: { field: 'country', op: 'isNotNull' }, keep: (r) => r.country !== null },
  {
    name: 'nested and/or',
    filter: {
      or: [
        {
          and: [
            { field: 'country', op: 'eq', value: 'DE' },
            { field: 'qty', op: 'lt', value: 5 },
          ],
        },
        {
          and: [
            { field: 'status', op: 'startsWith', value: 'ref' },
            {
              or: [
                { field: 'paid', op: 'eq', value: false },
                { field: 'amount', op: 'isNull' },
              ],
            },
          ],
        },
      ],
    },
    keep: (r) => (r.country === 'DE' && r.qty < 5) || (r.status.startsWith('ref') && (!r.paid || r.amount === null)),
  },
];
