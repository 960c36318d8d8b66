import { sqlIdent as id, sqlLiteral as q } from '@dap/datasets';

/**
 * Strict reading of the column types DuckDB's CSV sniffer guessed from a sample.
 *
 * DuckDB's casts are lenient where its sniffer is not. A later value that contradicts the sampled type is
 * changed without an error: in a BIGINT column `9.5` → 10, `1e3` → 1000, `007` → 7, `0x10` → 16; in a
 * BOOLEAN column `1`/`0`/`y`/`n` → true/false; in a TIMESTAMP column an offset (`+02:00`, `-05`) is
 * dropped; in a DOUBLE column an integer past 2^53 is rounded and `1e400` becomes inf. So the loader reads:
 *
 * - integer and boolean columns as text, cast in the SELECT with a cheap check that the cast keeps the
 *   value: the integer's own canonical text, a boolean the sniffer knows (true/false, t/f, yes/no);
 * - number columns as DOUBLE, checked for a magnitude at which a double may no longer hold the text
 *   exactly (|x| ≥ 2^53, inf, NaN: rare, and then the text decides);
 * - timestamp columns without a strptime format as TIMESTAMP_NS, whose cast applies an offset (the
 *   TIMESTAMP cast drops it); a value outside its range (about 1677–2262) fails the read, and the loader
 *   then reads them as text checked for offsets ('timestamp' below);
 * - DATE, formatted TIMESTAMP (strptime) and TIMESTAMPTZ columns as they are: a contradicting value already
 *   fails the read.
 *
 * A value that fails a check stops the COPY with STRICT_ERROR; the loader then measures every value as text
 * (fitQuery) and reads again with each column's exact type (widen), no check left. A value no cast takes
 * (`abc`) fails the check too in a column read as text; in a number column it fails DuckDB's own read, and
 * the loader sniffs the whole file instead.
 */
export type StrictKind = 'integer' | 'number' | 'boolean' | 'timestamp';

/** A column as the loader reads it: the reader's type, and the check that guards its value. */
export interface ReadColumn {
  name: string;
  /** The type DuckDB's reader gives the column. */
  type: string;
  /** Set when the value is checked in the SELECT (and, but for numbers, cast there from text). */
  kind: StrictKind | null;
}

/** The message of the error a failed check raises; its absence from an error means DuckDB raised it. */
export const STRICT_ERROR = 'dap-strict: a value does not fit its sampled column type';

const TARGET: Record<StrictKind, string> = { integer: 'BIGINT', number: 'DOUBLE', boolean: 'BOOLEAN', timestamp: 'TIMESTAMP' };

/** 2^53: every integer below it is exact as a double; 16 digits is the shortest text that can exceed it. */
const EXACT_DOUBLE = 9007199254740992;
const EXACT_DOUBLE_DIGITS = 16;

export function isStrictError(err: unknown): boolean {
  const m = (err as { message?: unknown } | null)?.message;
  return typeof m === 'string' && m.includes(STRICT_ERROR);
}

/**
 * How each sniffed column is read. `textTimestamps`: unformatted timestamps as checked text rather than
 * TIMESTAMP_NS (after a read failed, possibly on a timestamp outside TIMESTAMP_NS's range).
 */
export function readColumns(columns: readonly { name: string; type: string }[], timestampFormat: string | null, textTimestamps: boolean): ReadColumn[] {
  return columns.map(({ name, type }) => {
    if (type === 'BIGINT') return { name, type: 'VARCHAR', kind: 'integer' };
    if (type === 'BOOLEAN') return { name, type: 'VARCHAR', kind: 'boolean' };
    if (type === 'DOUBLE') return { name, type: 'DOUBLE', kind: 'number' };
    if (type === 'TIMESTAMP' && !timestampFormat) return textTimestamps ? { name, type: 'VARCHAR', kind: 'timestamp' } : { name, type: 'TIMESTAMP_NS', kind: null };
    return { name, type, kind: null };
  });
}

/**
 * A number's text `v` is held by its double `x`: it did not overflow to inf (the text `inf` is fine), and an
 * integer of 16 digits or more is exact. (Like `0.1`, any other value is the nearest double.)
 */
function numberTextKeeps(v: string, x: string): string {
  return `(NOT isinf(${x}) OR NOT regexp_matches(${v}, '[0-9]'))
    AND (strlen(${v}) < ${EXACT_DOUBLE_DIGITS} OR NOT regexp_full_match(trim(${v}), '[+-]?[0-9]+') OR TRY_CAST(${v} AS HUGEINT) = TRY_CAST(${x} AS HUGEINT))`;
}

/**
 * When the value keeps its meaning as `kind`, as SQL conditions any one of which is enough: `v` is what the
 * reader gives (text, or the double for a number), `x` the value cast to the kind's type (NULL when the
 * cast refused it). Only for a value that is not NULL. The first condition settles the common value; the
 * others are separate WHENs of a CASE, so only the values the first one did not settle reach them (in one
 * OR, DuckDB spent ~25 ms more on the bench's 2M-row CSV, whose every value the first one settles).
 */
