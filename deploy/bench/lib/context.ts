import type { ProfileSummary } from './cpuprofile.ts';
import type { GrowthChart } from './growth-chart.ts';
import type { LoadResult, LoadSpec } from './loadgen.ts';
import type { Pinning } from './procs.ts';
import type { TargetRow } from './report.ts';
import type { BenchSystem } from './system.ts';

/**
 * In the order a full run takes them: those that need no service processes first (see `system`), and among
 * them the event backlog last, as MongoDB's and Kafka's own work after 20,000 deliveries goes on for a while.
 */
export const SCENARIOS = ['ingest', 'analytics', 'events', 'gateway', 'limiter', 'models'] as const;
/** Named with --only, never part of a full run: `growth` takes ~40 minutes, `selftest` needs no services. */
export const EXTRA_SCENARIOS = ['growth', 'selftest'] as const;
export type ScenarioName = (typeof SCENARIOS)[number] | (typeof EXTRA_SCENARIOS)[number];

export interface BenchOptions {
  quick: boolean;
  /** Repetitions of every measurement; the report gives their median. */
  reps: number;
  durationSec: number;
  warmupSec: number;
  only: ScenarioName[];
  /** auto: pin when the machine is quiet at the start (1-min load average ≤ cores). */
  pin: 'auto' | 'on' | 'off';
  profile: boolean;
  out: string;
  /** Concurrent connections of the closed-loop (max req/s) runs. */
  connections: number;
  /** Minutes to wait, at most, for the machine's load average to drop below its core count before starting. */
  waitQuietMin: number;
  /** Warm the MongoDB server before measuring (off with --no-warmup). */
  warmup: boolean;
  /** The growth scenario's parts to run (--growth gateway,redis); null for all. */
  growthParts: string[] | null;
}

export interface BenchContext {
  root: string;
  opts: BenchOptions;
  /** The services, once a scenario asked for them (see `system`). */
  sys: BenchSystem | null;
  /** Starts the services (and the enterprise account), once; see `system`. */
  startSystem(): Promise<BenchSystem>;
  pinning: Pinning;
  runDir: string;
  /** The enterprise account the throughput scenarios use (the limiter never throttles it). */
  enterprise: { accountId: string; apiKey: string };
  log(line: string): void;
  note(line: string): void;
  /** Runs the load generator in its own (pinned) process. */
  load(spec: LoadSpec): Promise<LoadResult>;
  profiles: ProfileSummary[];
}

export interface ScenarioResult {
  targets: TargetRow[];
  data: Record<string, unknown>;
  /** How a cost grows with size (the growth scenario): drawn as SVG beside the report. */
  charts?: GrowthChart[];
}

/**
 * The services as processes, started when the first scenario asks for them. The owner benches (events,
 * analytics, ingest) run their service in the bench process and never ask: six idle services beside them,
 * just after their start-up burst, only added noise to what they measure.
 */
export async function system(ctx: BenchContext): Promise<BenchSystem> {
  return ctx.sys ?? (await ctx.startSystem());
}
