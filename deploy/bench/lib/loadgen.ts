/**
 * The load generator, run as its own process (`node deploy/bench/lib/loadgen.ts '<json spec>'`, optionally
 * under `taskset`) so it never shares an event loop, or a core when pinned, with the servers it measures.
 * It prints one JSON line: a LoadResult.
 *
 * Two modes:
 * - `closed` — autocannon: `connections` clients each send the next request as soon as the previous answer
 *   arrives; this finds the maximum req/s. Latencies come from autocannon's per-response event (float ms from
 *   process.hrtime), not from its histogram, which rounds to whole milliseconds.
 * - `paced` — open loop at a constant `rate`, like wrk2: request i is due at start + i/rate whatever happened
 *   before, and its latency counts from when it was due (so a stall is not hidden by coordinated omission).
 *   autocannon's own `overallRate` sends each second's quota back to back and then idles until the next
 *   second (lib/httpClient.js `reqsMadeThisSecond`), which measures burst latency, not latency at that rate.
 * - `overload` — autocannon with `overallRate` (bursty is fine there: it is an overload test).
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { round, Samples, summarize, type LatencySummary } from './stats.ts';

export interface LoadSpec {
  mode: 'closed' | 'paced' | 'overload';
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  durationSec: number;
  warmupSec?: number;
  /** closed/overload: concurrent connections. */
  connections?: number;
  /** paced: requests per second; overload: autocannon overallRate. */
  rate?: number;
  /** paced: requests allowed in flight before new ones count as errors (dropped). */
  maxInFlight?: number;
  /**
   * closed: a file of API keys, one per line; request i carries `Authorization: Bearer <key i mod n>`, so
   * every key is active (a file, as 100,000 keys do not fit on a command line).
   */
  bearerKeysFile?: string;
  /** closed: stop after this many requests instead of after `durationSec` (e.g. one pass over every key). */
  amount?: number;
}

export interface LoadResult {
  mode: LoadSpec['mode'];
  durationSec: number;
  requests: number;
  /** Completed requests per second over the measured period. */
  rps: number;
  statusCounts: Record<string, number>;
  errors: number;
  /** Latency of every completed request in ms; for paced mode counted from when it was due. */
  latency: LatencySummary;
  /** paced only: latency counted from when the request was actually written. */
  serviceLatency?: LatencySummary;
  /**
   * paced only: how late the load generator's own event loop ran (ms), p99 and max. Its stalls delay the
   * answers it reads as much as the servers' do, so a latency tail no larger than this is the measurer's.
   */
  ownLoopDelay?: { p99: number; max: number };
  /** Responses completed during the warm-up before the measured run (for CPU-per-request figures). */
  warmupRequests?: number;
}

interface AutocannonInstance {
  on(event: 'response', fn: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): void;
  on(event: 'done', fn: (result: AutocannonResult) => void): void;
  on(event: 'reqError', fn: (err: Error) => void): void;
}
interface AutocannonResult {
  requests: { total: number };
  errors: number;
  timeouts: number;
  duration: number;
  statusCodeStats: Record<string, { count: number }>;
}
type Autocannon = (opts: Record<string, unknown>) => AutocannonInstance;

const requireFromRoot = createRequire(join(process.cwd(), 'package.json'));

