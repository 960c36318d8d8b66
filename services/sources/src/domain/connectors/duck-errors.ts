const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Native errors may come from another realm (jest's sandbox), so `instanceof Error` cannot be trusted. */
function messageOf(err: unknown): string {
  const m = (err as { message?: unknown } | null)?.message;
  return typeof m === 'string' ? m : String(err);
}

/** DuckDB errors start with their class, e.g. "Invalid Input Error: …" or "Conversion Error: …". */
export function isDuckError(err: unknown): boolean {
  return /^[A-Z][A-Za-z ]{0,40} Error: /.test(messageOf(err));
}

/**
 * DuckDB's messages name our files and append long advice; a client gets the reason, never our paths.
 * Any path under one of `roots` becomes "the uploaded file".
 */
export function duckReason(err: unknown, roots: readonly string[] = []): string {
  const line = csvLineReason(messageOf(err));
  if (line) return line;
  let msg = messageOf(err).replace(/\s*Possible (solutions|fixes):[\s\S]*$/, '');
  for (const root of roots) {
    if (root) msg = msg.replace(new RegExp(`"?${escapeRe(root)}[^\\s"']*"?`, 'g'), 'the uploaded file');
  }
  const lines: string[] = [];
  for (const raw of msg.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    if (/^(The search space|Possible fixes|Original Line|\*|Parser options|file\s*=|delimiter\s*=|LINE \d)/i.test(line)) break;
    lines.push(line.replace(/^[A-Z][A-Za-z ]{0,40} Error: /, ''));
    if (lines.length === 2) break;
  }
  return (lines.join(' ') || 'the data could not be read').slice(0, 500);
}

const CSV_LINE = /CSV Error on Line: (\d+)/;

/** DuckDB's CSV reader stopped at a line it could not read (its message names the line). */
export function isCsvLineError(err: unknown): boolean {
  return CSV_LINE.test(messageOf(err));
}

/** What DuckDB says is wrong with a CSV line, in the customer's words; its message's wording is matched, never echoed. */
const CSV_LINE_REASONS: ReadonlyArray<[RegExp, (m: RegExpExecArray) => string]> = [
  [/unterminated quote/i, () => 'a quoted value is never closed'],
  [/Expected Number of Columns: (\d+) Found: (\d+)/i, (m) => `it has ${m[2]} fields where the header has ${m[1]}`],
  [/Invalid unicode/i, () => 'it is not valid UTF-8 text'],
  [/Maximum line size of (\d+) bytes exceeded/i, (m) => `it is longer than the limit of ${m[1]} bytes`],
];

/**
 * "line N: <reason>" for a CSV reader error. The message also quotes the offending line (the customer's
 * data, which an error must not carry into responses and logs), so only a known reason is put into words;
 * any other is reported by its line number alone.
 */
function csvLineReason(msg: string): string | null {
  const at = CSV_LINE.exec(msg);
  if (!at) return null;
  for (const [re, say] of CSV_LINE_REASONS) {
    const m = re.exec(msg);
    if (m) return `line ${at[1]}: ${say(m)}`;
  }
  return `line ${at[1]} could not be read`;
}
