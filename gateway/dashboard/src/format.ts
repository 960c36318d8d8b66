const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });
const dateTime = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit' });
const dateOnly = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric' });
const dayMonth = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', timeZone: 'UTC' });
const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });

export const formatInt = (n: number) => integer.format(n);
export const formatNumber = (n: number) => (Number.isInteger(n) ? integer.format(n) : decimal.format(n));
export const formatCompact = (n: number) => (Math.abs(n) < 10_000 ? formatNumber(n) : compact.format(n));
export const formatPercent = (ratio: number) => `${decimal.format(ratio * 100)}%`;

export function formatDate(iso: string | null | undefined, withTime = true): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : (withTime ? dateTime : dateOnly).format(d);
}

/** A UTC day such as 2025-03-09 as "9 Mar". */
export function formatDay(isoDay: string): string {
  const d = new Date(`${isoDay.slice(0, 10)}T00:00:00Z`);
  return Number.isNaN(d.getTime()) ? isoDay : dayMonth.format(d);
}

export function formatRelative(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return iso;
  const s = Math.round((t - now) / 1000);
  const abs = Math.abs(s);
  if (abs < 45) return s <= 0 ? 'just now' : 'in a few seconds';
  if (abs < 3600) return relative.format(Math.round(s / 60), 'minute');
  if (abs < 86_400) return relative.format(Math.round(s / 3600), 'hour');
  if (abs < 30 * 86_400) return relative.format(Math.round(s / 86_400), 'day');
  return formatDate(iso, false);
}

export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1) return `${decimal.format(ms)} ms`;
  if (ms < 1000) return `${integer.format(ms)} ms`;
  return `${decimal.format(ms / 1000)} s`;
}

/** A cell of a result table: numbers aligned and grouped, null as an em dash, times readable. */
export function formatCell(v: unknown, type?: string): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') return formatNumber(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'string' && type && /time|date/i.test(type)) return formatDate(v);
  return String(v);
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${formatInt(n)} ${n === 1 ? one : many}`;
}
