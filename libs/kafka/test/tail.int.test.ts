import { makeEvent, newId, TOPICS, type DomainEvent } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { connectEventing, createKafka, tailTopics, topicName, type Eventing, type KafkaSettings, type TopicTail } from '@dap/kafka';
import { stackEnv, uniqueSuffix, waitFor } from '@dap/testing';

const silent = createLogger({ name: 'kafka-tail-test', level: 'silent' });

const revoked = (accountId = newId('acct')) => {
  const keyId = newId('key');
  return makeEvent('apikey.revoked', { accountId, subject: keyId, data: { keyId } });
};

describe('tailTopics: every process reads every partition from the end, without a consumer group', () => {
  const s: KafkaSettings = { brokers: stackEnv().KAFKA_BROKERS.split(','), clientId: 'tail-test', topicPrefix: `tl${uniqueSuffix()}.`, topics: { events: { partitions: 4 } } };
  let eventing: Eventing;
  const tails: TopicTail[] = [];
  const received: { at: number; event: DomainEvent }[][] = [[], []];

  beforeAll(async () => {
    eventing = await connectEventing(s, silent);
    // Published before the readers start: must not be delivered (they start at the end).
    await eventing.producer.publish([revoked(), revoked(), revoked()]);
    for (const list of received) {
      tails.push(await tailTopics(eventing.kafka, s, silent, { topics: [TOPICS.accounts], maxWaitMs: 100, handle: (event) => void list.push({ at: Date.now(), event }) }));
    }
  }, 60_000);

  afterAll(async () => {
    for (const t of tails) await t.stop();
    await eventing?.close();
  });

  it('delivers each event published after the start to every reader, from every partition, within 2 s', async () => {
    const sent = Array.from({ length: 24 }, () => revoked()); // 24 accounts: keys spread over the 4 partitions
    const sentAt = Date.now();
    await eventing.producer.publish(sent);
    await waitFor(() => received.every((list) => list.length >= sent.length), { what: 'every event at both readers', timeoutMs: 10_000 });
    for (const list of received) {
      expect(list.map((r) => r.event.id).sort()).toEqual(sent.map((e) => e.id).sort()); // none from before the start, none twice
      expect(Math.max(...list.map((r) => r.at - sentAt))).toBeLessThan(2_000);
    }
    // The events came from more than one partition, and each reader's position moved on in those.
    const positions = tails[0]!.positions();
    expect(Object.keys(positions)).toHaveLength(4);
    expect(Object.values(positions).filter((o) => Number(o) > 0).length).toBeGreaterThan(1);
  }, 30_000);

  it('joins no consumer group, so a stopped or killed reader leaves nothing behind', async () => {
    const admin = createKafka(s, silent).admin();
    await admin.connect();
    try {
      const { groups } = await admin.listGroups();
      expect(groups.filter((g) => g.groupId.startsWith(s.topicPrefix))).toEqual([]);
      // Positive control: a kafkajs group consumer on the same prefix does show up.
      const grouped = eventing.kafka.consumer({ groupId: `${s.topicPrefix}control` });
      await grouped.connect();
      await grouped.subscribe({ topic: topicName(s, TOPICS.accounts) });
      await grouped.run({ eachMessage: async () => {} });
      await waitFor(async () => (await admin.listGroups()).groups.some((g) => g.groupId === `${s.topicPrefix}control`), { what: 'the control group' });
      await grouped.disconnect();
      await admin.deleteGroups([`${s.topicPrefix}control`]).catch(() => {});
    } finally {
      await admin.disconnect();
    }
  }, 30_000);

  it('skips an undecodable message and goes on; a stopped reader receives nothing more', async () => {
    const before = received[1]!.length;
    const accountId = newId('acct');
    await eventing.producer.sendRaw(topicName(s, TOPICS.accounts), { key: accountId, value: '{"not":"an event"' });
    const good = revoked(accountId); // same key, same partition: behind the undecodable one
    await eventing.producer.publish([good]);
    await waitFor(() => received.every((list) => list.some((r) => r.event.id === good.id)), { what: 'the good event at both readers' });
    expect(received[1]!.length).toBe(before + 1);

    await tails[1]!.stop();
    const late = revoked();
    await eventing.producer.publish([late]);
    await waitFor(() => received[0]!.some((r) => r.event.id === late.id), { what: 'the late event at the running reader' }); // positive control
    await new Promise((r) => setTimeout(r, 300));
    expect(received[1]!.some((r) => r.event.id === late.id)).toBe(false);
  }, 30_000);
});
