import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

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

async function waitHealthy(url: string, child: ChildProcess, name: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode} during start-up; see its log`);
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`${name} did not become healthy within ${timeoutMs} ms; see its log`);
}

export interface Supervised {
  urls: Record<DeployableName, string>;
  pids(): Record<string, number | undefined>;
  /** Sends a signal to one process (SIGKILL for fault tests) and waits for it to exit. */
  kill(name: DeployableName, signal?: NodeJS.Signals): Promise<void>;
  /** Starts one process again on the same port and waits until it is healthy. */
  restart(name: DeployableName): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs every service as its own Node 24 process on the given ports, logs to files, and waits until each
 * answers /healthz. The gateway starts last, pointed at the others.
 */
export async function startServices(opts: {
  root: string;
  env: Record<string, string>;
  ports: Record<DeployableName, number>;
  logDir: string;
  /** Each service gets its own database, `<prefix><service>` (default `dap_<service>`). */
  mongoDbPrefix?: string;
  nodeBin?: string;
  timeoutMs?: number;
}): Promise<Supervised> {
  mkdirSync(opts.logDir, { recursive: true });
  const urls = Object.fromEntries(DEPLOYABLES.map((d) => [d.name, `http://127.0.0.1:${opts.ports[d.name]}`])) as Record<DeployableName, string>;
  const children = new Map<DeployableName, ChildProcess>();
  const nodeBin = opts.nodeBin ?? process.execPath;

  const launch = async (d: (typeof DEPLOYABLES)[number]) => {
    const log = createWriteStream(join(opts.logDir, `${d.name}.log`), { flags: 'a' });
    const env: Record<string, string> = {
      ...opts.env,
      HOST: '127.0.0.1',
      PORT: String(opts.ports[d.name]),
      MONGO_DB: `${opts.mongoDbPrefix ?? 'dap_'}${d.name}`,
    };
    for (const other of DEPLOYABLES) env[other.urlEnv] = urls[other.name];
    const child = spawn(nodeBin, ['--no-warnings', '--enable-source-maps', join(opts.root, d.entry)], {
      cwd: opts.root,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    children.set(d.name, child);
    await waitHealthy(urls[d.name], child, d.name, opts.timeoutMs ?? 60_000);
  };

  const stopOne = async (name: DeployableName, signal: NodeJS.Signals) => {
    const child = children.get(name);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 12_000);
    await exited;
    clearTimeout(timer);
  };

  try {
    await Promise.all(DEPLOYABLES.filter((d) => d.name !== 'gateway').map(launch));
    await launch(DEPLOYABLES.find((d) => d.name === 'gateway')!);
  } catch (err) {
    await Promise.all([...children.keys()].map((n) => stopOne(n, 'SIGTERM')));
    throw err;
  }

  return {
    urls,
    pids: () => Object.fromEntries([...children].map(([n, c]) => [n, c.pid])),
    kill: (name, signal = 'SIGKILL') => stopOne(name, signal),
    restart: async (name) => {
      await stopOne(name, 'SIGTERM');
      await launch(DEPLOYABLES.find((d) => d.name === name)!);
    },
    stop: async () => {
      await stopOne('gateway', 'SIGTERM');
      await Promise.all(DEPLOYABLES.filter((d) => d.name !== 'gateway').map((d) => stopOne(d.name, 'SIGTERM')));
    },
  };
}