export function keepsSql(kind: StrictKind, v: string, x: string): string[] {
  switch (kind) {
    // The canonical text of the integer (spaces around it and `-0` aside, as the sniffer takes them): no
    // fraction, exponent, hex, underscore, `+` or leading zero.
    case 'integer':
      return [`CAST(${x} AS VARCHAR) = ${v}`, `CAST(${x} AS VARCHAR) = trim(${v}) OR trim(${v}) = '-0'`];
    // Below 2^53 a double is exact for every integer, and no text can have overflowed to it (NaN fails too).
    case 'number':
      return [`abs(${x}) < ${EXACT_DOUBLE}`];
    // The sniffer's booleans: true/false, t/f, yes/no in any case; the cast also takes 1/0/y/n.
    case 'boolean':
      return [`strlen(${v}) > 1 AND ${x} IS NOT NULL`, `${x} IS NOT NULL AND ${v} IN ('t', 'f', 'T', 'F')`];
    // No offset, which the TIMESTAMP cast drops ('Z' is fine: a value without an offset is UTC too).
    case 'timestamp':
      return [`${x} IS NOT NULL AND NOT contains(${v}, '+') AND ${v} NOT LIKE '%-%-%-%'`];
  }
}

/** `WHEN … THEN result` for each of the conditions. */
const whens = (conditions: string[], result: string) => conditions.map((c) => `WHEN ${c} THEN ${result}`).join(' ');

/**
 * The COPY's SELECT list and its inner one: the reader's columns renamed by position (`c0`, `c1`…), each
 * checked text column with its cast beside it (`x0`…), then every column under its own name, a checked one
 * as `CASE WHEN keeps THEN x WHEN c IS NULL THEN NULL ELSE error(…) END` (the common value settles at the
 * first test). `normalize(column, from)` gives the other columns' expressions.
 */
export function strictSelect(columns: readonly ReadColumn[], normalize: (c: { name: string; type: string }, from: string) => string): { inner: string; outer: string } {
  // A number column is read as DOUBLE already: its value is its own cast.
  const cast = (c: ReadColumn, i: number) => (c.kind === 'number' ? `c${i}` : `x${i}`);
  const inner = columns.map((c, i) => (c.kind && c.kind !== 'number' ? `${id(c.name)} AS c${i}, TRY_CAST(${id(c.name)} AS ${TARGET[c.kind]}) AS x${i}` : `${id(c.name)} AS c${i}`));
  const outer = columns.map((c, i) =>
    c.kind
      ? `CASE ${whens(keepsSql(c.kind, `c${i}`, cast(c, i)), cast(c, i))} WHEN c${i} IS NULL THEN NULL ELSE error(${q(STRICT_ERROR)}) END AS ${id(c.name)}`
      : normalize(c, `c${i}`),
  );
  return { inner: inner.join(', '), outer: outer.join(', ') };
}

/**
 * One aggregate over the file read as text, one figure per checked column: the OR of each value's flags,
 * 1 when the value is not exact as the column's kind, 2 when it is not exact as its widening (an integer
 * column as numbers, where a leading zero, a `+` or an underscore, text to the sniffer, and an integer a
 * double cannot hold do not fit; a timestamp column with offsets as TIMESTAMPTZ). `from` is the reader with
 * every column as VARCHAR.
 */
export function fitQuery(columns: readonly ReadColumn[], from: string): string | null {
  const aggs: string[] = [];
  columns.forEach((c, i) => {
    if (!c.kind) return;
    const v = id(c.name);
    const cast = (kind: StrictKind) => `TRY_CAST(${v} AS ${TARGET[kind]})`;
    const asNumber = `${cast('number')} IS NOT NULL AND ${numberTextKeeps(v, cast('number'))}`;
    const flags =
      c.kind === 'integer'
        ? `${whens(keepsSql('integer', v, cast('integer')), `(CASE WHEN ${numberTextKeeps(v, cast('number'))} THEN 0 ELSE 2 END)`)}
           WHEN ${asNumber} AND NOT contains(${v}, '_') AND NOT regexp_matches(trim(${v}), '^([+]|-?0[0-9])') THEN 1`
        : c.kind === 'number'
          ? `WHEN ${asNumber} THEN 0`
          : c.kind === 'timestamp'
            ? `${whens(keepsSql('timestamp', v, cast('timestamp')), '0')} WHEN TRY_CAST(${v} AS TIMESTAMPTZ) IS NOT NULL THEN 1`
            : whens(keepsSql(c.kind, v, cast(c.kind)), '0');
    // CASE runs each test only on the values the ones before it did not settle (plain OR/AND would run all).
    aggs.push(`bit_or(CASE WHEN ${v} IS NULL THEN 0 ${flags} ELSE 3 END) AS f${i}`);
  });
  return aggs.length ? `SELECT ${aggs.join(', ')} FROM ${from}` : null;
}

/**
 * The columns once every value is known (a row of fitQuery), each read with its exact type and no check:
 * a column whose values all fit keeps its type; an integer column with a decimal becomes DOUBLE, a
 * timestamp column with offsets TIMESTAMPTZ (made UTC later); anything else text, each value as written.
 */
export function widen(columns: readonly ReadColumn[], fit: Record<string, unknown>): ReadColumn[] {
  return columns.map((c, i) => {
    if (!c.kind) return c;
    const flags = Number(fit[`f${i}`] ?? 0);
    if (!(flags & 1)) return { name: c.name, type: TARGET[c.kind], kind: null };
    if (!(flags & 2) && c.kind === 'integer') return { name: c.name, type: 'DOUBLE', kind: null };
    if (!(flags & 2) && c.kind === 'timestamp') return { name: c.name, type: 'TIMESTAMP WITH TIME ZONE', kind: null };
    return { name: c.name, type: 'VARCHAR', kind: null };
  });
}
