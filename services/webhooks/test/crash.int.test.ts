import { Webhook } from 'standardwebhooks';
import { newId } from '@dap/contracts';
import { connectMongo, type MongoHandle } from '@dap/mongo';
import { http, startReceiver, uniqueSuffix, waitFor, type ReceivedRequest } from '@dap/testing';
import type { DeliveryDoc } from '../src/persistence/delivery.repository.ts';
import { callerHeaders, dropTestDatabase, eventPublisher, sleep, testConfig, testEnv, topicWatcher } from './harness.ts';
import { spawnWebhooks, type ChildWebhooks } from './process.ts';

/**
 * The service as a real process, killed with SIGKILL while a delivery is on the wire, then restarted under
 * the same INSTANCE_ID. The claim TTL is a full minute, so every event arriving within this test proves
 * that start-up took the dead process's claims back at once rather than waiting for them to lapse, and
 * that what it sent before storing was consumed again from Kafka.
 */
const EVENTS = 150;
const KILL_AT = 40; // the receiver SIGKILLs the service when this request arrives, before answering it

describe('webhooks killed with SIGKILL mid-delivery', () => {
  const env = testEnv({ INSTANCE_ID: `wh-crash-${uniqueSuffix()}`, WEBHOOK_CLAIM_TTL_MS: '60000', LOG_LEVEL: 'warn' });
  const config = testConfig(env); // the same database and topics, parsed, for the publisher and clean-up
  let child: ChildWebhooks | null = null;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let events: Awaited<ReturnType<typeof eventPublisher>>;
  let completions: Awaited<ReturnType<typeof topicWatcher>>;
  let mongo: MongoHandle;
  let killed: Promise<void> | null = null;

  beforeAll(async () => {
    receiver = await startReceiver(() => {
      if (receiver.received.length === KILL_AT && child && !killed) killed = child.kill('SIGKILL');
      return { status: 200, delayMs: 5 };
    });
    child = await spawnWebhooks(env);
    events = await eventPublisher(config);
    completions = await topicWatcher(config, 'webhooks.deliveries');
    mongo = await connectMongo(config.MONGO_URL, config.MONGO_DB);
  });

  afterAll(async () => {
    await child?.kill('SIGTERM');
    await events?.close();
    await completions?.close();
    await mongo?.close();
    await dropTestDatabase(config);
    await receiver?.close();
  });

  it('delivers every event at least once after a restart; duplicates keep their webhook-id and verify', async () => {
    const accountId = newId('acct');
    const reg = await http('POST', `${child!.url}/v1/webhooks`, { body: { url: `${receiver.url}/hooks`, events: ['report.*'] }, headers: callerHeaders(accountId) });
    expect(reg.status).toBe(201);
    const secret: string = reg.body.secret;

    const eventIdByReport = new Map<string, string>();
    let restarted: Promise<ChildWebhooks> | null = null;
    for (let i = 0; i < EVENTS; i++) {
      const ev = await events.publish('report.completed', accountId, { id: newId('rpt'), sourceId: 'src_k', rowCount: i, durationMs: 1 });
      eventIdByReport.set(ev.data.id, ev.id);
      if (killed && !restarted) {
        const k: Promise<void> = killed;
        // What the dead process held is either stored and claimed by it (taken back at start-up) or, sent before
        // it was stored, in the events after the group's committed offset (consumed again).
        restarted = k.then(() => spawnWebhooks(env));
      }
      await sleep(5);
    }
    expect(killed).not.toBeNull();
    child = await restarted!;

    const reportOf = (r: ReceivedRequest) => (JSON.parse(r.body) as { data: { id: string } }).data.id;
    await waitFor(() => new Set(receiver.received.map(reportOf)).size >= EVENTS, { what: `all ${EVENTS} events`, timeoutMs: 40_000 }).catch((err) => {
      throw new Error(`${(err as Error).message}; got ${new Set(receiver.received.map(reportOf)).size}\n${child?.output() ?? ''}`);
    });

    const byEvent = new Map<string, ReceivedRequest[]>();
    for (const r of receiver.received) {
      const eventId = eventIdByReport.get(reportOf(r));
      expect(r.headers['webhook-id']).toBe(eventId); // a duplicate carries the same webhook-id
      expect(() => new Webhook(secret).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
      byEvent.set(eventId!, [...(byEvent.get(eventId!) ?? []), r]);
    }
    expect([...eventIdByReport.values()].every((id) => byEvent.has(id))).toBe(true);
    // The request on the wire when the process died was never answered, so it was sent again after restart.
    const cutShort = receiver.received[KILL_AT - 1]!;
    expect(byEvent.get(String(cutShort.headers['webhook-id']))!.length).toBeGreaterThanOrEqual(2);
    const duplicates = [...byEvent.values()].filter((rs) => rs.length > 1).length;
    // eslint-disable-next-line no-console -- the measured count goes to the test log
    console.log(`SIGKILL test: ${EVENTS} events, ${receiver.received.length} requests, ${duplicates} event(s) delivered more than once`);

    // Everything ends succeeded, nothing is left claimed by the dead process.
    const deliveries = mongo.db.collection<DeliveryDoc>('deliveries');
    await waitFor(async () => (await deliveries.countDocuments({ status: 'succeeded' })) === EVENTS, { what: 'every delivery succeeded' });

    // Each delivery emits exactly one delivery.completed, across the crash: events staged but not recorded
    // when the process died emitted nothing (their attempt was made again), recorded ones were published by
    // the successor's sweep with the event id they were staged with (a consumer de-duplicates repeats by id).
    const idsByDelivery = new Map<string, Set<string>>();
    await waitFor(
      () => {
        for (const e of completions.seen) {
          if (e.type !== 'delivery.completed') continue;
          idsByDelivery.set(e.data.eventId, (idsByDelivery.get(e.data.eventId) ?? new Set()).add(e.id));
        }
        return idsByDelivery.size >= EVENTS;
      },
      { what: `a delivery.completed for each of the ${EVENTS} deliveries` },
    );
    expect([...idsByDelivery.keys()].sort()).toEqual([...eventIdByReport.values()].sort());
    expect([...idsByDelivery.values()].filter((ids) => ids.size !== 1)).toEqual([]);
    await waitFor(async () => (await mongo.db.collection('delivery_outbox').countDocuments({})) === 0, { what: 'the outbox drained' });
  }, 75_000); // ~15 s normally; the headroom is for a loaded machine (start-up, the consumer group's rebalance)
});
