import { join } from 'node:path';
import { createRedis } from '@dap/redis';
import { repoRoot, startReceiver, waitFor } from '@dap/testing';
import { checkEvents, Load } from './load.ts';
import { startPrivateStack, type Component, type PrivateStack } from './private-stack.ts';
import { FAULT_ENV, prepareAccount, verifyAcked } from './scenario.ts';
import { Recorder, reportFigures, sleep, startSystem, type Recorded, type System } from '../system.ts';

/**
 * Infrastructure faults on a Redis, Kafka and MongoDB-wire server of this run's own (see
 * private-stack.ts: the shared dev and test stacks are never touched). Run by deploy/local/faults.sh only
 * (not by `npm test`): it takes a few minutes.
 *
 * - Kafka stopped for 30 s under load: writes keep being acknowledged (their events wait in the outbox),
 *   producers and consumers recover by themselves, and every event is delivered afterwards.
 * - Redis stopped under load: the gateway fails open with its per-instance limit, no 5xx; Redis is used
 *   again once it is back.
 * - MongoDB stopped for 10 s under load: answers are 503 problem bodies with Retry-After (no 500, no hang),
 *   and everything recovers afterwards, acknowledged writes and events included.
 */
const RATE = Number(process.env.FAULT_RATE ?? 6);
const KAFKA_DOWN_MS = Number(process.env.FAULT_KAFKA_DOWN_MS ?? 30_000);
const MONGO_DOWN_MS = Number(process.env.FAULT_MONGO_DOWN_MS ?? 10_000);
const REDIS_DOWN_MS = Number(process.env.FAULT_REDIS_DOWN_MS ?? 10_000);

let stack: PrivateStack;
let sys: System;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const rec = new Recorder();
rec.keepBodies = false;
let ctx: Awaited<ReturnType<typeof prepareAccount>>;

beforeAll(async () => {
  receiver = await startReceiver();
  stack = await startPrivateStack(join(repoRoot(), '.local', 'faults', `stack-${process.pid}`));
  sys = await startSystem({ name: 'infra', stack: stack.urls, env: FAULT_ENV });
  ctx = await prepareAccount(sys, rec, receiver.url, 'professional');
}, 240_000);

afterAll(async () => {
  await sys?.stop();
  await stack?.close();
  await receiver?.close();
});

/** Runs load, stops one component for `downMs`, starts it again, keeps the load on a little, then checks. */
async function outage(component: Component, downMs: number) {
  const from = rec.responses.length;
  const load = new Load({
    rec,
    gw: sys.gw,
    headers: ctx.headers,
    perSecond: RATE,
    sourceId: ctx.sourceId,
    modelId: ctx.modelId,
    sinkUrl: `${receiver.url}/sink`,
    timeoutMs: 12_000,
  });
  load.start();
  await sleep(3_000);
  await stack.stop(component);
  const downAt = rec.responses.length;
  await sleep(downMs);
  const upAt = rec.responses.length;
  await stack.start(component);
  // Recovery: writes are acknowledged again soon after the component is back.
  const backAt = Date.now();
  await waitFor(
    async () => {
      const r = await rec.call(sys.gw, 'POST', '/v1/sources', { headers: ctx.headers, body: { type: 'inline', name: 'probe', rows: [{ a: 1 }] } });
      if (r.status === 201) load.acked.sources.push(r.json.id);
      return r.status === 201;
    },
    { timeoutMs: 60_000, intervalMs: 500, what: `writes acknowledged again after ${component} returned` },
  );
  const recoverySeconds = Math.round((Date.now() - backAt) / 100) / 10;
  await sleep(3_000);
  await load.stop();
  const lost = await verifyAcked(rec, sys.gw, ctx.headers, load.acked);
  const events = await waitFor(
    () => {
      const c = checkEvents(
        load.acked,
        receiver.received.filter((r) => r.path === '/all'),
      );
      return c.missing.length === 0 ? c : null;
    },
    { timeoutMs: 120_000, intervalMs: 1_000, what: 'every acknowledged event delivered' },
  ).catch(() =>
    checkEvents(
      load.acked,
      receiver.received.filter((r) => r.path === '/all'),
    ),
  );
  const during = rec.responses.slice(downAt, upAt);
  const all = rec.responses.slice(from);
  const figures = {
    fault: `${component} stopped ${downMs / 1000} s`,
    requests: load.requests,
    statuses: load.summary(),
    acknowledged: load.acked.sources.length + load.acked.reports.length + load.acked.webhooks.length,
    lost: lost.length,
    eventsMissing: events.missing.length,
    duplicates: events.duplicates.length,
    fiveXX: all.filter((r) => r.status >= 500).length,
    hangs: all.filter((r) => r.error === 'timeout').length,
    hangPaths: [...new Set(all.filter((r) => r.error === 'timeout').map((r) => `${r.method} ${r.path.replace(/[a-z]+_[0-9A-Z]{26}/g, '{id}').split('?')[0]}`))].join(' '),
    recoverySeconds,
  };
  reportFigures(figures);
  // eslint-disable-next-line no-console -- the figures are part of the report
  console.log(JSON.stringify(figures));
  return { load, lost, events, during, all };
}

