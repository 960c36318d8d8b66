import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';

/**
 * What makes two bench runs comparable, recorded beside their figures: how fast this machine ran a fixed
 * CPU workload at the start and at the end of the run, the steal time and load around each scenario, and
 * how long the stack had been running (a JVM that has just started has not compiled its hot paths yet).
 */

/** A fixed, deterministic workload (hashing, JSON, sorting), the same instructions on every run. */
export function calibrationWork(): string {
  const buffer = Buffer.alloc(64 * 1024, 7);
  const hash = createHash('sha256');
  for (let i = 0; i < 40; i++) hash.update(buffer);
  let seed = 42;
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648);
  const numbers = Array.from({ length: 60_000 }, next).sort((a, b) => a - b);
  const doc = { rows: numbers.slice(0, 5_000).map((n, i) => ({ id: i, value: n, label: `row-${n.toString(36)}` })) };
  const roundTrip = JSON.parse(JSON.stringify(doc)) as typeof doc;
  return `${hash.digest('hex').slice(0, 16)}:${numbers[30_000]}:${roundTrip.rows.length}`;
}

export interface Calibration {
  /** The fastest of the rounds, in ms: the machine's speed with the least interference. */
  bestMs: number;
  medianMs: number;
  rounds: number;
}

/** Times `calibrationWork` over a few rounds (after one to warm the JIT). */
export function calibrate(rounds = 7, work: () => unknown = calibrationWork): Calibration {
  work();
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    work();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const r2 = (n: number) => Math.round(n * 100) / 100;
  return { bestMs: r2(times[0]!), medianMs: r2(times[Math.floor(times.length / 2)]!), rounds };
}

/** The machine-wide CPU counters of /proc/stat, in clock ticks (null where there is no /proc). */
export interface CpuTicks {
  busy: number;
  idle: number;
  steal: number;
  total: number;
}

export function parseProcStat(text: string): CpuTicks | null {
  const line = text.split('\n').find((l) => l.startsWith('cpu '));
  if (!line) return null;
  // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already in user.
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number) as number[];
  const idleAll = idle! + iowait!;
  const busy = user! + nice! + system! + irq! + softirq!;
  return { busy, idle: idleAll, steal: steal ?? 0, total: busy + idleAll + (steal ?? 0) };
}

export function readCpuTicks(): CpuTicks | null {
  try {
    return parseProcStat(readFileSync('/proc/stat', 'utf8'));
  } catch {
    return null;
  }
}

export interface Window {
  loadAverageStart: number;
  loadAverageEnd: number;
  /** Shares of all CPU time over the window, in %: busy (every process), steal (taken by the hypervisor). */
  cpuBusyPct: number | null;
  stealPct: number | null;
}

/** Starts watching a window (a scenario); `end()` reports the load and the CPU shares over it. */
export function watchWindow(ticks: () => CpuTicks | null = readCpuTicks, load: () => number = () => loadavg()[0]!): { end(): Window } {
  const start = ticks();
  const loadStart = load();
  return {
    end() {
      const end = ticks();
      const r1 = (n: number) => Math.round(n * 10) / 10;
      const span = start && end ? end.total - start.total : 0;
      return {
        loadAverageStart: r1(loadStart),
        loadAverageEnd: r1(load()),
        cpuBusyPct: span > 0 ? r1((100 * (end!.busy - start!.busy)) / span) : null,
        stealPct: span > 0 ? r1((100 * (end!.steal - start!.steal)) / span) : null,
      };
    },
  };
}

export interface StackAge {
  /** Seconds each running component of the stack profile has been up. */
  componentsUpSec: Record<string, number>;
  /** Whether the youngest component started less than `freshSec` ago. */
  fresh: boolean;
}

/** How long the profile's stack (deploy/local/stack.sh) has been running, from its pid files and /proc. */
export function stackAge(root: string, profile: string, freshSec = 300): StackAge | null {
  const pids = join(root, '.local', profile, 'pids');
  if (!existsSync(pids) || !existsSync('/proc/uptime')) return null;
  const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  // Clock ticks per second: 100 on every Linux this runs on (sysconf(_SC_CLK_TCK)).
  const hz = 100;
  const up: Record<string, number> = {};
  for (const file of readdirSync(pids).filter((f) => f.endsWith('.pid'))) {
    try {
      const pid = readFileSync(join(pids, file), 'utf8').trim();
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const startTicks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
      up[file.replace(/\.pid$/, '')] = Math.round(uptime - startTicks / hz);
    } catch {
      // not running
    }
  }
  const ages = Object.values(up);
  return ages.length ? { componentsUpSec: up, fresh: Math.min(...ages) < freshSec } : null;
}

export interface MongoWarmup {
  rounds: number;
  /** Each round's time in ms (inserts, updates and finds of one batch), first to last. */
  roundMs: number[];
  stable: boolean;
}

/**
 * Runs the writes and reads the services make (batched inserts, updates by id, finds by id) against a
 * scratch database until two rounds in a row take within 10 % of each other (or `maxMs` passes), so the
 * MongoDB-wire server's JVM has compiled them before anything is measured. A real mongod settles at once.
 */
export async function warmMongo(url: string, opts: { maxMs?: number; batch?: number } = {}): Promise<MongoWarmup> {
  const maxMs = opts.maxMs ?? 60_000;
  const batch = opts.batch ?? 2_000;
  const client = await MongoClient.connect(url, { directConnection: true });
  const db = client.db(`bench_warmup_${process.pid}`);
  const roundMs: number[] = [];
  const deadline = Date.now() + maxMs;
  let stable = false;
  try {
    const coll = db.collection<{ _id: string; accountId: string; n: number; status: string }>('warmup');
    await coll.createIndex({ accountId: 1, status: 1 });
    for (let round = 0; Date.now() < deadline; round++) {
      const t0 = performance.now();
      const ids = Array.from({ length: batch }, (_, i) => `w${round}_${i}`);
      await coll.insertMany(ids.map((id, i) => ({ _id: id, accountId: `acct_${i % 50}`, n: i, status: 'pending' })));
      await coll.bulkWrite(ids.map((id) => ({ updateOne: { filter: { _id: id }, update: { $set: { status: 'done' }, $inc: { n: 1 } } } })));
      await coll.find({ _id: { $in: ids.slice(0, 500) } }).toArray();
      await coll.countDocuments({ accountId: 'acct_7', status: 'done' });
      await coll.deleteMany({ _id: { $in: ids } });
      roundMs.push(Math.round(performance.now() - t0));
      const [a, b] = roundMs.slice(-2);
      if (roundMs.length >= 3 && a !== undefined && b !== undefined && Math.abs(a - b) <= 0.1 * Math.max(a, b)) {
        stable = true;
        break;
      }
    }
  } finally {
    await db.dropDatabase().catch(() => {});
    await client.close();
  }
  return { rounds: roundMs.length, roundMs, stable };
}
