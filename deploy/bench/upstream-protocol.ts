/**
 * What the protocol between the gateway and a service costs the proxy: the proxy library alone
 * (http-proxy-middleware over node:http, HTTP/1.1 keep-alive, as the gateway proxies) against an undici Pool
 * (HTTP/1.1), node:http's client without the library, a node:http2 session and an undici h2c client, each in front of the same fixed answer served
 * over HTTP/1.1 and over cleartext HTTP/2 (lib/upstream-proxies.ts). No stack is needed.
 *
 * The figure is CPU µs per request of each proxy, and of the upstream behind it (a service would pay the
 * upstream's share), from /proc; runs alternate their order so drift hits every proxy alike.
 *
 *   node deploy/bench/upstream-protocol.ts [--reps 6] [--duration 5] [--warmup 1] [--connections 32]
 */
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { calibrate } from './lib/conditions.ts';
import { cpuTimeMs, runLoadProcess, startNodeProcess, type BenchProcess } from './lib/procs.ts';
import { median, round } from './lib/stats.ts';
import { freePort } from '../local/supervisor.ts';

const { values } = parseArgs({
  options: {
    reps: { type: 'string', default: '6' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    connections: { type: 'string', default: '32' },
  },
});
const [reps, durationSec, warmupSec, connections] = [values.reps, values.duration, values.warmup, values.connections].map(Number) as [number, number, number, number];
const root = process.cwd();
const logDir = join(root, '.local', 'bench', 'upstream-protocol');
const log = (line: string) => process.stdout.write(`[upstream] ${line}\n`);
const load1 = () => round(loadavg()[0]!, 2);

const calStart = calibrate();
log(`CPU calibration ${calStart.bestMs} ms; load ${load1()}; ${connections} connections, ${reps} × ${durationSec} s`);
const procs: BenchProcess[] = [];
try {
  const h2Port = await freePort();
  const upstream = await startNodeProcess({
    root,
    name: 'upstream',
    entry: 'deploy/bench/lib/upstream-proxies.ts',
    port: await freePort(),
    env: { ROLE: 'upstream', H2_PORT: String(h2Port) },
    logDir,
  });
  procs.push(upstream);
  const h1 = upstream.url;
  const h2 = `http://127.0.0.1:${h2Port}`;
  const proxy = async (name: string, entry: string, target: string, role?: string) => {
    const p = await startNodeProcess({ root, name, entry, port: await freePort(), env: { TARGET: target, ...(role ? { ROLE: role } : {}) }, logDir });
    procs.push(p);
    return p;
  };
  const targets: Record<string, BenchProcess> = {
    library: await proxy('library', 'deploy/bench/lib/plain-proxy.ts', h1),
    'node-h1': await proxy('node-h1', 'deploy/bench/lib/upstream-proxies.ts', h1, 'node-h1'),
    'undici-h1': await proxy('undici-h1', 'deploy/bench/lib/upstream-proxies.ts', h1, 'undici-h1'),
    'node-h2': await proxy('node-h2', 'deploy/bench/lib/upstream-proxies.ts', h2, 'node-h2'),
    'undici-h2c': await proxy('undici-h2c', 'deploy/bench/lib/upstream-proxies.ts', h2, 'undici-h2c'),
  };
  const path = '/v1/models/mdl_forecast';
  const headers = { authorization: 'Bearer dap_test_0123456789abcdef', 'x-request-id': 'req_0123456789abcdef' };
  const expected = await (await fetch(`${h1}${path}`)).text();
  for (const [name, p] of Object.entries(targets)) {
    const res = await fetch(`${p.url}${path}`, { headers });
    const body = await res.text();
    if (res.status !== 200 || body !== expected || res.headers.get('content-type') !== 'application/json; charset=utf-8') {
      throw new Error(`${name} answered ${res.status} with ${body.length} bytes, not the upstream's answer`);
    }
  }
  const names = Object.keys(targets);
  for (const n of names) await runLoadProcess(root, { mode: 'closed', url: `${targets[n]!.url}${path}`, headers, connections, durationSec: 2 }, null);

  type Run = { proxy: number; upstream: number; rps: number; p99: number };
  const runs: Record<string, Run[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let rep = 0; rep < reps; rep++) {
    for (const n of rep % 2 === 0 ? names : [...names].reverse()) {
      const p = targets[n]!;
      const before = [cpuTimeMs(p.pid)!, cpuTimeMs(upstream.pid)!];
      const r = await runLoadProcess(root, { mode: 'closed', url: `${p.url}${path}`, headers, connections, durationSec, warmupSec }, null);
      const after = [cpuTimeMs(p.pid)!, cpuTimeMs(upstream.pid)!];
      const requests = r.requests + (r.warmupRequests ?? 0);
      const bad = Object.entries(r.statusCounts).reduce((s, [k, c]) => (k.startsWith('2') ? s : s + c), r.errors);
      if (bad) throw new Error(`${n}: ${bad} answers were not 2xx`);
      const run: Run = { proxy: ((after[0]! - before[0]!) * 1000) / requests, upstream: ((after[1]! - before[1]!) * 1000) / requests, rps: r.rps, p99: r.latency.p99 };
      runs[n]!.push(run);
      log(
        `rep ${rep + 1} ${n}: ${Math.round(r.rps)} req/s, proxy CPU µs/request ${round(run.proxy)}, upstream ${round(run.upstream)}, p99 ${round(r.latency.p99)} ms, load ${load1()}`,
      );
    }
  }
  const calEnd = calibrate();
  log(`CPU calibration ${calEnd.bestMs} ms at the end (start ${calStart.bestMs})`);
  const med = (n: string, k: keyof Run) => median(runs[n]!.map((r) => r[k]));
  for (const n of names) {
    log(
      `${n}: median proxy CPU µs/request ${round(med(n, 'proxy'))} [${runs[n]!.map((r) => Math.round(r.proxy)).join(' ')}], upstream ${round(med(n, 'upstream'))}, proxy + upstream ${round(med(n, 'proxy') + med(n, 'upstream'))}, req/s ${Math.round(med(n, 'rps'))}, p99 ${round(med(n, 'p99'))} ms; proxy CPU ÷ library's ${round(med(n, 'proxy') / med('library', 'proxy'))}`,
    );
  }
} finally {
  for (const p of procs.reverse()) await p.stop();
}
