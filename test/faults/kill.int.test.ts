import { DEPLOYABLES } from '../../deploy/local/supervisor.ts';
import { startReceiver, waitFor } from '@dap/testing';
import { checkEvents, Load } from './load.ts';
import { Recorder, reportFigures, sleep, startSystem, type System } from '../system.ts';
import { FAULT_ENV, prepareAccount, verifyAcked } from './scenario.ts';

/**
 * Kill any process with SIGKILL mid-load — no acknowledged write is lost, and every event of an
 * acknowledged write is still delivered after the restart (at most duplicated under the same webhook-id).
 * Every process (the five services and the gateway) is killed once, in turn, under a steady open-loop load
 * through the gateway. `FAULT_KILL_ROUNDS` (deploy/local/faults.sh sets 3) repeats the whole cycle.
 */
const ROUNDS = Number(process.env.FAULT_KILL_ROUNDS ?? 1);
const RATE = Number(process.env.FAULT_RATE ?? 8);
let sys: System;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const rec = new Recorder();
rec.keepBodies = false;

beforeAll(async () => {
  receiver = await startReceiver();
  sys = await startSystem({ name: 'kill', env: FAULT_ENV });
}, 180_000);

afterAll(async () => {
  await sys?.stop();
  await receiver?.close();
});

it(`loses no acknowledged write and no event when each process is SIGKILLed under load (${ROUNDS} round(s))`, async () => {
  const { headers, sourceId, modelId } = await prepareAccount(sys, rec, receiver.url, 'professional');
  const load = new Load({ rec, gw: sys.gw, headers, perSecond: RATE, sourceId, modelId, sinkUrl: `${receiver.url}/sink` });
  let faults = 0;
  load.start();
  for (let round = 0; round < ROUNDS; round++) {
    for (const d of DEPLOYABLES) {
      await sleep(1_500);
      await sys.services.kill(d.name, 'SIGKILL');
      faults++;
      await sleep(1_000);
      await sys.services.restart(d.name);
    }
  }
  await sleep(2_000);
  await load.stop();
  const acked = load.acked;
  const written = acked.sources.length + acked.reports.length + acked.webhooks.length;
  // The load did real work through the faults: writes were acknowledged, and some requests failed.
  expect(acked.sources.length).toBeGreaterThan(5);
  expect(acked.reports.length).toBeGreaterThan(5);
  expect(acked.predictions.length).toBeGreaterThan(5);

  const lost = await verifyAcked(rec, sys.gw, headers, acked);
  expect(lost).toEqual([]);
  const events = await waitFor(
    () => {
      const c = checkEvents(
        acked,
        receiver.received.filter((r) => r.path === '/all'),
      );
      return c.missing.length === 0 ? c : null;
    },
    { timeoutMs: 90_000, intervalMs: 500, what: 'every acknowledged event delivered' },
  ).catch(() =>
    checkEvents(
      acked,
      receiver.received.filter((r) => r.path === '/all'),
    ),
  );
  expect(events.missing).toEqual([]);
  expect(events.duplicates).toEqual([]);
  // Nothing but refusals while a process was down: 5xx only as 502/503 problem answers from the gateway.
  const serverErrors = rec.responses.filter((r) => r.status >= 500 && r.status !== 502 && r.status !== 503);
  expect(serverErrors.map((r) => `${r.method} ${r.path} ${r.status} ${r.text.slice(0, 120)}`)).toEqual([]);
  reportFigures({
    fault: `SIGKILL each process ×${ROUNDS}`,
    faults,
    requests: load.requests,
    statuses: load.summary(),
    acknowledged: written,
    lost: lost.length,
    eventsMissing: events.missing.length,
    duplicates: events.duplicates.length,
    fiveXX: serverErrors.length,
  });
  // eslint-disable-next-line no-console -- the figures are part of the report
  console.log(
    `SIGKILL: ${faults} faults, ${load.requests} requests (${load.summary()}), ${written} writes acknowledged, ${lost.length} lost, ` +
      `${acked.predictions.length} predictions, ${events.delivered} webhook deliveries, ${events.missing.length} events missing`,
  );
}, 300_000);
