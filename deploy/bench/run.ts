/**
 * `npm run bench` (through deploy/local/bench.sh): the performance targets of deploy/bench/README.md, each beside its baseline
 * in the same run, written to bench-results/ as Markdown and JSON. See deploy/bench/README.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { cpus, hostname, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { calibrate, stackAge, warmMongo, watchWindow, type Calibration, type MongoWarmup } from './lib/conditions.ts';
import { EXTRA_SCENARIOS, SCENARIOS, type BenchContext, type BenchOptions, type ScenarioName, type ScenarioResult } from './lib/context.ts';
import { hasTaskset, runLoadProcess, type Pinning } from './lib/procs.ts';
import type { GrowthChart } from './lib/growth-chart.ts';
import { summaryTable, writeReport, type BenchReport, type TargetRow } from './lib/report.ts';
import { startSystem, type BenchSystem } from './lib/system.ts';

export function parseOptions(argv: string[]): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      reps: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      only: { type: 'string' },
      pin: { type: 'boolean', default: false },
      'no-pin': { type: 'boolean', default: false },
      'no-profile': { type: 'boolean', default: false },
      out: { type: 'string' },
      connections: { type: 'string' },
      'wait-quiet': { type: 'string' },
      'no-warmup': { type: 'boolean', default: false },
      growth: { type: 'string' },
    },
  });
  const quick = values.quick ?? false;
  const only = (values.only ? values.only.split(',').map((s) => s.trim()) : [...SCENARIOS]) as ScenarioName[];
  const known: readonly string[] = [...SCENARIOS, ...EXTRA_SCENARIOS];
  for (const s of only) if (!known.includes(s)) throw new Error(`unknown scenario "${s}"; known: ${known.join(', ')}`);
  const num = (v: string | undefined, d: number, what: string) => {
    if (v === undefined) return d;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${what} must be a positive number`);
    return n;
  };
  return {
    quick,
    reps: Math.round(num(values.reps, quick ? 1 : 3, 'reps')),
    durationSec: num(values.duration, quick ? 3 : 10, 'duration'),
    warmupSec: num(values.warmup, quick ? 1 : 3, 'warmup'),
    only,
    pin: values['no-pin'] ? 'off' : values.pin ? 'on' : 'auto',
    profile: !values['no-profile'],
    out: resolve(values.out ?? 'bench-results'),
    connections: Math.round(num(values.connections, 32, 'connections')),
    waitQuietMin: values['wait-quiet'] === undefined ? 0 : num(values['wait-quiet'], 0, 'wait-quiet'),
    warmup: !values['no-warmup'],
    growthParts: values.growth ? values.growth.split(',').map((s) => s.trim()) : null,
  };
}

async function loadScenario(name: ScenarioName): Promise<(ctx: BenchContext) => Promise<ScenarioResult>> {
  switch (name) {
    case 'gateway':
      return (await import('./scenarios/gateway.ts')).gatewayScenario;
    case 'limiter':
      return (await import('./scenarios/limiter.ts')).limiterScenario;
    case 'events':
      return (await import('./scenarios/events.ts')).eventsScenario;
    case 'analytics':
      return (await import('./scenarios/analytics.ts')).analyticsScenario;
    case 'ingest':
      return (await import('./scenarios/ingest.ts')).ingestScenario;
    case 'models':
      return (await import('./scenarios/models.ts')).modelsScenario;
    case 'selftest':
      return (await import('./scenarios/selftest.ts')).selftestScenario;
    case 'growth':
      return (await import('./scenarios/growth.ts')).growthScenario;
  }
}

/** Reads the test stack's addresses the way the tests do (.local/test/stack.env, TEST_* overrides). */
async function stackAddresses() {
  const { stackEnv } = await import('@dap/testing');
  return stackEnv();
}

