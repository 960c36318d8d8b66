import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Calibration, MongoWarmup, StackAge, Window } from './conditions.ts';
import type { ProfileSummary } from './cpuprofile.ts';
import { describeGrowth, growthExponents, renderGrowthSvg, type GrowthChart } from './growth-chart.ts';

/** One target of deploy/bench/README.md, measured. `met` is null when the scenario could not produce the figure. */
export interface TargetRow {
  id: string;
  scenario: string;
  figure: string;
  target: string;
  value: string;
  met: boolean | null;
  /** The baseline and how the figure was computed, in a few words. */
  detail: string;
}

export interface BenchReport {
  meta: {
    date: string;
    host: string;
    cores: number;
    cpuModel: string;
    memoryGb: number;
    node: string;
    platform: string;
    loadAverageStart: number[];
    loadAverageEnd: number[];
    args: string[];
    quick: boolean;
    reps: number;
    durationSec: number;
    warmupSec: number;
    pinning: { loadgen: string | null; servers: string | null; note: string };
    servicesAs: string;
    wallClockSec: number;
  };
  /** What makes this run comparable with another: see conditions.ts. */
  conditions: {
    calibration: { start: Calibration; end: Calibration; driftPct: number };
    stack: (StackAge & { note: string }) | null;
    mongoWarmup: MongoWarmup | null;
    scenarios: Record<string, Window>;
  };
  targets: TargetRow[];
  /** How costs grow with size; each is written as `<report>-<id>.svg` beside the Markdown. */
  charts: GrowthChart[];
  scenarios: Record<string, unknown>;
  profiles: ProfileSummary[];
  notes: string[];
}

const mark = (met: boolean | null) => (met === null ? 'n/a' : met ? 'MET' : 'NOT MET');

