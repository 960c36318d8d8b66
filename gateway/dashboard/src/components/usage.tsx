import { useMemo, useState } from 'react';
import type { ApiKeyDto, Overview, Page, UsageDto, UsageStatsDto, UsageWindow } from '../api/types.ts';
import { unwrap, type ApiClient } from '../api/client.ts';
import { formatDay, formatInt, formatPercent } from '../format.ts';
import { useInterval, useResource } from '../hooks.ts';
import { BarChart, LineChart, Meter } from './charts.tsx';
import { EmptyState, ErrorBanner, Loading, TableWrap } from './ui.tsx';

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

const WINDOWS: { value: UsageWindow; label: string; span: string }[] = [
  { value: '1h', label: '1 hour', span: 'the last hour, per minute' },
  { value: '24h', label: '24 hours', span: 'the last 24 hours, per hour' },
  { value: '30d', label: '30 days', span: 'the last 30 days, per day' },
];

const clock = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit' });

/** A series bucket's start as the window reads it: a time of day, or a UTC day. */
export function bucketLabel(window: UsageWindow, iso: string): string {
  return window === '30d' ? formatDay(iso) : clock.format(new Date(iso));
}

type UsageGroup = UsageStatsDto['groups'][number];

/** A key group's name: the key's own (from the key list) with its hint; the dashboard and the overflow by what they are. */
export function groupName(g: UsageGroup, keyNames: ReadonlyMap<string, string>): { name: string; detail: string | null } {
  if (g.caller === 'dashboard') return { name: 'Dashboard', detail: 'your signed-in sessions' };
  if (g.caller === 'other') return { name: 'Other', detail: 'calls past the per-flush counter cap' };
  if (g.caller === 'key') return { name: keyNames.get(g.keyId ?? '') ?? 'Deleted key', detail: g.keyHint ?? g.keyId };
  return { name: g.operationId ?? g.group, detail: null };
}

function UsageTable({ label, groups, keyNames, testId }: { label: string; groups: UsageGroup[]; keyNames: ReadonlyMap<string, string>; testId: string }) {
  if (!groups.length) return <p className="muted small">No calls in this window.</p>;
  return (
    <TableWrap label={label}>
      <table className="table table-compact" data-testid={testId}>
        <thead>
          <tr>
            <th scope="col">{label.startsWith('By operation') ? 'Operation' : 'Caller'}</th>
            <th scope="col" className="num">
              Requests
            </th>
            <th scope="col" className="num">
              4xx
            </th>
            <th scope="col" className="num">
              5xx
            </th>
            <th scope="col" className="num">
              Error rate
            </th>
            <th scope="col" className="num">
              429s
            </th>
          </tr>
        </thead>
        <tbody>
          {groups.map((g) => {
            const { name, detail } = groupName(g, keyNames);
            return (
              <tr key={g.group}>
                <th scope="row">
                  {g.operationId ? <code>{name}</code> : name}
                  {detail && (
                    <>
                      {' '}
                      <span className="muted small">{g.caller === 'key' ? <code>{detail}</code> : detail}</span>
                    </>
                  )}
                </th>
                <td className="num">{formatInt(g.requests)}</td>
                <td className="num">{formatInt(g.clientErrors)}</td>
                <td className="num">{formatInt(g.serverErrors)}</td>
                <td className="num">{formatPercent(g.errorRate)}</td>
                <td className="num">{formatInt(g.rateLimited)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </TableWrap>
  );
}

/**
 * Calls per API key (the dashboard's own apart) and per operation over 1 h, 24 h or 30 d, with their errors
 * and 429s, and the window's requests, errors and 429s over time.
 */
export function UsageBreakdown({ refreshMs = 15_000 }: { refreshMs?: number }) {
  const [window, setWindow] = useState<UsageWindow>('24h');
  const load = (groupBy: 'key' | 'operation') => (api: ApiClient, signal: AbortSignal) =>
    unwrap(api.openapi.GET('/analytics/usage', { params: { query: { window, groupBy } }, signal })) as Promise<UsageStatsDto>;
  const byKey = useResource<UsageStatsDto>(`usage-key-${window}`, load('key'));
  const byOperation = useResource<UsageStatsDto>(`usage-operation-${window}`, load('operation'));
  const keys = useResource<Page<ApiKeyDto>>('keys', (api, signal) => unwrap(api.openapi.GET('/keys', { params: { query: { limit: 100 } }, signal })));
  useInterval(() => {
    void byKey.reload();
    void byOperation.reload();
  }, refreshMs);
  const keyNames = useMemo(() => new Map((keys.data?.data ?? []).map((k) => [k.id, k.name])), [keys.data]);
  const span = WINDOWS.find((w) => w.value === window)!.span;
  const stats = byKey.data;

  return (
    <div className="usage-breakdown" data-testid="usage-breakdown">
      <div className="segmented" role="group" aria-label="Usage window">
        {WINDOWS.map((w) => (
          <button key={w.value} type="button" aria-pressed={window === w.value} className={window === w.value ? 'is-active' : ''} onClick={() => setWindow(w.value)}>
            {w.label}
          </button>
        ))}
      </div>
      <ErrorBanner error={byKey.error ?? byOperation.error} onRetry={() => void Promise.all([byKey.reload(), byOperation.reload()])} />
      {!stats ? (
        <Loading rows={4} />
      ) : (
        <>
          <p className="chart-headline" data-testid="usage-totals">
            <span className="big-number">{formatInt(stats.totals.requests)}</span> {stats.totals.requests === 1 ? 'call' : 'calls'} in {span}:{' '}
            {formatPercent(stats.totals.errorRate)} errors ({formatInt(stats.totals.clientErrors)} 4xx, {formatInt(stats.totals.serverErrors)} 5xx),{' '}
            {formatInt(stats.totals.rateLimited)} rate-limited (429)
          </p>
          <LineChart
            title={`Calls over ${span}`}
            labels={stats.series.map((p) => p.start)}
            labelFormat={(iso) => bucketLabel(window, iso)}
            series={[
              { name: 'Requests', values: stats.series.map((p) => p.requests) },
              { name: 'Errors (4xx and 5xx)', values: stats.series.map((p) => p.clientErrors + p.serverErrors) },
              { name: '429s', values: stats.series.map((p) => p.rateLimited), dashed: true },
            ]}
            showPoints={window !== '1h'}
            partialLast
            height={220}
          />
          <h3 className="subheading">By API key</h3>
          <UsageTable label="By API key" groups={stats.groups} keyNames={keyNames} testId="usage-by-key" />
        </>
      )}
      {byOperation.data && (
        <>
          <h3 className="subheading">By operation</h3>
          <UsageTable label="By operation" groups={byOperation.data.groups} keyNames={keyNames} testId="usage-by-operation" />
        </>
      )}
      <p className="muted small">
        Error rate is 4xx and 5xx answers over all calls; 429s (over the plan&apos;s limit) are counted apart. The dashboard&apos;s own calls are a group of their own and count
        against no key. Counts arrive every few seconds.
      </p>
    </div>
  );
}
