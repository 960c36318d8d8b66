import type { Cell } from '@dap/datasets';

const NEEDS_QUOTES = /[",\r\n]|^\s|\s$/;
/** Cells a spreadsheet would run as a formula (CSV injection); they get a leading apostrophe. */
const FORMULA_START = /^[=+\-@\t\r]/;

function field(v: Cell): string {
  if (v === null) return '';
  if (typeof v !== 'string') return String(v);
  const s = FORMULA_START.test(v) ? `'${v}` : v;
  return NEEDS_QUOTES.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** A number column's cell that comes as exact digits (an integer past 2^53, a decimal a double cannot hold): a number, not text to neutralise. */
const EXACT_NUMBER: Readonly<Record<string, RegExp>> = Object.freeze({ integer: /^-?\d+$/, number: /^-?\d+(?:\.\d+)?$/ });

/** The CSV header line of a result. */
export function csvHeader(columns: readonly { name: string }[]): string {
  return columns.map((c) => field(c.name)).join(',') + '\r\n';
}

/** CSV lines for rows of a result, each CRLF-terminated. */
export function csvRows(columns: readonly { name: string; type?: string }[], rows: readonly Cell[][]): string {
  const exact = columns.map((c) => (c.type ? EXACT_NUMBER[c.type] : undefined));
  const cell = (v: Cell, i: number) => {
    const re = exact[i];
    return re && typeof v === 'string' && re.test(v) ? v : field(v);
  };
  let out = '';
  for (const row of rows) out += columns.map((_c, i) => cell(row[i] ?? null, i)).join(',') + '\r\n';
  return out;
}

/** RFC 4180 CSV: a header row, then one CRLF-terminated line per row. */
export function toCsv(columns: readonly { name: string; type?: string }[], rows: readonly Cell[][]): string {
  return csvHeader(columns) + csvRows(columns, rows);
}
