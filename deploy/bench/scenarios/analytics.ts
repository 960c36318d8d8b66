import type { BenchContext, ScenarioResult } from '../lib/context.ts';
import type { GroupByBenchResult } from '../services/analytics/groupby.bench.ts';
import { ownerBench } from './owner-bench.ts';

type RunGroupByBench = (opts: Record<string, unknown>) => Promise<GroupByBenchResult>;

const FILE = 'deploy/bench/services/analytics/groupby.bench.ts';

/** A group-by over 10M rows (1M with --quick) via the analytics API vs raw DuckDB, by the analytics owner's bench. */
export async function analyticsScenario(ctx: BenchContext): Promise<ScenarioResult> {
  const run = await ownerBench<RunGroupByBench>(ctx.root, FILE, 'runGroupByBench');
  if (!run) throw new Error(`${FILE} is missing; the analytics figure needs it`);
  const rows = ctx.opts.quick ? 1_000_000 : 10_000_000;
  const r = await run({ rows, repetitions: ctx.opts.quick ? 3 : 7, log: (line: string) => ctx.log(`analytics: ${line}`) });
  const worst = r.queries.reduce((a, b) => (b.ratio > a.ratio ? b : a));
  // The ratio's baseline is the faster of the two raw forms of the query (compiled SQL and hand-written).
  const baselineMs = (q: (typeof r.queries)[number]) => Math.min(q.raw.medianMs, q.rawHandWritten.medianMs);
  return {
    targets: [
      {
        id: 'analytics.groupby_ratio',
        scenario: 'analytics',
        figure: `group-by over ${(r.rows / 1e6).toFixed(0)}M rows, API vs raw DuckDB`,
        target: '≤ 1.1 on every query',
        value: `${r.ratio} worst of ${r.queries.length} queries (${worst.name}: ${worst.api.medianMs} vs ${baselineMs(worst)} ms)`,
        met: r.ratio <= 1.1,
        detail: `${FILE}: signed POST /v1/analytics/query to the analytics service (in the bench's process, over HTTP) vs the faster of the same SQL and a hand-written equivalent on a DuckDB instance with the same ${r.threads} threads, same Parquet file; medians of ${r.repetitions} alternating runs`,
      },
    ],
    data: {
      source: FILE,
      rows: r.rows,
      fileMB: Math.round(r.fileBytes / 1e5) / 10,
      queries: r.queries.map((q) => ({
        query: q.name,
        groups: q.resultRows,
        'API ms': q.api.medianMs,
        'query ms (server)': q.serverDurationMs,
        'DuckDB ms': q.raw.medianMs,
        'hand-written DuckDB ms': q.rawHandWritten.medianMs,
        ratio: q.ratio,
      })),
    },
  };
}
