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