export function summaryTable(targets: TargetRow[]): string {
  const head = ['scenario', 'figure', 'target', 'measured', 'met'];
  const rows = targets.map((t) => [t.scenario, t.figure, t.target, t.value, mark(t.met)]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

function mdTable(rows: Record<string, unknown>[]): string {
  if (!rows.length) return '_none_\n';
  const cols = Object.keys(rows[0]!);
  const cell = (v: unknown) => (typeof v === 'number' ? String(v) : typeof v === 'string' ? v : JSON.stringify(v)).replaceAll('|', '\\|');
  return [`| ${cols.join(' | ')} |`, `|${cols.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${cols.map((c) => cell(r[c])).join(' | ')} |`)].join('\n') + '\n';
}

/** The Markdown of the growth charts: each image (a file beside the report), its points and exponents. */
function growthSection(charts: GrowthChart[], svgName: (c: GrowthChart) => string): string[] {
  if (!charts.length) return [];
  const out = ['## How cost grows\n', 'Exponent between two sizes: log(value ratio) / log(size ratio); 1 is linear in size, 0 is flat.\n'];
  for (const c of charts) {
    out.push(`### ${c.title}\n`, `![${c.title}](${svgName(c)})\n`);
    out.push(
      mdTable(
        c.series.flatMap((s) => {
          const exps = growthExponents(s.points);
          return s.points.map((p, i) => ({ series: s.name, size: p.label, [c.yLabel]: p.value, 'exponent from the previous size': i ? (exps[i - 1] ?? 'n/a') : '' }));
        }),
      ),
    );
    for (const line of describeGrowth(c)) out.push(`- ${line}`);
    out.push('');
  }
  return out;
}

export function toMarkdown(r: BenchReport, svgName: (c: GrowthChart) => string = (c) => `${c.id}.svg`): string {
  const m = r.meta;
  const out: string[] = [];
  out.push(`# Benchmark report — ${m.date}\n`);
  out.push(
    `Machine: ${m.cores} cores (${m.cpuModel}), ${m.memoryGb} GB, ${m.platform}; Node ${m.node}. ` +
      `Load average at start ${m.loadAverageStart.join(' / ')}, at end ${m.loadAverageEnd.join(' / ')}.\n`,
  );
  out.push(
    `Run: \`npm run bench${m.args.length ? ` -- ${m.args.join(' ')}` : ''}\` — ${m.quick ? 'quick' : 'full'}, ${m.reps} × ${m.durationSec} s per measurement ` +
      `after ${m.warmupSec} s warm-up, ${Math.round(m.wallClockSec)} s wall clock. Services ${m.servicesAs}. ` +
      `Pinning: load generator ${m.pinning.loadgen ?? 'unpinned'}, servers under test ${m.pinning.servers ?? 'unpinned'} (${m.pinning.note}).\n`,
  );
  const c = r.conditions;
  out.push('## Run conditions\n');
  out.push(
    `CPU calibration (a fixed workload, best of ${c.calibration.start.rounds}): ${c.calibration.start.bestMs} ms at the start, ` +
      `${c.calibration.end.bestMs} ms at the end (${c.calibration.driftPct >= 0 ? '+' : ''}${c.calibration.driftPct} %). ` +
      `Figures from machines whose calibrations differ compare only as ratios to their own baselines.\n`,
  );
  out.push(
    c.stack
      ? `Stack: ${c.stack.note}; up ${Object.entries(c.stack.componentsUpSec)
          .map(([k, v]) => `${k} ${v} s`)
          .join(', ')}.\n`
      : 'Stack: no stack of the test profile was found running.\n',
  );
  if (c.mongoWarmup)
    out.push(`MongoDB warm-up before measuring: ${c.mongoWarmup.rounds} rounds (${c.mongoWarmup.roundMs.join(', ')} ms)${c.mongoWarmup.stable ? ', settled' : ', not settled'}.\n`);
  out.push(
    mdTable(
      Object.entries(c.scenarios).map(([scenario, w]) => ({
        scenario,
        'load avg start': w.loadAverageStart,
        'load avg end': w.loadAverageEnd,
        'CPU busy %': w.cpuBusyPct ?? 'n/a',
        'steal %': w.stealPct ?? 'n/a',
      })),
    ),
  );
  out.push('## Targets\n');
  out.push(summaryTable(r.targets) + '\n');
  out.push('| figure | how it was measured |\n|---|---|');
  for (const t of r.targets) out.push(`| ${t.scenario}: ${t.figure} | ${t.detail.replaceAll('|', '\\|')} |`);
  out.push('');
  for (const [name, data] of Object.entries(r.scenarios)) {
    out.push(`## Scenario: ${name}\n`);
    const d = data as Record<string, unknown>;
    for (const [k, v] of Object.entries(d)) {
      if (Array.isArray(v) && v.length && typeof v[0] === 'object') {
        out.push(`**${k}**\n`);
        out.push(mdTable(v as Record<string, unknown>[]));
      } else if (v && typeof v === 'object') {
        out.push(`**${k}**: \`${JSON.stringify(v)}\`\n`);
      } else {
        out.push(`**${k}**: ${String(v)}\n`);
      }
    }
  }
  out.push(...growthSection(r.charts ?? [], svgName));
  if (r.profiles.length) {
    out.push('## CPU profiles\n');
    for (const p of r.profiles) {
      out.push(`### ${p.file}\n`);
      out.push(
        `${p.totalMs} ms sampled${p.window ? ` (the measured load phase only: ${p.window.fromMs}–${p.window.toMs} ms after spawn)` : ''}, ${p.idlePct}% idle. ` +
          'Self time as a share of the busy (non-idle) time.\n',
      );
      out.push('By module:\n');
      out.push(mdTable(p.byModule.map((x) => ({ module: x.name, selfMs: x.selfMs, '%': x.selfPct }))));
      out.push('Top functions:\n');
      out.push(mdTable(p.topFunctions.map((x) => ({ function: x.name, where: x.where, selfMs: x.selfMs, '%': x.selfPct }))));
    }
  }
  if (r.notes.length) {
    out.push('## Notes\n');
    for (const n of r.notes) out.push(`- ${n}`);
    out.push('');
  }
  return out.join('\n');
}

/** Writes `<stamp>.json` and `<stamp>.md`, plus `latest.json`/`latest.md`, and returns their paths. */
export function writeReport(dir: string, report: BenchReport): { json: string; md: string } {
  mkdirSync(dir, { recursive: true });
  const stamp = report.meta.date.replace(/[:.]/g, '-');
  const json = join(dir, `bench-${stamp}.json`);
  const md = join(dir, `bench-${stamp}.md`);
  const text = JSON.stringify(report, null, 2);
  // The charts are written twice, so the dated report and latest.md each point at their own copy.
  for (const c of report.charts ?? []) {
    const svg = renderGrowthSvg(c);
    writeFileSync(join(dir, `bench-${stamp}-${c.id}.svg`), svg);
    writeFileSync(join(dir, `latest-${c.id}.svg`), svg);
  }
  writeFileSync(json, text);
  writeFileSync(
    md,
    toMarkdown(report, (c) => `bench-${stamp}-${c.id}.svg`),
  );
  writeFileSync(join(dir, 'latest.json'), text);
  writeFileSync(
    join(dir, 'latest.md'),
    toMarkdown(report, (c) => `latest-${c.id}.svg`),
  );
  return { json, md };
}
