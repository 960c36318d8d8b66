import type { Overview, UsageDto } from '../api/types.ts';
import { unwrap } from '../api/client.ts';
import { formatDay, formatInt } from '../format.ts';
import { useInterval, useResource } from '../hooks.ts';
import { BarChart, Meter } from './charts.tsx';
import { EmptyState, ErrorBanner, Loading } from './ui.tsx';

/** The last `days` UTC days, oldest first, with zero for days the API did not list. */
export function fillDays(points: { date: string; requests: number }[], days = 30, now = new Date()): { date: string; requests: number }[] {
  const byDay = new Map(points.map((p) => [p.date.slice(0, 10), p.requests]));
  const out: { date: string; requests: number }[] = [];
  for (let i = days - 1; i >= 0; i--) {
    const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - i));
    const key = d.toISOString().slice(0, 10);
    out.push({ date: key, requests: byDay.get(key) ?? 0 });
  }
  return out;
}

/** Requests per day over the last 30 days, from the analytics overview (when the service provides it). */
export function RequestsPerDay({ overview }: { overview: Overview | undefined }) {
  if (!overview) return <Loading rows={4} />;
  if (!overview.apiRequestsPerDay) {
    return (
      <EmptyState title="Daily history is on its way" icon="📈">
        Requests per day appear here once the analytics service reports them. The current minute is shown alongside.
      </EmptyState>
    );
  }
  const days = fillDays(overview.apiRequestsPerDay);
  const total = days.reduce((s, d) => s + d.requests, 0);
  return (
    <div>
      <p className="chart-headline">
        <span className="big-number">{formatInt(total)}</span> {total === 1 ? 'request' : 'requests'} in the last 30 days
      </p>
      <BarChart
        title="API requests per day, last 30 days"
        valueLabel="requests"
        data={days.map((d) => ({ label: d.date, value: d.requests }))}
        labelFormat={formatDay}
        height={220}
      />
    </div>
  );
}

/** This minute against the plan's limit, refreshed every few seconds. */
export function CurrentMinute({ refreshMs = 5_000 }: { refreshMs?: number }) {
  const usage = useResource<UsageDto>('usage', (api, signal) => unwrap(api.openapi.GET('/usage', { signal })));
  useInterval(() => void usage.reload(), refreshMs);
  if (usage.error && !usage.data) return <ErrorBanner error={usage.error} onRetry={() => void usage.reload()} />;
  if (!usage.data) return <Loading rows={2} />;
  const u = usage.data;
  return (
    <div className="usage-now" data-testid="usage-now">
      <p className="usage-figures">
        <span className="big-number">{formatInt(u.used)}</span>
        <span className="usage-of"> of {formatInt(u.limit)} requests</span>
      </p>
      <Meter value={u.used} max={u.limit} label="Requests in the current minute" valueText={`${u.used} of ${u.limit} requests used`} />
      <p className="usage-meta">
        <span>{formatInt(u.remaining)} remaining</span>
        <span>{u.used > 0 ? `oldest counted request leaves the ${u.windowSeconds}-s window in ${u.resetSeconds} s` : `sliding ${u.windowSeconds}-second window`}</span>
      </p>
      <p className="muted small">Requests made with your API keys; the dashboard's own requests are not counted.</p>
    </div>
  );
}
