import { Webhook } from 'standardwebhooks';
import { newId, topicOf } from '@dap/contracts';
import { createKafka } from '@dap/kafka';
import { connectMongo, type MongoHandle } from '@dap/mongo';
import { http, startReceiver, uniqueSuffix, waitFor, type ReceivedRequest } from '@dap/testing';
import { DELIVERY_GROUP_ID } from '../src/events/delivery.consumer.ts';
import { deliveryIdOf, type DeliveryDoc } from '../src/persistence/delivery.repository.ts';
import { callerHeaders, dropTestDatabase, eventPublisher, silent, testConfig, testEnv } from './harness.ts';
import { spawnWebhooks, type ChildWebhooks } from './process.ts';

/**
 * A first attempt leaves before anything is stored, with the event's Kafka offset as its only durable trace.
 * Killed with SIGKILL while such an attempt is on the wire (sent, nothing stored), the service sends the event
 * again after a restart, with the same webhook-id, and stores it; an event stored and committed before the
 * crash is not sent again.
 */
describe('a crash after a delivery was sent and before it was stored', () => {
  const env = testEnv({ INSTANCE_ID: `wh-sendfirst-${uniqueSuffix()}`, LOG_LEVEL: 'warn' });
  const config = testConfig(env);
  let child: ChildWebhooks | null = null;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let events: Awaited<ReturnType<typeof eventPublisher>>;
  let mongo: MongoHandle;
  /** The webhook-id the receiver kills the service on (the first request that is not for `spared`). */
  let spared: string | null = null;
  let killed: { eventId: string; stored: Promise<DeliveryDoc | null>; exited: Promise<void> } | null = null;
  let endpointId = '';

  beforeAll(async () => {
    receiver = await startReceiver((req) => {
      const id = String(req.headers['webhook-id']);
      if (spared && id !== spared && !killed && child) {
        // Read before the kill: what MongoDB held while the attempt was on the wire.
        const stored = mongo.db.collection<DeliveryDoc>('deliveries').findOne({ _id: deliveryIdOf(id, endpointId) });
        killed = { eventId: id, stored, exited: stored.then(() => child!.kill('SIGKILL')) };
        return { status: 200, delayMs: 60_000 }; // never answered: the process dies first
      }
      return { status: 200 };
    });
    child = await spawnWebhooks(env);
    events = await eventPublisher(config);
    mongo = await connectMongo(config.MONGO_URL, config.MONGO_DB);
  });

  afterAll(async () => {
    await child?.kill('SIGTERM');
    await events?.close();
    await mongo?.close();
    await dropTestDatabase(config);
    await receiver?.close();
  });

  /** The group's committed offset and the topic's end, on the partition the account's events go to. */
  async function committedAndEnd(): Promise<{ committed: string; end: string }> {
    const kafka = createKafka({ brokers: config.KAFKA_BROKERS, clientId: 'sendfirst-test', topicPrefix: config.KAFKA_TOPIC_PREFIX }, silent);
    const admin = kafka.admin();
    await admin.connect();
    try {
      const topic = `${config.KAFKA_TOPIC_PREFIX}${topicOf('report.completed')}`;
      const ends = await admin.fetchTopicOffsets(topic);
      const busy = ends.find((p) => p.high !== '0')!;
      const [offsets] = await admin.fetchOffsets({ groupId: `${config.KAFKA_TOPIC_PREFIX}${DELIVERY_GROUP_ID}`, topics: [topic] });
      return { committed: offsets!.partitions.find((p) => p.partition === busy.partition)!.offset, end: busy.high };
    } finally {
      await admin.disconnect();
    }
  }

  it('sends it again after the restart with the same webhook-id, stores it once, and does not resend what was committed', async () => {
    const accountId = newId('acct');
    const reg = await http('POST', `${child!.url}/v1/webhooks`, { body: { url: `${receiver.url}/hooks`, events: ['report.*'] }, headers: callerHeaders(accountId) });
    expect(reg.status).toBe(201);
    endpointId = reg.body.id;
    const secret: string = reg.body.secret;
    const deliveries = mongo.db.collection<DeliveryDoc>('deliveries');

    // A: delivered, stored with its attempt, and its offset committed.
    const a = await events.publish('report.completed', accountId, { id: newId('rpt'), sourceId: 'src_a', rowCount: 1, durationMs: 1 });
    await waitFor(async () => (await deliveries.findOne({ _id: deliveryIdOf(a.id, endpointId) }))?.status === 'succeeded', { what: "A's delivery stored", timeoutMs: 30_000 });
    await waitFor(
      async () => {
        const { committed, end } = await committedAndEnd();
        return committed === end;
      },
      { what: "A's offset committed", timeoutMs: 10_000 },
    );

    // B: the service dies while B's first attempt is on the wire.
    spared = a.id;
    const b = await events.publish('report.completed', accountId, { id: newId('rpt'), sourceId: 'src_b', rowCount: 2, durationMs: 1 });
    await waitFor(() => killed !== null, { what: 'the attempt on the wire' });
    const victim = killed!;
    expect(victim.eventId).toBe(b.id);
    await victim.exited;
    // Sent, and nothing about it stored (positive control: A's record is there).
    expect(await victim.stored).toBeNull();
    expect(await deliveries.findOne({ _id: deliveryIdOf(a.id, endpointId) })).toMatchObject({ status: 'succeeded' });
    const atCrash = await committedAndEnd();
    expect(atCrash.committed).not.toBe(atCrash.end); // B's offset: not committed

    child = await spawnWebhooks(env);
    const byId = (id: string) => receiver.received.filter((r: ReceivedRequest) => r.headers['webhook-id'] === id);
    await waitFor(() => byId(b.id).length >= 2, { what: 'B sent again after the restart', timeoutMs: 30_000 });
    const [before, after] = byId(b.id) as [ReceivedRequest, ReceivedRequest];
    expect(after.body).toBe(before.body);
    for (const r of [before, after]) expect(() => new Webhook(secret).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
    const stored = await waitFor(
      async () => {
        const d = await deliveries.findOne({ _id: deliveryIdOf(b.id, endpointId) });
        return d?.status === 'succeeded' ? d : null;
      },
      { what: "B's delivery stored" },
    );
    expect(stored.attempts).toHaveLength(1); // the attempt answered, after the restart
    await waitFor(
      async () => {
        const { committed, end } = await committedAndEnd();
        return committed === end;
      },
      { what: "B's offset committed", timeoutMs: 10_000 },
    );
    // A was stored and committed before the crash: not sent again.
    expect(byId(a.id)).toHaveLength(1);
  }, 90_000);
});
