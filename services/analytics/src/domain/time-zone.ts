/**
 * Wall-clock arithmetic in IANA time zones, on Intl (the same tz database the API validates names with), for
 * the bounds of a query: `from`, `to` and the compared period become UTC instants before they reach SQL.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    // Bounded: names are validated, but there are some six hundred of them.
    if (formatters.size >= 1_000) formatters.clear();
    formatters.set(timeZone, f);
  }
  return f;
}

/** The wall-clock time in `timeZone` at `instantMs`, as milliseconds of the same wall time read as UTC. */
export function wallOf(instantMs: number, timeZone: string): number {
  if (timeZone === 'UTC') return instantMs;
  const parts: Record<string, number> = {};
  for (const p of formatterOf(timeZone).formatToParts(new Date(instantMs))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const seconds = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  // Intl drops milliseconds; they are the same in every zone.
  return seconds + (((instantMs % 1000) + 1000) % 1000);
}

/**
 * The instant a wall-clock time in `timeZone` names. A time skipped by a daylight-saving change reads with the
 * offset before the change (02:30 on a spring-forward night is 03:30 in the new offset); a repeated one is its
 * first occurrence.
 */
export function instantOf(wallMs: number, timeZone: string): number {
  if (timeZone === 'UTC') return wallMs;
  // The offsets a day either side: before and after any change near this time (zones change at most once a day).
  const offsetBefore = wallOf(wallMs - 86_400_000, timeZone) - (wallMs - 86_400_000);
  const offsetAfter = wallOf(wallMs + 86_400_000, timeZone) - (wallMs + 86_400_000);
  const candidates = [wallMs - offsetBefore, wallMs - offsetAfter].filter((t) => wallOf(t, timeZone) === wallMs);
  return candidates.length ? Math.min(...candidates) : wallMs - offsetBefore;
}

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * An ISO-8601 time as a UTC instant in milliseconds, or null when it is not one. A time with an offset (or Z)
 * is that instant; a time without one is a wall-clock time in `timeZone`.
 */
export function parseInstant(value: string, timeZone: string): number | null {
  const m = ISO_TIME.exec(value);
  if (!m) return null;
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', zone] = m;
  const fields = [Number(y), Number(mo), Number(d), Number(h), Number(mi), Number(s)] as const;
  if (fields[1] < 1 || fields[1] > 12 || fields[3] > 23 || fields[4] > 59 || fields[5] > 59) return null;
  const wall = Date.UTC(fields[0], fields[1] - 1, fields[2], fields[3], fields[4], fields[5], Number(frac.padEnd(3, '0').slice(0, 3)));
  // Date.UTC rolls 2024-02-30 over to March: such a day is not a date.
  if (new Date(wall).getUTCDate() !== fields[2] || Number.isNaN(wall)) return null;
  if (!zone) return instantOf(wall, timeZone);
  if (zone === 'Z') return wall;
  const sign = zone.startsWith('-') ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  return wall - sign * (Number(digits.slice(0, 2)) * 3_600_000 + Number(digits.slice(2)) * 60_000);
}

/** `YYYY-MM-DD HH:MM:SS.mmm`, the UTC form DuckDB casts to TIMESTAMP. */
export function sqlTimestamp(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

/** The same wall-clock time `years` later (negative: earlier); 29 February becomes 28 February in a common year. */
export function addYears(wallMs: number, years: number): number {
  const d = new Date(wallMs);
  const target = d.getUTCFullYear() + years;
  const day = Math.min(d.getUTCDate(), new Date(Date.UTC(target, d.getUTCMonth() + 1, 0)).getUTCDate());
  return Date.UTC(target, d.getUTCMonth(), day, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds());
}

/**
 * A zone's UTC offsets over [fromMs, toMs]: `offsets[i]` (minutes) holds from `starts[i]` (ms) until the next
 * start; the first holds from before `fromMs`. Null when the span is too long or the zone changes offset too
 * often to be worth it. Changes are found day by day and then to the second (no zone changes twice a day).
 */
export function offsetSegments(timeZone: string, fromMs: number, toMs: number, maxSegments = 512): { starts: number[]; offsets: number[] } | null {
  const DAY = 86_400_000;
  if (!(toMs >= fromMs) || toMs - fromMs > 200 * 365 * DAY) return null;
  const off = (t: number) => wallOf(t, timeZone) - t;
  let current = off(fromMs);
  const starts = [fromMs];
  const offsets = [current / 60_000];
  for (let t = fromMs; t < toMs; t += DAY) {
    const next = off(t + DAY);
    if (next === current) continue;
    // The first second in (t, t + DAY] with the new offset.
    let lo = Math.floor(t / 1000);
    let hi = Math.floor((t + DAY) / 1000);
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (off(mid * 1000) === next) hi = mid;
      else lo = mid;
    }
    starts.push(hi * 1000);
    offsets.push(next / 60_000);
    current = next;
    if (starts.length > maxSegments) return null;
  }
  return { starts, offsets };
}
