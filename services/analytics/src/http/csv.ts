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

/** RFC 4180 CSV: a header row, then one CRLF-terminated line per row. */
export function toCsv(columns: readonly { name: string }[], rows: readonly Cell[][]): string {
  const lines = [columns.map((c) => field(c.name)).join(',')];
  for (const row of rows) lines.push(columns.map((_c, i) => field(row[i] ?? null)).join(','));
  return lines.join('\r\n') + '\r\n';
}
