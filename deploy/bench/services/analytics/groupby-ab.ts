/**
 * Analytics builds side by side: the group-by bench (groupby.bench.ts) of this checkout (`new`) and of other
 * commits (`--build name=<commit>`, unpacked by lib/builds.ts), each run in a process of its own on the same
 * cached dataset, alternated A B, B A, A B… so drift in the machine's load hits every build alike. Prints each
 * run's API ÷ raw DuckDB ratio per query, then per build the medians, with the load average of each run.
 *
 *   node --no-warnings deploy/bench/services/analytics/groupby-ab.ts --build base=HEAD~1 [--rows 10000000] [--reps 7] [--rounds 3] [--query customer]
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { unpackBuild } from '../../lib/builds.ts';
import { median, round } from '../../lib/stats.ts';
import type { GroupByBenchResult } from './groupby.bench.ts';

const { values } = parseArgs({
  options: {
    build: { type: 'string', multiple: true, default: [] },
    rows: { type: 'string', default: '10000000' },
    reps: { type: 'string', default: '7' },
    rounds: { type: 'string', default: '3' },
    /** Only the queries whose name contains this text. */
    query: { type: 'string', default: '' },
  },
});

const root = process.cwd();
const builds = [
  { name: 'new', path: root },
  ...values.build.map((b) => {
    const [name, commit] = b.split('=') as [string, string | undefined];
    if (!commit || name === 'new') throw new Error(`--build ${b}: give name=<commit>, a name other than new`);
    const path = unpackBuild(root, commit);
    // One dataset for every build (the bench caches it under the repository's .cache), on this checkout's test stack.
    mkdirSync(join(root, '.cache'), { recursive: true });
    mkdirSync(join(path, '.local'), { recursive: true });
    for (const [from, to] of [
      ['.cache', '.cache'],
      ['.local/test', '.local/test'],
    ] as const) {
      if (!existsSync(join(path, to))) symlinkSync(join(root, from), join(path, to));
    }
    return { name, path };
  }),
];

/** One bench run of a build, in its own process (its own service, DuckDB and heap). */
function runBuild(path: string): GroupByBenchResult {
  const script = `
    const m = await import(${JSON.stringify(join(path, 'deploy/bench/services/analytics/groupby.bench.ts'))});
    const queries = m.GROUP_BY_QUERIES.filter((q) => q.name.includes(${JSON.stringify(values.query)}));
    const r = await m.runGroupByBench({ rows: ${Number(values.rows)}, repetitions: ${Number(values.reps)}, queries });
    process.stdout.write(JSON.stringify(r));
    process.exit(0);`;
  const out = execFileSync(process.execPath, ['--no-warnings', '--input-type=module', '-e', script], {
    cwd: path,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(out) as GroupByBenchResult;
}

/** The bench process's CPU per API run over the faster raw path's: steadier than wall time on a busy machine (the MongoDB server's CPU is not in it). */
const cpuRatio = (q: GroupByBenchResult['queries'][number]) => round(q.api.cpuMedianMs / Math.min(q.raw.cpuMedianMs, q.rawHandWritten.cpuMedianMs), 3);

const runs: Record<string, GroupByBenchResult[]> = Object.fromEntries(builds.map((b) => [b.name, []]));
for (let round_ = 0; round_ < Number(values.rounds); round_++) {
  for (const b of round_ % 2 ? [...builds].reverse() : builds) {
    const load = round(loadavg()[0] ?? 0, 3);
    const r = runBuild(b.path);
    runs[b.name]!.push(r);
    const each = r.queries.map(
      (q) =>
        `${q.name}: API ${q.api.medianMs} (server ${q.serverDurationMs}) vs raw ${q.raw.medianMs} / hand ${q.rawHandWritten.medianMs} ms, ratio ${q.ratio}; CPU ${q.api.cpuMedianMs} vs ${q.raw.cpuMedianMs} / ${q.rawHandWritten.cpuMedianMs} ms, ratio ${cpuRatio(q)}`,
    );
    console.log(`[${b.name}] load ${load}→${round(loadavg()[0] ?? 0, 3)} | ${each.join(' | ')}`);
  }
}
for (const b of builds) {
  const rs = runs[b.name]!;
  for (const [i, q] of rs[0]!.queries.entries()) {
    const pick = (f: (x: GroupByBenchResult['queries'][number]) => number) => round(median(rs.map((r) => f(r.queries[i]!))), 3);
    console.log(
      `${b.name} | ${q.name}: ratio median ${pick((x) => x.ratio)} [${rs.map((r) => r.queries[i]!.ratio).join(' ')}], CPU ratio median ${pick(cpuRatio)} [${rs.map((r) => cpuRatio(r.queries[i]!)).join(' ')}], API ${pick((x) => x.api.medianMs)} ms, server ${pick((x) => x.serverDurationMs)} ms, raw ${pick((x) => x.raw.medianMs)} ms, hand ${pick((x) => x.rawHandWritten.medianMs)} ms`,
    );
  }
}
