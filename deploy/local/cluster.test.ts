import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * cluster.sh's start-up bookkeeping (spawn, pid_of, wait_ready), sourced into a shell of its own with the
 * cluster's folders in a temporary directory; the processes are small shell commands, never the cluster.
 */
const script = join(import.meta.dirname, 'cluster.sh');
let base: string;
const started: number[] = [];

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'dap-cluster-'));
  mkdirSync(join(base, 'logs'));
  mkdirSync(join(base, 'pids'));
});
afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(base, { recursive: true, force: true });
});

function cluster(commands: string, readyTimeoutS = 20) {
  const r = spawnSync('bash', ['-c', `source "$1"; BASE=$2; LOGS=$2/logs; PIDS=$2/pids; ${commands}`, 'cluster-test', script, base], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', CLUSTER_READY_TIMEOUT: String(readyTimeoutS) },
    timeout: 30_000,
  });
  const pidFile = join(base, 'pids', 'services.pid');
  if (existsSync(pidFile)) started.push(Number(readFileSync(pidFile, 'utf8')));
  return r;
}

it('reports a supervisor that could not start with its log, instead of only "did not start"', () => {
  // A fresh clone before npm ci: node_modules/.bin/node does not exist.
  const r = cluster('spawn services "$LOGS/services.log" "$BASE/node_modules/.bin/node" cluster.ts; wait_ready services "$BASE/ready.env"');
  expect(r.status).toBe(1);
  expect(r.stderr).toContain('node_modules/.bin/node: No such file or directory');
  expect(r.stderr).toContain('[cluster] FAILED: the services did not start (the last lines of');
});

it('waits until the supervisor writes ready.env while it runs, and records the pid of the process itself', () => {
  const r = cluster(
    `spawn services "$LOGS/services.log" bash -c 'sleep 0.5; echo GATEWAY_URL=x >"$1"; exec sleep 30' services "$BASE/ready.env"; wait_ready services "$BASE/ready.env"; pid_of services`,
  );
  expect(r.stderr).not.toContain('FAILED');
  expect(r.status).toBe(0);
  const pid = Number(readFileSync(join(base, 'pids', 'services.pid'), 'utf8'));
  expect(r.stdout.trim()).toBe(String(pid));
  // The recorded pid is the command's own (exec'd through nohup, setsid and bash), so down can stop it.
  expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')).toEqual(['sleep', '30', '']);
  process.kill(pid, 'SIGKILL');
  // Until its new parent reaps it, a killed process still answers kill -0.
  expect(cluster('for _ in $(seq 100); do pid_of services >/dev/null || { echo down; exit 0; }; sleep 0.1; done; echo up').stdout.trim()).toBe('down');
});

it('gives up after the ready timeout when the supervisor runs but never becomes ready', () => {
  const r = cluster('spawn services "$LOGS/services.log" sleep 30; wait_ready services "$BASE/ready.env"', 1);
  expect(r.status).toBe(1);
  expect(r.stderr).toContain('[cluster] FAILED: the services were not ready within 1s');
});
