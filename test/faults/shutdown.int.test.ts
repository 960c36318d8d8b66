import { request } from 'node:http';
import { DEPLOYABLES, type DeployableName } from '../../deploy/local/supervisor.ts';
import { startReceiver, waitFor } from '@dap/testing';
import { signup } from '../security/fixtures.ts';
import { FAULT_ENV, prepareAccount } from './scenario.ts';
import { Recorder, reportFigures, sleep, startSystem, type System } from '../system.ts';

/**
 * Graceful shutdown on SIGTERM, for every process: it stops accepting new connections, finishes the request
 * in flight (a slow upload, still arriving when the signal lands, completes with its 2xx), closes its
 * consumers and connections, and exits 0 (installShutdown logs "shutdown failed" or "deadline passed" and
 * exits 1 otherwise) within 10 s.
 */
let sys: System;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const rec = new Recorder();
let ctx: Awaited<ReturnType<typeof prepareAccount>>;
let session: Awaited<ReturnType<typeof signup>>;

beforeAll(async () => {
  receiver = await startReceiver();
  sys = await startSystem({ name: 'term', env: FAULT_ENV });
  ctx = await prepareAccount(sys, rec, receiver.url, 'enterprise');
  session = await signup(rec, sys.gw, 'term-session');
}, 180_000);

afterAll(async () => {
  await sys?.stop();
  await receiver?.close();
});

/** The request that lands on each process: a write whose body is still being sent. */
function slowRequestFor(name: DeployableName): { path: string; body: unknown; headers: Record<string, string>; expect: number } {
  switch (name) {
    case 'accounts':
      return { path: '/v1/keys', body: { name: 'slow key', scopes: ['sources:read'] }, headers: session.headers, expect: 201 };
    case 'analytics':
      return { path: '/v1/analytics/query', body: { sourceId: ctx.sourceId, measures: [{ op: 'count' }] }, headers: ctx.headers, expect: 201 };
    case 'models':
      return {
        path: `/v1/models/${ctx.modelId}/predict`,
        body: { inputs: [{ series: Array.from({ length: 28 }, (_, i) => i % 7), horizon: 3, seasonLength: 7 }] },
        headers: ctx.headers,
        expect: 200,
      };
    case 'webhooks':
      return { path: '/v1/webhooks', body: { url: `${receiver.url}/slow`, events: ['webhook.test'] }, headers: ctx.headers, expect: 201 };
    default:
      return { path: '/v1/sources', body: { type: 'inline', name: 'slow', rows: [{ a: 1 }] }, headers: ctx.headers, expect: 201 };
  }
}

/** Sends the head and half the body now; `finish()` sends the rest and resolves with the status. */
function startSlow(base: string, r: ReturnType<typeof slowRequestFor>) {
  const body = Buffer.from(JSON.stringify(r.body));
  const half = Math.floor(body.length / 2);
  let resolve!: (v: { status: number; text: string }) => void;
  let reject!: (e: Error) => void;
  const done = new Promise<{ status: number; text: string }>((res, rej) => ((resolve = res), (reject = rej)));
  const req = request(
    `${base}${r.path}`,
    { method: 'POST', headers: { ...r.headers, 'content-type': 'application/json', 'content-length': String(body.length), connection: 'close' } },
    (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    },
  );
  req.on('error', reject);
  req.write(body.subarray(0, half));
  return {
    finish: () => {
      req.end(body.subarray(half));
      return done;
    },
  };
}

const canConnect = (url: string) =>
  fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) }).then(
    () => true,
    () => false,
  );

it.each(DEPLOYABLES.map((d) => [d.name] as const))(
  '%s finishes its in-flight request on SIGTERM, refuses new ones, and exits cleanly within 10 s',
  async (name) => {
    const r = slowRequestFor(name);
    try {
      // Through the gateway: when a service stops, the gateway's connection to it carries the slow request.
      const slow = startSlow(sys.gw, r);
      await sleep(300);
      const started = Date.now();
      const exited = sys.services.kill(name, 'SIGTERM');
      // Stopped accepting: a new connection to the stopping process is refused while the old request is open.
      const refusing = await waitFor(async () => !(await canConnect(sys.services.urls[name])), { timeoutMs: 5_000, intervalMs: 100, what: `${name} to stop accepting` }).catch(
        () => false,
      );
      expect(refusing).toBe(true);
      const answer = await slow.finish();
      expect([answer.status, answer.text.slice(0, 200)]).toEqual([r.expect, expect.any(String)]);
      await exited;
      const took = Date.now() - started;
      reportFigures({ fault: `SIGTERM ${name}`, requests: 1, statuses: String(answer.status), exitSeconds: took / 1000 });
      expect(took).toBeLessThan(10_000);
      await sleep(200);
      const log = sys.logs()[`${name}.log`] ?? '';
      const lastRun = log.slice(log.lastIndexOf('\n', log.lastIndexOf('"msg":"shutting down"')) + 1);
      expect(lastRun).toMatch(/^\{[^\n]*"signal":"SIGTERM"/);
      expect(lastRun).not.toMatch(/shutdown failed|shutdown deadline passed|"level":50/);
    } finally {
      await sys.services.restart(name);
    }
    expect(await canConnect(sys.services.urls[name])).toBe(true);
  },
  60_000,
);
