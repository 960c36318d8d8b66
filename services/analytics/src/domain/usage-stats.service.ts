import { USAGE_WINDOWS, type UsageStatsDto, type UsageStatsQuery, type UsageWindow } from '@dap/contracts';
import { bucketStartOf, USAGE_RESOLUTIONS, type UsageResolution, type UsageStatRow, type UsageStatsRepository } from '../persistence/usage-stats.repository.ts';

type Point = UsageStatsDto['series'][number];
type Group = UsageStatsDto['groups'][number];

/**
 * A window's series buckets and the stored resolution they are summed from: the 1-hour window per minute
 * (minute buckets), the 24-hour window per hour and the 30-day window per UTC day (both from hour buckets).
 */
export function windowOf(window: UsageWindow, now: Date): { resolution: UsageResolution; from: Date; bucketMs: number; buckets: number } {
  const { bucketSeconds, buckets } = USAGE_WINDOWS[window];
  const bucketMs = bucketSeconds * 1000;
  const from = new Date(bucketStartOf(now, bucketMs).getTime() - (buckets - 1) * bucketMs);
  return { resolution: bucketMs < USAGE_RESOLUTIONS.hour.bucketMs ? 'minute' : 'hour', from, bucketMs, buckets };
}

const emptySeries = (from: Date, bucketMs: number, buckets: number): Point[] =>
  Array.from({ length: buckets }, (_, i) => ({ start: new Date(from.getTime() + i * bucketMs).toISOString(), requests: 0, clientErrors: 0, serverErrors: 0, rateLimited: 0 }));

function totalsOf(series: readonly Point[]) {
  const t = { requests: 0, clientErrors: 0, serverErrors: 0, rateLimited: 0 };
  for (const p of series) {
    t.requests += p.requests;
    t.clientErrors += p.clientErrors;
    t.serverErrors += p.serverErrors;
    t.rateLimited += p.rateLimited;
  }
  return { ...t, errorRate: t.requests ? (t.clientErrors + t.serverErrors) / t.requests : 0 };
}

/** Sums stored rows into the window's series, overall and per group (groups with calls only, most first). */
export function usageStats(rows: readonly UsageStatRow[], query: UsageStatsQuery, now: Date): UsageStatsDto {
  const { from, bucketMs, buckets } = windowOf(query.window, now);
  const series = emptySeries(from, bucketMs, buckets);
  const groups = new Map<string, Omit<Group, keyof ReturnType<typeof totalsOf>>>();
  for (const r of rows) {
    const i = Math.floor((r.at.getTime() - from.getTime()) / bucketMs);
    if (i < 0 || i >= buckets) continue;
    const id = query.groupBy === 'key' ? (r.caller === 'key' ? (r.keyId ?? 'unknown') : (r.caller ?? 'other')) : (r.operationId ?? 'other');
    let g = groups.get(id);
    if (!g) {
      g = { group: id, caller: r.caller, keyId: r.keyId, keyHint: r.keyHint, operationId: r.operationId, series: emptySeries(from, bucketMs, buckets) };
      groups.set(id, g);
    }
    g.keyHint ??= r.keyHint;
    for (const p of [series[i]!, g.series[i]!]) {
      p.requests += r.success + r.clientErrors + r.serverErrors + r.rateLimited;
      p.clientErrors += r.clientErrors;
      p.serverErrors += r.serverErrors;
      p.rateLimited += r.rateLimited;
    }
  }
  const out = [...groups.values()].map((g) => ({ ...g, ...totalsOf(g.series) })).filter((g) => g.requests > 0);
  out.sort((a, b) => b.requests - a.requests || a.group.localeCompare(b.group));
  return {
    window: query.window,
    groupBy: query.groupBy,
    from: from.toISOString(),
    to: now.toISOString(),
    bucketSeconds: bucketMs / 1000,
    totals: totalsOf(series),
    series,
    groups: out,
  };
}

export class UsageStatsService {
  private readonly repo: UsageStatsRepository;
  private readonly clock: () => Date;

  constructor(repo: UsageStatsRepository, clock: () => Date = () => new Date()) {
    this.repo = repo;
    this.clock = clock;
  }

  async stats(accountId: string, query: UsageStatsQuery): Promise<UsageStatsDto> {
    const now = this.clock();
    const { resolution, from } = windowOf(query.window, now);
    return usageStats(await this.repo.rows(accountId, resolution, from, query.groupBy), query, now);
  }
}
