import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { hostsOfUrl } from '@dap/config';

/** Every deployable, its entry point and the env var that names its URL for the gateway. */
export const DEPLOYABLES = [
  { name: 'accounts', entry: 'services/accounts/src/main.ts', urlEnv: 'ACCOUNTS_URL' },
  { name: 'sources', entry: 'services/sources/src/main.ts', urlEnv: 'SOURCES_URL' },
  { name: 'analytics', entry: 'services/analytics/src/main.ts', urlEnv: 'ANALYTICS_URL' },
  { name: 'models', entry: 'services/models/src/main.ts', urlEnv: 'MODELS_URL' },
  { name: 'webhooks', entry: 'services/webhooks/src/main.ts', urlEnv: 'WEBHOOKS_URL' },
  { name: 'gateway', entry: 'gateway/src/main.ts', urlEnv: 'GATEWAY_URL' },
] as const;
export type DeployableName = (typeof DEPLOYABLES)[number]['name'];

/**
 * V8 flags of each service process (here, in the bench, in the tests that start one and in the images' CMD):
 * the young generation at a fixed size. By default it starts small and doubles under allocation up to 32 MB
 * per semi-space, and each doubling adds tens of MB of RSS, possibly minutes into a steady load: the soak saw
 * such a step with no leak behind it. Fixed, it has its working size from the start and RSS stays flat. At
 * 32 MB for the request-heavy services: 16 MB cost the gateway 8 % more CPU per request at full load (more
 * frequent scavenges). At 16 MB for sources, whose work is DuckDB's and whose memory has a budget (400 MB
 * while it loads any CSV): 32 MB more RSS from start-up on, for scavenges its event loop barely needs.
 */
const SEMI_SPACE_MB: Readonly<Record<DeployableName, number>> = { accounts: 32, sources: 16, analytics: 32, models: 32, webhooks: 32, gateway: 32 };

export function nodeFlagsOf(name: DeployableName): readonly string[] {
  const mb = SEMI_SPACE_MB[name];
  return [`--min-semi-space-size=${mb}`, `--max-semi-space-size=${mb}`];
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** How a supervised process ended, as logged and as `status()` reports it. */
export interface ExitReport {
  name: DeployableName;
  pid: number | undefined;
  /** The exit code, or null when a signal ended the process. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when the supervisor asked for it (kill, restart, stop); false for a crash or an exit of its own. */
  expected: boolean;
  /** During start-up, before /healthz answered. */
  duringStartup: boolean;
  /** It ignored SIGTERM for the grace period and was sent SIGKILL. */
  forced: boolean;
  at: string;
  /** One human line, e.g. "analytics (pid 4242) was killed by signal SIGKILL, unexpectedly". */
  description: string;
}

export interface ProcessStatus {
  pid: number | undefined;
  state: 'starting' | 'running' | 'exited';
  /** Launches after the first one (restart()). */
  restarts: number;
  lastExit?: ExitReport;
}

export function describeExit(e: Pick<ExitReport, 'name' | 'pid' | 'code' | 'signal' | 'expected' | 'duringStartup' | 'forced'>): string {
  const how = e.signal ? `was killed by signal ${e.signal}` : `exited with code ${e.code}`;
  const when = e.duringStartup ? ' during start-up' : '';
  const forced = e.forced ? ' (SIGKILL: it did not stop within the grace period after SIGTERM)' : '';
  return `${e.name} (pid ${e.pid ?? '?'}) ${how}${when}, ${e.expected ? 'as requested' : 'unexpectedly'}${forced}`;
}

/** The last lines of a log (at most `maxLines`, 4 KB), so a start-up failure says why where it is reported (CI keeps no files). */
export function logTail(file: string, maxLines = 25): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return '(no log)';
  }
  const lines = text
    .slice(-4_096)
    .split('\n')
    .filter((l) => l.trim() !== '');
  if (text.length > 4_096) lines.shift(); // cut mid-line
  return lines.slice(-maxLines).join('\n') || '(empty log)';
}

export class ExitedDuringStartup extends Error {}

/**
 * Whether process `pid` holds the socket listening on TCP `port` (Linux's /proc); true where /proc cannot
 * tell. A port picked with `freePort()` may be taken meanwhile by another process, even another test's
 * service, whose /healthz would pass for this one's.
 */