const describe5xx = (rs: Recorded[]) => rs.map((r) => `${r.method} ${r.path.slice(0, 60)} → ${r.error ?? r.status} ${r.text.slice(0, 100)}`);

it(`Kafka stopped for ${KAFKA_DOWN_MS / 1000} s: writes go on, and the outbox and consumers catch up by themselves`, async () => {
  const { lost, events, all, load } = await outage('kafka', KAFKA_DOWN_MS);
  expect(lost).toEqual([]);
  expect(events.missing).toEqual([]);
  expect(events.duplicates).toEqual([]);
  // Nothing on the request path needs Kafka: no server errors and no hangs while it was away.
  expect(describe5xx(all.filter((r) => r.status >= 500 || r.error))).toEqual([]);
  expect(load.acked.sources.length).toBeGreaterThan(10);
}, 300_000);

it(`Redis stopped for ${REDIS_DOWN_MS / 1000} s: the gateway fails open (no 5xx) and uses Redis again when it is back`, async () => {
  const probe = createRedis(stack.urls.REDIS_URL);
  probe.on('error', () => {});
  try {
    const { all, lost, events } = await outage('redis', REDIS_DOWN_MS);
    // No 5xx flood: nothing on the request path needs Redis. (A rare 503 from a reset upstream connection,
    // unrelated to Redis, is tolerated here and reported by the figures; see the issue-10 report.)
    const serverErrors = all.filter((r) => r.status >= 500 || r.error);
    expect(describe5xx(serverErrors.filter((r) => r.status !== 503 || !r.headers['retry-after']))).toEqual([]);
    expect(serverErrors.length).toBeLessThanOrEqual(Math.ceil(all.length * 0.05));
    expect(all.filter((r) => r.status === 429)).toEqual([]);
    expect(lost).toEqual([]);
    expect(events.missing).toEqual([]);
    // Back on Redis: the account's sliding window is counted there again.
    await waitFor(async () => (await probe.zcard(`rl:{${ctx.account.accountId}}`)) > 0, { timeoutMs: 15_000, what: 'the limiter counting in Redis again' });
    const log = sys.logs()['gateway.log'] ?? '';
    expect(log).toMatch(/redis unavailable: rate limiting with the per-instance fallback/);
  } finally {
    probe.disconnect();
  }
}, 300_000);

it(`MongoDB stopped for ${MONGO_DOWN_MS / 1000} s: 503 problem bodies with Retry-After, no 500 and no hang, then full recovery`, async () => {
  const { during, all, lost, events } = await outage('mongo', MONGO_DOWN_MS);
  const failures = all.filter((r) => r.status >= 500 || r.error);
  // Every failure is a 503 problem with Retry-After (gateway-level 502/504 and 500 are not acceptable).
  const bad = failures.filter((r) => r.status !== 503 || !r.headers['retry-after'] || !/^application\/problem\+json/.test(r.headers['content-type'] ?? ''));
  expect(describe5xx(bad)).toEqual([]);
  expect(during.some((r) => r.status === 503)).toBe(true);
  // Answers come quickly (server selection gives up after 3 s): no request waited anywhere near the timeout.
  expect(all.filter((r) => r.ms > 10_000).length).toBe(0);
  expect(lost).toEqual([]);
  expect(events.missing).toEqual([]);
  expect(events.duplicates).toEqual([]);
}, 300_000);
