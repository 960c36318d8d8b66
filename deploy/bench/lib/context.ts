import type { ProfileSummary } from './cpuprofile.ts';
import type { LoadResult, LoadSpec } from './loadgen.ts';
import type { Pinning } from './procs.ts';
import type { TargetRow } from './report.ts';
import type { BenchSystem } from './system.ts';

export const SCENARIOS = ['gateway', 'limiter', 'events', 'analytics', 'ingest', 'models'] as const;
export type ScenarioName = (typeof SCENARIOS)[number] | 'selftest';

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
}

export interface BenchContext {
  root: string;
  opts: BenchOptions;
  /** Null for the self-test, which needs no services. */
  sys: BenchSystem | null;
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
}

export function system(ctx: BenchContext): BenchSystem {
  if (!ctx.sys) throw new Error('this scenario needs the services');
  return ctx.sys;
}