function runAutocannon(spec: LoadSpec, durationSec: number, record: boolean): Promise<LoadResult> {
  const autocannon = requireFromRoot('autocannon') as Autocannon;
  const latencies = new Samples();
  const statusCounts: Record<string, number> = {};
  const keys = spec.bearerKeysFile ? readFileSync(spec.bearerKeysFile, 'utf8').split('\n').filter(Boolean) : null;
  let next = 0;
  const rotate = keys
    ? {
        requests: [
          { setupRequest: (req: { headers?: Record<string, string> }) => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${keys[next++ % keys.length]}` } }) },
        ],
      }
    : {};
  return new Promise((resolve) => {
    const instance = autocannon({
      ...rotate,
      url: spec.url,
      method: spec.method ?? 'GET',
      headers: spec.headers ?? {},
      ...(spec.body !== undefined ? { body: spec.body } : {}),
      connections: spec.connections ?? 50,
      pipelining: 1,
      ...(spec.amount && record ? { amount: spec.amount } : { duration: durationSec }),
      timeout: 10,
      ...(spec.mode === 'overload' && spec.rate ? { overallRate: spec.rate } : {}),
    });
    let unrecorded = 0;
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (!record) return void unrecorded++;
      statusCounts[statusCode] = (statusCounts[statusCode] ?? 0) + 1;
      latencies.push(responseTime);
    });
    instance.on('done', (r) => {
      const requests = record ? latencies.length : unrecorded;
      resolve({
        mode: spec.mode,
        durationSec: r.duration,
        requests,
        rps: requests / r.duration,
        statusCounts,
        errors: r.errors + r.timeouts,
        latency: summarize(latencies.values()),
      });
    });
  });
}

function runPaced(spec: LoadSpec, durationSec: number): Promise<LoadResult> {
  const rate = spec.rate ?? 100;
  const target = new URL(spec.url);
  const agent = new Agent({ keepAlive: true, maxSockets: spec.maxInFlight ?? 512 });
  const latencies = new Samples();
  const service = new Samples();
  const statusCounts: Record<string, number> = {};
  const total = Math.max(1, Math.round(rate * durationSec));
  const intervalMs = 1000 / rate;
  const maxInFlight = spec.maxInFlight ?? 512;
  const body = spec.body !== undefined ? Buffer.from(spec.body) : undefined;
  const headers = { ...(spec.headers ?? {}), ...(body ? { 'content-length': String(body.length) } : {}) };
  let sent = 0;
  let done = 0;
  let inFlight = 0;
  let errors = 0;
  const loopDelay = monitorEventLoopDelay({ resolution: 2 });
  loopDelay.enable();
  const start = performance.now();
  return new Promise((resolve) => {
    const finish = () => {
      const elapsed = (performance.now() - start) / 1000;
      loopDelay.disable();
      agent.destroy();
      resolve({
        mode: 'paced',
        durationSec: elapsed,
        requests: latencies.length,
        rps: latencies.length / elapsed,
        statusCounts,
        errors,
        latency: summarize(latencies.values()),
        serviceLatency: summarize(service.values()),
        ownLoopDelay: { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 },
      });
    };
    const complete = () => {
      inFlight--;
      if (++done === total) finish();
    };
    const fire = (due: number) => {
      if (inFlight >= maxInFlight) {
        errors++;
        inFlight++;
        return complete();
      }
      inFlight++;
      const written = performance.now();
      const req = request({ host: target.hostname, port: target.port, path: target.pathname + target.search, method: spec.method ?? 'GET', headers, agent }, (res) => {
        res.on('data', () => {});
        res.on('end', () => {
          const now = performance.now();
          statusCounts[res.statusCode ?? 0] = (statusCounts[res.statusCode ?? 0] ?? 0) + 1;
          latencies.push(now - due);
          service.push(now - written);
          complete();
        });
      });
      req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
      req.on('error', () => {
        errors++;
        complete();
      });
      req.end(body);
    };
    // A timer tick sends every request that has fallen due, so timer jitter delays requests (and shows in
    // their latency) instead of lowering the rate.
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + sent * intervalMs <= now) fire(start + sent++ * intervalMs);
      if (sent < total) setTimeout(tick, Math.max(0, start + sent * intervalMs - performance.now()));
    };
    tick();
  });
}

/** A paced run in a log line: its p50 and p99, and how late the load generator's own loop ran. */
export function describePaced(r: LoadResult): string {
  const delay = r.ownLoopDelay;
  return `p50 ${round(r.latency.p50)} ms, p99 ${round(r.latency.p99)} ms (the load generator's own loop delay p99 ${round(delay?.p99 ?? NaN)}, max ${round(delay?.max ?? NaN)} ms)`;
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const paced = spec.mode === 'paced';
  let warmupRequests = 0;
  if (spec.warmupSec && spec.warmupSec > 0) {
    warmupRequests = (await (paced ? runPaced(spec, spec.warmupSec) : runAutocannon(spec, spec.warmupSec, false))).requests;
  }
  const result = await (paced ? runPaced(spec, spec.durationSec) : runAutocannon(spec, spec.durationSec, true));
  return { ...result, warmupRequests };
}

if (process.argv[1]?.endsWith('loadgen.ts') && process.argv[2]) {
  const spec = JSON.parse(process.argv[2]) as LoadSpec;
  runLoad(spec).then(
    (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
    (err: Error) => {
      process.stderr.write(`loadgen failed: ${err.stack ?? err.message}\n`);
      process.exit(1);
    },
  );
}
