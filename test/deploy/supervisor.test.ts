import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { DEPLOYABLES, freePort, startServices, type DeployableName, type ExitReport, type Supervised } from '../../deploy/local/supervisor.ts';

/**
 * The local supervisor (npm start, the e2e and fault tests) on stand-in processes: tiny HTTP servers that
 * answer /healthz, crash on request, ignore SIGTERM, or die during start-up.
 */
const STAND_INS: Record<string, string> = {
  'ok.mjs': `
import { createServer } from 'node:http';
const server = createServer((req, res) => {
  if (req.url === '/crash') { res.end('bye'); console.error('fatal: lost the database for good'); setTimeout(() => process.exit(7), 20); return; }
  res.end('ok');
}).listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => { console.log('shutting down'); server.close(() => process.exit(0)); server.closeAllConnections(); });
`,
  'stubborn.mjs': `
import { createServer } from 'node:http';
createServer((req, res) => res.end('ok')).listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => console.log('ignoring SIGTERM'));
`,
  'env.mjs': `
import { createServer } from 'node:http';
const server = createServer((req, res) => res.end(req.url.startsWith('/env/') ? process.env[req.url.slice(5)] ?? '' : 'ok')).listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`,
  'exits-at-start.mjs': `console.error('cannot reach MongoDB'); setTimeout(() => process.exit(3), 50);`,
  'killed-at-start.mjs': `setTimeout(() => process.kill(process.pid, 'SIGKILL'), 50);`,
};

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'dap-supervisor-'));
  for (const [file, code] of Object.entries(STAND_INS)) writeFileSync(join(root, file), code);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function ports(): Promise<Record<DeployableName, number>> {
  const out = {} as Record<DeployableName, number>;
  for (const d of DEPLOYABLES) out[d.name] = await freePort();
  return out;
}

const deployable = (name: DeployableName, entry: string) => ({ name, entry, urlEnv: DEPLOYABLES.find((d) => d.name === name)!.urlEnv });
const jsonLines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const healthy = (url: string) =>
  fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) }).then(
    (r) => r.ok,
    () => false,
  );
