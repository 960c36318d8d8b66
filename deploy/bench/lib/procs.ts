import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LoadResult, LoadSpec } from './loadgen.ts';
import { waitHealthy } from '../../local/supervisor.ts';

/** Which CPUs to pin load generators and servers to; null means "let the scheduler decide". */
export interface Pinning {
  loadgen: string | null;
  servers: string | null;
}

export function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** `taskset -c <cpus> cmd args` when pinning, else the command itself. */
function pinned(cpus: string | null, cmd: string, args: string[]): [string, string[]] {
  return cpus ? ['taskset', ['-c', cpus, cmd, ...args]] : [cmd, args];
}

export interface BenchProcess {
  name: string;
  url: string;
  pid: number | undefined;
  child: ChildProcess;
  /** Date.now() when it was spawned (a --cpu-prof profile starts about then). */
  spawnedAt: number;
  /** SIGTERM, then SIGKILL after a grace period; resolves on exit (a --cpu-prof profile is then on disk). */
  stop(): Promise<void>;
}

/** Starts one Node service (an entry point of deploy/local/supervisor.ts's DEPLOYABLES) as its own process. */
export async function startNodeProcess(opts: {
  root: string;
  name: string;
  entry: string;
  port: number;
  env: Record<string, string>;
  logDir: string;
  cpus?: string | null;
  /** Directory for a --cpu-prof profile written when the process exits. */
  cpuProfDir?: string;
  /** Further node flags (the services run with their nodeFlagsOf, as in production). */
  nodeFlags?: readonly string[];
  timeoutMs?: number;
}): Promise<BenchProcess> {
  mkdirSync(opts.logDir, { recursive: true });
  const log = createWriteStream(join(opts.logDir, `${opts.name}.log`), { flags: 'a' });
  const nodeArgs = ['--no-warnings', ...(opts.nodeFlags ?? [])];
  if (opts.cpuProfDir) {
    mkdirSync(opts.cpuProfDir, { recursive: true });
    nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`, `--cpu-prof-name=${opts.name}.cpuprofile`);
  }
  const [cmd, args] = pinned(opts.cpus ?? null, process.execPath, [...nodeArgs, join(opts.root, opts.entry)]);
  const spawnedAt = Date.now();
  const child = spawn(cmd, args, {
    cwd: opts.root,
    env: { PATH: process.env.PATH ?? '', ...opts.env, HOST: '127.0.0.1', PORT: String(opts.port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const url = `http://127.0.0.1:${opts.port}`;
  const proc: BenchProcess = {
    name: opts.name,
    url,
    pid: child.pid,
    child,
    spawnedAt,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
  try {
    await waitHealthy(url, child, opts.name, opts.timeoutMs ?? 60_000, `see ${join(opts.logDir, `${opts.name}.log`)}`);
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return proc;
}

/** Runs the load generator as a separate process (pinned when asked) and returns its result. */
export function runLoadProcess(root: string, spec: LoadSpec, cpus: string | null): Promise<LoadResult> {
  const script = join(root, 'deploy/bench/lib/loadgen.ts');
  if (!existsSync(script)) throw new Error(`missing ${script}`);
  const [cmd, args] = pinned(cpus, process.execPath, ['--no-warnings', script, JSON.stringify(spec)]);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`load generator exited with ${code}: ${err.slice(-2000)}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as LoadResult);
      } catch {
        reject(new Error(`load generator printed no result: ${out.slice(-500)} ${err.slice(-1000)}`));
      }
    });
  });
}

/**
 * A process's resident memory now (VmRSS) and the kernel's peak of it (VmHWM), in MB with one decimal, from
 * /proc/<pid>/status; null where there is no /proc or no such process.
 */
export function memoryMB(pid: number | undefined): { rss: number; peak: number } | null {
  if (pid === undefined) return null;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const mb = (key: string) => Math.round(Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN) / 102.4) / 10;
    return { rss: mb('VmRSS'), peak: mb('VmHWM') };
  } catch {
    return null;
  }
}

/**
 * CPU time (user + system, ms) a process has used so far, from /proc/<pid>/stat; null where there is no
 * /proc. Differences over a load run give CPU per request, which other work on the machine barely skews
 * (unlike req/s).
 */
export function cpuTimeMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which is in parentheses and may contain spaces): utime is the 14th
    // field overall, stime the 15th, in clock ticks (USER_HZ, 100 on Linux).
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(rest[11]) + Number(rest[12])) * 1000) / 100;
  } catch {
    return null;
  }
}
