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

/** An integer past 2^53 comes as its exact digits (see exactInteger): a number, not text to neutralise. */
const EXACT_INTEGER = /^-?\d+$/;

/** RFC 4180 CSV: a header row, then one CRLF-terminated line per row. */
export function toCsv(columns: readonly { name: string; type?: string }[], rows: readonly Cell[][]): string {
  const lines = [columns.map((c) => field(c.name)).join(',')];
  const integer = columns.map((c) => c.type === 'integer');
  const cell = (v: Cell, i: number) => (integer[i] && typeof v === 'string' && EXACT_INTEGER.test(v) ? v : field(v));
  for (const row of rows) lines.push(columns.map((_c, i) => cell(row[i] ?? null, i)).join(','));
  return lines.join('\r\n') + '\r\n';
}