async function until(what: string, check: () => boolean) {
  for (const deadline = Date.now() + 5_000; Date.now() < deadline;) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('supervisor', () => {
  let sup: Supervised;
  const reports: ExitReport[] = [];
  let logDir: string;

  beforeAll(async () => {
    logDir = join(root, 'logs');
    sup = await startServices({
      root,
      env: {},
      ports: await ports(),
      logDir,
      stopGraceMs: 500,
      onExit: (r) => reports.push(r),
      deployables: [deployable('accounts', 'ok.mjs'), deployable('analytics', 'ok.mjs'), deployable('models', 'stubborn.mjs'), deployable('gateway', 'ok.mjs')],
    });
  }, 30_000);
  afterAll(() => sup?.stop());

  it('reports a crash with its exit code, in its log, supervisor.log and status, and does not restart it by itself', async () => {
    const pid = sup.pids().analytics;
    expect(sup.status().analytics).toEqual({ pid, state: 'running', restarts: 0 });
    await fetch(`${sup.urls.analytics}/crash`).then((r) => r.text());
    await until('the analytics exit', () => sup.status().analytics.state === 'exited');
    const report = sup.status().analytics.lastExit!;
    expect(report).toMatchObject({ name: 'analytics', pid, code: 7, signal: null, expected: false, duringStartup: false });
    expect(report.description).toBe(`analytics (pid ${pid}) exited with code 7, unexpectedly`);
    expect(reports).toEqual([report]);
    expect(jsonLines(join(logDir, 'supervisor.log')).at(-1)).toMatchObject({
      level: 50,
      service: 'supervisor',
      deployable: 'analytics',
      code: 7,
      signal: null,
      expected: false,
      msg: report.description,
    });
    // The process's own log keeps its last words, then the supervisor's line.
    await until('the analytics log line', () => readFileSync(join(logDir, 'analytics.log'), 'utf8').includes('"service":"supervisor"'));
    const log = readFileSync(join(logDir, 'analytics.log'), 'utf8').trimEnd().split('\n');
    expect(log.at(-2)).toBe('fatal: lost the database for good');
    expect(JSON.parse(log.at(-1)!)).toMatchObject({ deployable: 'analytics', code: 7, expected: false });

    await new Promise((r) => setTimeout(r, 500));
    expect(sup.status().analytics.state).toBe('exited');
    expect(await healthy(sup.urls.analytics)).toBe(false);

    await sup.restart('analytics');
    expect(await healthy(sup.urls.analytics)).toBe(true);
    expect(sup.status().analytics).toMatchObject({ state: 'running', restarts: 1, lastExit: report });
    expect(sup.pids().analytics).not.toBe(pid);
  });

  it('reports a requested kill with its signal', async () => {
    const pid = sup.pids().accounts;
    await sup.kill('accounts', 'SIGKILL');
    expect(sup.status().accounts.lastExit).toMatchObject({
      pid,
      code: null,
      signal: 'SIGKILL',
      expected: true,
      description: `accounts (pid ${pid}) was killed by signal SIGKILL, as requested`,
    });
    expect(jsonLines(join(logDir, 'accounts.log')).at(-1)).toMatchObject({ level: 30, signal: 'SIGKILL', expected: true });
    await sup.restart('accounts');
    expect(sup.status().accounts).toMatchObject({ state: 'running', restarts: 1 });
  });

  it('stops everything: exit 0 after SIGTERM, and SIGKILL for a process that ignores it past the grace period', async () => {
    const started = Date.now();
    await sup.stop();
    expect(Date.now() - started).toBeLessThan(5_000);
    const st = sup.status();
    for (const name of ['accounts', 'analytics', 'gateway'] as const) expect(st[name].lastExit).toMatchObject({ code: 0, signal: null, expected: true, forced: false });
    expect(st.models.lastExit).toMatchObject({ code: null, signal: 'SIGKILL', expected: true, forced: true });
    expect(st.models.lastExit!.description).toMatch(
      /^models \(pid \d+\) was killed by signal SIGKILL, as requested \(SIGKILL: it did not stop within the grace period after SIGTERM\)$/,
    );
    expect(jsonLines(join(logDir, 'supervisor.log')).at(-1)).toMatchObject({ deployable: 'models', level: 40, forced: true });
    expect(readFileSync(join(logDir, 'models.log'), 'utf8')).toContain('ignoring SIGTERM');
    expect(reports.filter((r) => !r.expected)).toHaveLength(1); // the crash of the first test only
  });
});

describe('supervisor stop', () => {
  it('reports as requested a service that exits on its own signal before its turn (Ctrl-C reaches the whole group)', async () => {
    const reports: ExitReport[] = [];
    const sup = await startServices({
      root,
      env: {},
      ports: await ports(),
      logDir: join(root, 'logs-stop'),
      stopGraceMs: 1_000,
      onExit: (r) => reports.push(r),
      // The gateway, stopped first, takes the whole grace period: accounts gets the signal meanwhile.
      deployables: [deployable('accounts', 'ok.mjs'), deployable('analytics', 'ok.mjs'), deployable('gateway', 'stubborn.mjs')],
    });
    // Positive control: the same signal outside a stop is an unexpected exit.
    const analytics = sup.pids().analytics!;
    process.kill(analytics, 'SIGTERM');
    await until('the analytics exit', () => sup.status().analytics.state === 'exited');
    expect(reports.map((r) => [r.pid, r.expected])).toEqual([[analytics, false]]);

    const accounts = sup.pids().accounts!;
    const stopping = sup.stop();
    process.kill(accounts, 'SIGTERM');
    await stopping;
    expect(sup.status().accounts.lastExit).toMatchObject({ pid: accounts, code: 0, expected: true, forced: false });
    expect(reports.filter((r) => !r.expected).map((r) => r.pid)).toEqual([analytics]);
  }, 30_000);
});

describe('supervisor start-up failures', () => {
  it.each([
    ['exits-at-start.mjs', /^sources exited with code 3 during start-up; see .*sources\.log; its last lines:\ncannot reach MongoDB\n\{.*"code":3.*\}$/],
    // A signal leaves the exit code null: this used to wait out the whole start-up timeout.
    ['killed-at-start.mjs', /^sources was killed by signal SIGKILL during start-up; see .*sources\.log; its last lines:\n\{.*"signal":"SIGKILL".*\}$/],
  ])('%s: fails at once, saying how the process ended', async (entry, message) => {
    const logDir = join(root, `logs-${entry}`);
    const reports: ExitReport[] = [];
    const started = Date.now();
    const err = (await startServices({
      root,
      env: {},
      ports: await ports(),
      logDir,
      timeoutMs: 30_000,
      onExit: (r) => reports.push(r),
      deployables: [deployable('sources', entry)],
    }).catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(message);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(reports).toEqual([expect.objectContaining({ name: 'sources', expected: false, duringStartup: true })]);
    expect(jsonLines(join(logDir, 'supervisor.log'))).toEqual([expect.objectContaining({ deployable: 'sources', duringStartup: true, expected: false })]);
  });
});

describe.each([
  ['a process that drops connections', (socket: Socket) => void socket.destroy()],
  // Another test's service: its /healthz answers 200, which must not pass for this one's.
  ['another service answering /healthz', (socket: Socket) => void socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok')],
])('supervisor and a port taken before the service listens, by %s', (_holder, onConnection) => {
  let blocker: ReturnType<typeof createServer>;
  let taken: number;
  const sockets = new Set<Socket>();
  beforeAll(async () => {
    blocker = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      onConnection(socket);
    });
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    taken = (blocker.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => blocker.close(r));
  });

  it('starts the process again on a newly picked port when allowed, and the gateway is given the new URL', async () => {
    const p = { ...(await ports()), sources: taken };
    const sup = await startServices({
      root,
      env: {},
      ports: p,
      logDir: join(root, `logs-busy-${taken}`),
      repickBusyPorts: true,
      onExit: () => undefined,
      deployables: [deployable('sources', 'ok.mjs'), deployable('gateway', 'env.mjs')],
    });
    try {
      expect(sup.urls.sources).not.toBe(`http://127.0.0.1:${taken}`);
      expect(await healthy(sup.urls.sources)).toBe(true);
      expect(await fetch(`${sup.urls.gateway}/env/SOURCES_URL`).then((r) => r.text())).toBe(sup.urls.sources);
      expect(readFileSync(join(root, `logs-busy-${taken}`, 'sources.log'), 'utf8')).toContain('EADDRINUSE');
    } finally {
      await sup.stop();
    }
  });

  it('gives each process its metrics port, and one without a metrics port none', async () => {
    const metricsPort = await freePort();
    const sup = await startServices({
      root,
      env: {},
      ports: await ports(),
      metricsPorts: { gateway: metricsPort },
      logDir: join(root, `logs-metrics-${metricsPort}`),
      onExit: () => undefined,
      deployables: [deployable('sources', 'env.mjs'), deployable('gateway', 'env.mjs')],
    });
    try {
      expect(await fetch(`${sup.urls.gateway}/env/METRICS_PORT`).then((r) => r.text())).toBe(String(metricsPort));
      expect(await fetch(`${sup.urls.sources}/env/METRICS_PORT`).then((r) => r.text())).toBe('');
      expect(sup.metricsUrls).toEqual({ gateway: `http://127.0.0.1:${metricsPort}` });
    } finally {
      await sup.stop();
    }
  });

  it('fails with the reason in the message when not allowed (fixed ports)', async () => {
    const err = (await startServices({
      root,
      env: {},
      ports: { ...(await ports()), sources: taken },
      logDir: join(root, `logs-busy-fixed-${taken}`),
      onExit: () => undefined,
      deployables: [deployable('sources', 'ok.mjs')],
    }).catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/^sources exited with code 1 during start-up; see .*; its last lines:\n[\s\S]*EADDRINUSE/);
  });
});