function listensOn(pid: number | undefined, port: number): boolean {
  if (pid === undefined) return true;
  let tables: string[];
  try {
    tables = ['/proc/net/tcp', '/proc/net/tcp6'].map((f) => (existsSync(f) ? readFileSync(f, 'utf8') : ''));
  } catch {
    return true;
  }
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const line of tables.join('\n').split('\n')) {
    const f = line.trim().split(/\s+/);
    // local_address is ADDR:PORT in hex, st 0A is LISTEN, the inode is the 10th field.
    if (f[1]?.endsWith(`:${hexPort}`) && f[3] === '0A' && f[9]) inodes.add(`socket:[${f[9]}]`);
  }
  if (!inodes.size) return false;
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return inodes.has(readlinkSync(`/proc/${pid}/fd/${fd}`));
      } catch {
        return false;
      }
    });
  } catch {
    return !existsSync('/proc/self/fd'); // no /proc: cannot tell
  }
}

/**
 * Waits until a process just spawned answers `GET <url>/healthz` from a socket of its own (`listensOn`): a
 * fresh clone's `npm test` once lost a whole suite when another process answered on a models service's
 * port, the service was counted as started, and then failed with EADDRINUSE. Throws ExitedDuringStartup
 * if it ends first, or an error after `timeoutMs`; `logHint` (e.g. `see <its log file>`) ends both
 * messages. The supervisor, the bench and the tests that run a service as a process all start through this.
 */
export async function waitHealthy(url: string, child: ChildProcess, name: string, timeoutMs: number, logHint: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const port = Number(new URL(url).port);
  while (Date.now() < deadline) {
    // A signal (an OOM kill, a SIGKILL) leaves exitCode null: check both, or start-up waits out its timeout.
    if (child.exitCode !== null || child.signalCode !== null) {
      const how = child.signalCode ? `was killed by signal ${child.signalCode}` : `exited with code ${child.exitCode}`;
      throw new ExitedDuringStartup(`${name} ${how} during start-up; ${logHint}`);
    }
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) });
      if (res.ok && listensOn(child.pid, port)) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`${name} did not become healthy within ${timeoutMs} ms; ${logHint}`);
}

export interface Supervised {
  urls: Record<DeployableName, string>;
  /** Each process's metrics listener (`<url>/metrics`), for those given a metrics port. */
  metricsUrls: Partial<Record<DeployableName, string>>;
  pids(): Record<string, number | undefined>;
  /** Each process's state and how it last ended. */
  status(): Record<DeployableName, ProcessStatus>;
  /** Sends a signal to one process (SIGKILL for fault tests) and waits for it to exit. */
  kill(name: DeployableName, signal?: NodeJS.Signals): Promise<void>;
  /** Starts one process again on the same port (stopping it first if it runs) and waits until it is healthy. */
  restart(name: DeployableName): Promise<void>;
  /** SIGTERM to the gateway, then to the services; SIGKILL to any still running after the grace period. */
  stop(): Promise<void>;
}

type Deployable = { readonly name: DeployableName; readonly entry: string; readonly urlEnv: string };

/**
 * Runs every service as its own Node 24 process on the given ports, logs to files, and waits until each
 * answers /healthz. The gateway starts last, pointed at the others.
 *
 * Exits: every exit of a process is reported with its code or signal, and whether the supervisor asked for
 * it: one JSON line appended to the process's own log and to `supervisor.log` in the log folder, `status()`,
 * and (by default) a line on stderr for an exit nobody asked for. A process that exits on its own is not
 * restarted: it stays down, reported, until `restart(name)` (fault tests kill and restart processes
 * themselves, so an automatic restart would hide what they test). `stop()` and `kill()` wait for the exit;
 * a process still running `stopGraceMs` after SIGTERM gets SIGKILL, which its report says.
 */
/**
 * The platform's endpoints that a service does not know from its own settings, for the SSRF guard: every
 * deployable's port and Redis, besides any the caller lists. Sources and webhooks never reach them.
 */
export function platformEndpoints(env: Record<string, string>, ports: readonly number[]): string {
  const list = ports.map((p) => `127.0.0.1:${p}`);
  if (env.REDIS_URL)
    list.push(...hostsOfUrl(env.REDIS_URL, /^rediss?\+sentinel:/.test(env.REDIS_URL) ? 26379 : 6379).map((e) => `${e.host.includes(':') ? `[${e.host}]` : e.host}:${e.port}`));
  if (env.PLATFORM_ENDPOINTS) list.push(env.PLATFORM_ENDPOINTS);
  return list.join(',');
}