export async function runBench(argv: string[], root = process.cwd()): Promise<{ report: BenchReport; files: { json: string; md: string } }> {
  const opts = parseOptions(argv);
  const started = Date.now();
  const log = (line: string) => process.stdout.write(`[bench] ${line}\n`);
  const notes: string[] = [];
  const cores = cpus().length;
  const taskset = hasTaskset();
  let pinning: Pinning = { loadgen: null, servers: null };
  let pinNote = 'pinning off (--no-pin)';
  const busyAtStart = loadavg()[0]! > cores;
  if (opts.pin === 'auto' && busyAtStart) {
    pinNote = `not pinned: the machine was busy (load average ${loadavg()[0]!.toFixed(1)} on ${cores} cores), and pinned processes cannot move away from other work (--pin forces it)`;
  } else if (opts.pin !== 'off' && cores >= 2 && taskset) {
    // The load generator gets CPU 0; the processes under test (gateway, models, nginx) share the rest, so
    // the generator never steals their CPU and a ratio compares server CPU per request.
    pinning = { loadgen: '0', servers: cores === 2 ? '1' : `1-${cores - 1}` };
    pinNote = 'taskset: load generator alone on CPU 0; gateway instances, models and nginx on the other CPU(s); the other services, Redis, Kafka and MongoDB unpinned';
  } else if (opts.pin !== 'off') {
    pinNote = !taskset ? 'taskset not found: nothing pinned' : 'a single CPU: nothing pinned';
  }

  // Other work on the machine skews every figure; wait (bounded) for the 1-min load average to settle.
  const waitQuiet = async (maxMs: number, stepMs: number) => {
    const until = Date.now() + maxMs;
    while (loadavg()[0]! > cores * 0.75 && Date.now() < until) {
      log(`waiting for a quieter machine: load average ${loadavg()[0]!.toFixed(1)} on ${cores} cores`);
      await new Promise((r) => setTimeout(r, stepMs));
    }
  };
  if (opts.waitQuietMin > 0) await waitQuiet(opts.waitQuietMin * 60_000, 15_000);
  const calibrationStart = calibrate();
  log(`CPU calibration: ${calibrationStart.bestMs} ms (best of ${calibrationStart.rounds})`);
  const stack = stackAge(root, 'test');
  let mongoWarmup: MongoWarmup | null = null;
  const needsStack = opts.only.some((s) => s !== 'selftest');
  if (opts.warmup && needsStack) {
    log('warming the MongoDB server (until two rounds of writes and reads take the same time)...');
    mongoWarmup = await warmMongo((await stackAddresses()).MONGO_URL);
    log(`MongoDB warm-up: rounds ${mongoWarmup.roundMs.join(', ')} ms${mongoWarmup.stable ? '' : ' (not settled within the minute)'}`);
    if (!mongoWarmup.stable) notes.push(`the MongoDB warm-up did not settle (rounds ${mongoWarmup.roundMs.join(', ')} ms): early figures may include the server's own warm-up`);
  }
  const suffix = randomBytes(3).toString('hex');
  const runDir = join(root, '.local', 'bench', `run-${suffix}`);
  mkdirSync(runDir, { recursive: true });
  const limiterQuick = opts.quick;
  const limiterLimit = limiterQuick ? 1_000 : 6_000;
  const windowMs = limiterQuick ? 10_000 : 60_000;
  const loadStart = loadavg().map((v) => Math.round(v * 100) / 100);
  const targets: TargetRow[] = [];
  const charts: GrowthChart[] = [];
  const scenarios: Record<string, unknown> = {};
  const conditions: BenchReport['conditions']['scenarios'] = {};
  let starting: Promise<BenchSystem> | null = null;
  const ctx: BenchContext = {
    root,
    opts,
    sys: null,
    startSystem: () =>
      (starting ??= (async () => {
        log(`starting the services as processes (run dir ${runDir})...`);
        const sys = await startSystem({
          root,
          stack: await stackAddresses(),
          runDir,
          suffix,
          pinning,
          planLimits: `enterprise=100000000,starter=${limiterLimit}`,
          rateLimitWindowMs: windowMs,
          logLevel: 'info',
        });
        ctx.sys = sys;
        ctx.enterprise = sys.createAccount('enterprise', 'Bench Enterprise');
        notes.push(
          'The bench gateways run with PLAN_LIMITS_OVERRIDE=enterprise=100000000 (so the throughput scenarios are never throttled) and ' +
            `starter=${limiterLimit} with RATE_LIMIT_WINDOW_MS=${windowMs} for the limiter scenario's starter account.`,
        );
        return sys;
      })()),
    pinning,
    runDir,
    enterprise: { accountId: '', apiKey: '' },
    log,
    note: (line) => {
      notes.push(line);
      log(`note: ${line}`);
    },
    load: (spec) => runLoadProcess(root, spec, pinning.loadgen),
    profiles: [],
  };
  try {
    for (const [i, name] of opts.only.entries()) {
      // The scenario before this one (an event backlog, a 10M-row group-by) leaves the machine busy for a
      // while; with --wait-quiet each scenario also waits for it, up to a minute.
      if (i > 0 && opts.waitQuietMin > 0) await waitQuiet(Math.min(opts.waitQuietMin, 1) * 60_000, 5_000);
      const busy = loadavg()[0]!;
      log(`scenario ${name} (load average ${busy.toFixed(1)} on ${cores} cores)...`);
      if (busy > cores) ctx.note(`${name}: the machine was busy when it started (1-min load average ${busy.toFixed(1)} on ${cores} cores); its figures are pessimistic and noisy`);
      const t0 = Date.now();
      const window = watchWindow();
      try {
        const result = await (await loadScenario(name))(ctx);
        targets.push(...result.targets);
        charts.push(...(result.charts ?? []));
        scenarios[name] = { ...result.data, wallClockSec: Math.round((Date.now() - t0) / 1000) };
      } catch (err) {
        const e = err as Error;
        ctx.note(`scenario ${name} failed: ${e.message}`);
        process.stderr.write(`${e.stack ?? e.message}\n`);
        scenarios[name] = { failed: e.message };
      }
      conditions[name] = window.end();
    }
  } finally {
    await ctx.sys?.stop();
    // Datasets (up to ~10M rows) are large; logs and profiles stay for post-mortems.
    rmSync(join(runDir, 'datasets'), { recursive: true, force: true });
  }

  const calibrationEnd: Calibration = calibrate();
  const cpu = cpus()[0];
  const report: BenchReport = {
    conditions: {
      calibration: {
        start: calibrationStart,
        end: calibrationEnd,
        driftPct: Math.round((1_000 * (calibrationEnd.bestMs - calibrationStart.bestMs)) / calibrationStart.bestMs) / 10,
      },
      stack: stack ? { ...stack, note: stack.fresh ? 'freshly started (a component is under 5 minutes old)' : 'running for a while' } : null,
      mongoWarmup,
      scenarios: conditions,
    },
    meta: {
      date: new Date(started).toISOString(),
      host: hostname(),
      cores,
      cpuModel: cpu?.model.trim() ?? 'unknown',
      memoryGb: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      loadAverageStart: loadStart,
      loadAverageEnd: loadavg().map((v) => Math.round(v * 100) / 100),
      args: argv,
      quick: opts.quick,
      reps: opts.reps,
      durationSec: opts.durationSec,
      warmupSec: opts.warmupSec,
      pinning: { ...pinning, note: pinNote },
      servicesAs: ctx.sys
        ? 'as separate Node 24 processes (one per service, like deploy/local/supervisor.ts), on the test stack profile'
        : 'not started: no scenario of this run needed them (the owner benches run their service in the bench process)',
      wallClockSec: Math.round((Date.now() - started) / 1000),
    },
    targets,
    charts,
    scenarios,
    profiles: ctx.profiles,
    notes,
  };
  const files = writeReport(opts.out, report);
  process.stdout.write(`\n${summaryTable(targets)}\n\nreport: ${files.md}\n        ${files.json}\n`);
  return { report, files };
}

if (process.argv[1]?.endsWith('run.ts')) {
  runBench(process.argv.slice(2)).then(
    ({ report }) => {
      // Unmet targets are results, not failures; only a scenario that could not run fails the command.
      process.exitCode = Object.values(report.scenarios).some((s) => (s as { failed?: string }).failed) ? 1 : 0;
    },
    (err: Error) => {
      process.stderr.write(`[bench] FAILED: ${err.stack ?? err.message}\n`);
      process.exitCode = 1;
    },
  );
}
