/**
 * Gateway builds side by side in one run: this checkout's gateway (`new`) and others (`--build name=<commit>`,
 * unpacked once into .local/bench/builds/<sha> with this checkout's packages linked and its own libs as
 * @dap/*), all in front of the same models service,
 * plus the proxy library alone (lib/plain-proxy.ts) as the floor. Closed-loop runs alternate the targets'
 * order (A B C, C B A…), so drift in the machine's load hits every build alike; the figure is CPU µs per
 * request of each gateway from /proc, which a shared machine skews far less than req/s. `--profile <name>`
 * then runs that build's gateway once more under `--cpu-prof` and prints its self time by function and package.
 *
 *   node deploy/bench/gateway-ab.ts --build base=HEAD~2 [--build step1=HEAD~1 …] [--reps 6] [--duration 5] [--warmup 1] [--connections 32] [--profile new]
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { unpackBuild } from './lib/builds.ts';
import { calibrate } from './lib/conditions.ts';
import { summarizeProfile } from './lib/cpuprofile.ts';
import { runLoadProcess, startNodeProcess, type BenchProcess } from './lib/procs.ts';
import { median, round } from './lib/stats.ts';
import { startSystem } from './lib/system.ts';
import { freePort, nodeFlagsOf } from '../local/supervisor.ts';
import { FORECAST_MODEL_ID } from '../../services/models/src/domain/builtin/index.ts';

const { values } = parseArgs({
  options: {
    build: { type: 'string', multiple: true, default: [] },
    reps: { type: 'string', default: '6' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    connections: { type: 'string', default: '32' },
    profile: { type: 'string' },
  },
});
const root = process.cwd();
const builds = values.build.map((b) => {
  const [name, commit] = b.split('=') as [string, string | undefined];
  if (!commit || name === 'new' || name === 'library') throw new Error(`--build ${b}: give name=<commit>, a name other than new and library`);
  return { name, path: unpackBuild(root, commit) };
});
const reps = Number(values.reps);
const durationSec = Number(values.duration);
const warmupSec = Number(values.warmup);
const connections = Number(values.connections);
/** User and system CPU ms of a process so far (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuSplit(pid: number | undefined): { user: number; sys: number } {
  const rest = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return { user: Number(rest[11]) * 10, sys: Number(rest[12]) * 10 };
}
const log = (line: string) => process.stdout.write(`[ab] ${line}\n`);
const load1 = () => round(loadavg()[0]!, 2);

const { stackEnv } = await import('@dap/testing');
const suffix = randomBytes(3).toString('hex');
const runDir = join(root, '.local', 'bench', `ab-${suffix}`);
const calStart = calibrate();
log(
  `CPU calibration ${calStart.bestMs} ms (median ${calStart.medianMs}); load ${loadavg()
    .map((v) => round(v, 2))
    .join(' ')}`,
);
const sys = await startSystem({
  root,
  stack: stackEnv(),
  runDir,
  suffix,
  pinning: { loadgen: null, servers: null },
  planLimits: 'enterprise=100000000',
  rateLimitWindowMs: 60_000,
  logLevel: 'info',
});
const procs: BenchProcess[] = [];
try {
  const account = sys.createAccount('enterprise', 'AB Enterprise');
  const gatewayFrom = async (dir: string, name: string, cpuProfDir?: string) => {
    const p = await startNodeProcess({
      root: dir,
      name,
      entry: 'gateway/src/main.ts',
      nodeFlags: nodeFlagsOf('gateway'),
      port: await freePort(),
      env: { ...sys.env, MONGO_DB: `${sys.dbPrefix}gateway` },
      logDir: join(runDir, 'logs'),
      ...(cpuProfDir ? { cpuProfDir } : {}),
    });
    procs.push(p);
    return p;
  };
  const library = await startNodeProcess({
    root,
    name: 'proxy-library',
    entry: 'deploy/bench/lib/plain-proxy.ts',
    port: await freePort(),
    env: { TARGET: sys.urls.models },
    logDir: join(runDir, 'logs'),
  });
  procs.push(library);
  const targets: Record<string, { proc: BenchProcess; headers: Record<string, string> }> = {};
  const bearer = { authorization: `Bearer ${account.apiKey}` };
  for (const b of builds) targets[b.name] = { proc: await gatewayFrom(b.path, `gateway-${b.name}`), headers: bearer };
  targets.new = { proc: await gatewayFrom(root, 'gateway-new'), headers: bearer };
  targets.library = { proc: library, headers: sys.signed(account.accountId) };
  const models = sys.processes.find((p) => p.name === 'models')!;
  const path = `/v1/models/${FORECAST_MODEL_ID}`;
  for (const [name, t] of Object.entries(targets)) {
    const res = await fetch(`${t.proc.url}${path}`, { headers: t.headers });
    if (res.status !== 200) throw new Error(`${name} answered ${res.status}: ${await res.text()}`);
  }
  const names = Object.keys(targets);
  // One untimed run each first: the JIT has compiled every hot path before anything counts.
  for (const n of names) {
    const headers = n === 'library' ? sys.signed(account.accountId) : targets[n]!.headers;
    await runLoadProcess(root, { mode: 'closed', url: `${targets[n]!.proc.url}${path}`, headers, connections, durationSec: 2 }, null);
  }
  // Per run: the gateway's CPU µs per request (user and system apart: system time is mostly the syscalls,
  // which a loaded machine inflates most), the service's, and the gateway's over the service's (both suffer
  // the same contention during a run, so the quotient drifts less than either).
  type Run = { own: number; user: number; sys: number; service: number; perService: number; rps: number; load: number };
  const runs: Record<string, Run[]> = {};
  for (const n of names) runs[n] = [];
  for (let rep = 0; rep < reps; rep++) {
    const order = rep % 2 === 0 ? names : [...names].reverse();
    for (const n of order) {
      const t = targets[n]!;
      // The library target is refreshed each run: its signed context is valid for 5 minutes.
      const headers = n === 'library' ? sys.signed(account.accountId) : t.headers;
      const before = { own: cpuSplit(t.proc.pid), service: cpuSplit(models.pid) };
      const r = await runLoadProcess(root, { mode: 'closed', url: `${t.proc.url}${path}`, headers, connections, durationSec, warmupSec }, null);
      const after = { own: cpuSplit(t.proc.pid), service: cpuSplit(models.pid) };
      const requests = r.requests + (r.warmupRequests ?? 0);
      const bad = Object.entries(r.statusCounts).reduce((s, [k, c]) => (k.startsWith('2') ? s : s + c), r.errors);
      const us = (ms: number) => (ms * 1000) / requests;
      const user = us(after.own.user - before.own.user);
      const sysUs = us(after.own.sys - before.own.sys);
      const service = us(after.service.user + after.service.sys - before.service.user - before.service.sys);
      const run: Run = { own: user + sysUs, user, sys: sysUs, service, perService: (user + sysUs) / service, rps: r.rps, load: load1() };
      runs[n]!.push(run);
      log(
        `rep ${rep + 1} ${n}: ${Math.round(r.rps)} req/s, CPU µs/request ${round(run.own)} (user ${round(user)}, sys ${round(sysUs)}), service ${round(service)}, ÷ service ${round(run.perService)}, p99 ${round(r.latency.p99)} ms, load ${run.load}${bad ? `, ${bad} not 2xx` : ''}`,
      );
    }
  }
  const calEnd = calibrate();
  log(`CPU calibration ${calEnd.bestMs} ms at the end (start ${calStart.bestMs})`);
  const med = (n: string, k: keyof Run) => median(runs[n]!.map((r) => r[k]));
  for (const n of names) {
    log(
      `${n}: median CPU µs/request ${round(med(n, 'own'))} [${runs[n]!.map((r) => Math.round(r.own)).join(' ')}] (user ${round(med(n, 'user'))}, sys ${round(med(n, 'sys'))}), service ${round(med(n, 'service'))}, ÷ service ${round(med(n, 'perService'))}, req/s ${Math.round(med(n, 'rps'))}, load ${runs[n]!.map((r) => r.load).join(' ')}`,
    );
  }
  const pairs = (a: string, b: string, k: keyof Run) => runs[a]!.map((r, i) => r[k] / runs[b]![i]![k]);
  for (const b of builds) {
    for (const k of ['own', 'user', 'sys', 'perService'] as const) {
      const p = pairs('new', b.name, k);
      log(`new ÷ ${b.name}, ${k}: median ${round(median(p))} [${p.map((x) => round(x, 2)).join(' ')}]`);
    }
  }
  log(
    `library ÷ new, CPU per request: ${round(med('library', 'own') / med('new', 'own'))}; by the service-normalised figure ${round(med('library', 'perService') / med('new', 'perService'))}`,
  );

  if (values.profile) await profile(values.profile.split(','));

  /**
   * Each named target once more under `--cpu-prof`, one after the other, then self time in µs per request by
   * package and by function side by side (the profiler's own cost inflates every row alike).
   */
  async function profile(which: string[]): Promise<void> {
    const dir = join(runDir, 'profiles');
    const rows: Record<string, { byModule: Map<string, number>; byFunction: Map<string, number>; busy: number }> = {};
    for (const name of which) {
      const from = name === 'new' ? root : name === 'library' ? root : builds.find((b) => b.name === name)?.path;
      if (!from) throw new Error(`--profile ${name}: no such target`);
      const p =
        name === 'library'
          ? await startNodeProcess({
              root,
              name: 'library-profiled',
              entry: 'deploy/bench/lib/plain-proxy.ts',
              port: await freePort(),
              env: { TARGET: sys.urls.models },
              logDir: join(runDir, 'logs'),
              cpuProfDir: dir,
            })
          : await gatewayFrom(from, `${name}-profiled`, dir);
      const headers = name === 'library' ? sys.signed(account.accountId) : bearer;
      const seconds = Math.max(5, durationSec);
      const started = Date.now();
      const r = await runLoadProcess(root, { mode: 'closed', url: `${p.url}${path}`, headers, connections, durationSec: seconds, warmupSec: 2 }, null);
      const to = Date.now();
      const fromMs = Math.max(started + 2000, to - seconds * 1000);
      await p.stop();
      const s = summarizeProfile(join(dir, `${p.name}.cpuprofile`), 400, { fromMs: fromMs - p.spawnedAt, toMs: to - p.spawnedAt });
      const perRequest = (ms: number) => (ms * 1000) / (r.requests || 1);
      rows[name] = {
        byModule: new Map(s.byModule.map((m) => [m.name, perRequest(m.selfMs)])),
        byFunction: new Map(s.topFunctions.map((f) => [`${f.name} ${f.where}`, perRequest(f.selfMs)])),
        busy: perRequest(s.totalMs * (1 - s.idlePct / 100)),
      };
      log(`profile ${name}: ${Math.round(r.rps)} req/s under --cpu-prof; busy µs/request ${round(rows[name]!.busy)}`);
    }
    const table = (what: 'byModule' | 'byFunction', top: number) => {
      const keys = new Set(which.flatMap((n) => [...rows[n]![what].keys()]));
      const first = rows[which[0]!]![what];
      const last = rows[which.at(-1)!]![what];
      // Sorted by how much more the first target spends there than the last (the floor, when it is last).
      const sorted = [...keys].sort((a, b) => (first.get(b) ?? 0) - (last.get(b) ?? 0) - ((first.get(a) ?? 0) - (last.get(a) ?? 0)));
      log(`µs/request by ${what === 'byModule' ? 'package' : 'function'}: ${which.join(' | ')}`);
      for (const k of sorted.slice(0, top)) log(`  ${which.map((n) => (rows[n]![what].get(k) ?? 0).toFixed(1).padStart(6)).join(' ')}  ${k}`);
    };
    table('byModule', 40);
    table('byFunction', 60);
  }
} finally {
  for (const p of procs.reverse()) await p.stop();
  await sys.stop();
}