export async function startServices(opts: {
  root: string;
  env: Record<string, string>;
  ports: Record<DeployableName, number>;
  /** Where each process serves Prometheus metrics (METRICS_PORT); a process without one serves none. */
  metricsPorts?: Partial<Record<DeployableName, number>>;
  logDir: string;
  /** Each service gets its own database, `<prefix><service>` (default `dap_<service>`). */
  mongoDbPrefix?: string;
  nodeBin?: string;
  timeoutMs?: number;
  /** SIGTERM to SIGKILL (default 12 s, above the services' own 10-s shutdown deadline). */
  stopGraceMs?: number;
  /** Called on every exit; by default an unexpected one is written to stderr. */
  onExit?: (report: ExitReport) => void;
  /** What to run (tests supervise stand-ins); default DEPLOYABLES. */
  deployables?: readonly Deployable[];
  /**
   * Ports picked with `freePort()` are only free when picked: by the time a service listens (after it has
   * reached MongoDB and Kafka) an outgoing connection of another process may hold one. With this set, a
   * process that fails to start with EADDRINUSE is started again on a newly picked port (at most twice);
   * only during start-up, before the gateway is given the services' URLs. Off for fixed ports (npm start).
   */
  repickBusyPorts?: boolean;
}): Promise<Supervised> {
  mkdirSync(opts.logDir, { recursive: true });
  const deployables = opts.deployables ?? DEPLOYABLES;
  const ports = { ...opts.ports };
  const metricsPorts = { ...opts.metricsPorts };
  const urlOf = (name: DeployableName) => `http://127.0.0.1:${ports[name]}`;
  const urls = Object.fromEntries(deployables.map((d) => [d.name, urlOf(d.name)])) as Record<DeployableName, string>;
  const metricsUrls: Partial<Record<DeployableName, string>> = {};
  const metricsUrlOf = (name: DeployableName) => void (metricsPorts[name] !== undefined && (metricsUrls[name] = `http://127.0.0.1:${metricsPorts[name]}`));
  for (const d of deployables) metricsUrlOf(d.name);
  const children = new Map<DeployableName, ChildProcess>();
  /** Resolves when a process has exited and its output is in its log. */
  const closed = new Map<ChildProcess, Promise<void>>();
  const statuses = new Map<DeployableName, ProcessStatus>();
  const requested = new Set<ChildProcess>();
  const forced = new Set<ChildProcess>();
  const nodeBin = opts.nodeBin ?? process.execPath;
  const grace = opts.stopGraceMs ?? 12_000;
  const onExit = opts.onExit ?? ((r: ExitReport) => void (r.expected || process.stderr.write(`[supervisor] ${r.description}\n`)));
  const supervisorLog = join(opts.logDir, 'supervisor.log');
  const logLine = (r: ExitReport) =>
    `${JSON.stringify({ level: r.expected && !r.forced ? 30 : r.expected ? 40 : 50, time: r.at, service: 'supervisor', deployable: r.name, pid: r.pid, code: r.code, signal: r.signal, expected: r.expected, forced: r.forced, duringStartup: r.duringStartup, msg: r.description })}\n`;

  const launch = async (d: Deployable) => {
    const logFile = join(opts.logDir, `${d.name}.log`);
    const log = createWriteStream(logFile, { flags: 'a' });
    const env: Record<string, string> = {
      ...opts.env,
      HOST: '127.0.0.1',
      PORT: String(ports[d.name]),
      ...(metricsPorts[d.name] !== undefined ? { METRICS_PORT: String(metricsPorts[d.name]) } : {}),
      MONGO_DB: `${opts.mongoDbPrefix ?? 'dap_'}${d.name}`,
    };
    for (const other of deployables) env[other.urlEnv] = urls[other.name];
    env.PLATFORM_ENDPOINTS = platformEndpoints(
      opts.env,
      deployables.map((o) => ports[o.name]),
    );
    const child = spawn(nodeBin, ['--no-warnings', '--enable-source-maps', ...nodeFlagsOf(d.name), join(opts.root, d.entry)], {
      cwd: opts.root,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Both streams feed one file: neither may end it, or the other's last lines (often the fatal error) are lost.
    child.stdout!.pipe(log, { end: false });
    child.stderr!.pipe(log, { end: false });
    children.set(d.name, child);
    const previous = statuses.get(d.name);
    const status: ProcessStatus = { pid: child.pid, state: 'starting', restarts: previous ? previous.restarts + 1 : 0, lastExit: previous?.lastExit };
    statuses.set(d.name, status);
    let report: ExitReport | undefined;
    child.once('exit', (code, signal) => {
      const facts = { name: d.name, pid: child.pid, code, signal, expected: requested.has(child), duringStartup: status.state === 'starting', forced: forced.has(child) };
      report = { ...facts, at: new Date().toISOString(), description: describeExit(facts) };
      status.state = 'exited';
      status.lastExit = report;
      appendFileSync(supervisorLog, logLine(report));
      onExit(report);
      // A grandchild holding its stdout open must not keep the log, and stop(), waiting.
      setTimeout(() => [child.stdout, child.stderr].forEach((s) => s?.destroy()), 2_000).unref();
    });
    closed.set(
      child,
      new Promise<void>((resolve) => {
        const finish = () => {
          if (report) log.write(logLine(report));
          log.end(() => resolve());
        };
        child.once('close', finish);
        // A child that never started (spawn error) emits no exit, only error and close.
        child.once('error', (err) => log.write(`${JSON.stringify({ level: 50, service: 'supervisor', deployable: d.name, msg: `could not start: ${err.message}` })}\n`));
      }),
    );
    try {
      await waitHealthy(urls[d.name], child, d.name, opts.timeoutMs ?? 60_000, `see ${logFile}`);
    } catch (err) {
      if (!(err instanceof ExitedDuringStartup)) throw err;
      await closed.get(child); // its last output (often the fatal error) is in the log
      throw new Error(`${err.message}; its last lines:\n${logTail(logFile)}`, { cause: err });
    }
    status.state = 'running';
  };

  const stopOne = async (name: DeployableName, signal: NodeJS.Signals) => {
    const child = children.get(name);
    if (!child) return;
    if (child.exitCode === null && child.signalCode === null) {
      requested.add(child);
      child.kill(signal);
      const timer = setTimeout(() => {
        forced.add(child);
        child.kill('SIGKILL');
      }, grace);
      await closed.get(child);
      clearTimeout(timer);
    } else {
      await closed.get(child);
    }
  };

  /** The first launch: on a port another process took meanwhile, again on a new one if allowed. */
  const firstLaunch = async (d: Deployable) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await launch(d);
      } catch (err) {
        const busy = err instanceof Error && /EADDRINUSE/.test(err.message);
        if (!busy || !opts.repickBusyPorts || attempt >= 3) throw err;
        const taken = ports[d.name];
        ports[d.name] = await freePort();
        urls[d.name] = urlOf(d.name);
        if (metricsPorts[d.name] !== undefined) metricsPorts[d.name] = await freePort(); // it may have been the busy one
        metricsUrlOf(d.name);
        process.stderr.write(`[supervisor] ${d.name}: port ${taken} was taken before it could listen; starting it again on ${ports[d.name]}\n`);
      }
    }
  };

  const gateway = deployables.filter((d) => d.name === 'gateway');
  try {
    await Promise.all(deployables.filter((d) => d.name !== 'gateway').map(firstLaunch));
    await Promise.all(gateway.map(firstLaunch));
  } catch (err) {
    await Promise.all([...children.keys()].map((n) => stopOne(n, 'SIGTERM')));
    throw err;
  }

  return {
    urls,
    metricsUrls,
    pids: () => Object.fromEntries([...children].map(([n, c]) => [n, c.pid])),
    status: () => Object.fromEntries([...statuses].map(([n, st]) => [n, { ...st }])) as Record<DeployableName, ProcessStatus>,
    kill: (name, signal = 'SIGKILL') => stopOne(name, signal),
    restart: async (name) => {
      await stopOne(name, 'SIGTERM');
      await launch(deployables.find((d) => d.name === name)!);
    },
    stop: async () => {
      // Every exit from here on is asked for, also one that comes before its turn: a terminal's Ctrl-C reaches
      // the whole process group, so the services get it while the gateway is still stopping.
      for (const child of children.values()) requested.add(child);
      await Promise.all(gateway.map((d) => stopOne(d.name, 'SIGTERM')));
      await Promise.all(deployables.filter((d) => d.name !== 'gateway').map((d) => stopOne(d.name, 'SIGTERM')));
    },
  };
}
