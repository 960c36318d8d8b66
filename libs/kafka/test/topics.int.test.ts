import type { Kafka, KafkaMessage } from 'kafkajs';
import { StartupError } from '@dap/config';
import { makeEvent, newId, TOPICS } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import {
  connectEventing,
  createKafka,
  deadLetterTopic,
  domainTopicNames,
  ensureTopics,
  runEventConsumer,
  topicName,
  type Consumer,
  type Eventing,
  type KafkaSettings,
} from '@dap/kafka';
import { stackEnv, uniqueSuffix, waitFor } from '@dap/testing';

const silent = createLogger({ name: 'kafka-topics-test', level: 'silent' });
const settingsFor = (prefix: string): KafkaSettings => ({ brokers: stackEnv().KAFKA_BROKERS.split(','), clientId: 'topics-test', topicPrefix: prefix, startupTimeoutMs: 30_000 });

it('services creating the same topics at once all start, and every partition has a leader', async () => {
  const s = settingsFor(`tp${uniqueSuffix()}.`);
  const extra = deadLetterTopic(s, 'some-group');
  const wanted = [...domainTopicNames(s), extra];
  // Six services starting together on a fresh prefix, as the e2e and browser tests do.
  await Promise.all(Array.from({ length: 6 }, () => ensureTopics(createKafka(s, silent), s, silent, wanted)));
  const admin = createKafka(s, silent).admin();
  await admin.connect();
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: wanted });
    expect(topics.map((t) => t.name).sort()).toEqual([...wanted].sort());
    for (const t of topics) {
      expect(t.partitions).toHaveLength(3);
      for (const p of t.partitions) expect(p.leader).toBeGreaterThanOrEqual(0);
    }
    // Idempotent: a second call on existing topics changes nothing and succeeds.
    await ensureTopics(createKafka(s, silent), s, silent, wanted);
  } finally {
    await admin.disconnect();
  }
}, 90_000);

it('topics provisioned beforehand are only checked: a service without the right to create topics starts', async () => {
  const s = settingsFor(`pv${uniqueSuffix()}.`);
  const wanted = domainTopicNames(s);
  await ensureTopics(createKafka(s, silent), s, silent, wanted); // the operator provisions them
  // A cluster whose ACLs refuse topic creation to this service.
  const refusing = (): Kafka => {
    const kafka = createKafka(s, silent);
    const admin = kafka.admin.bind(kafka);
    kafka.admin = (config) => {
      const a = admin(config);
      a.createTopics = () =>
        Promise.reject(Object.assign(new Error('Topic authorization failed'), { name: 'KafkaJSProtocolError', type: 'TOPIC_AUTHORIZATION_FAILED', retriable: false }));
      return a;
    };
    return kafka;
  };
  await ensureTopics(refusing(), s, silent, wanted);
  // A topic nobody provisioned: refused at once and clearly, not retried for the whole start-up period.
  const started = Date.now();
  const err = (await ensureTopics(refusing(), s, silent, [...wanted, topicName(s, 'not-provisioned')]).catch((e: unknown) => e)) as Error;
  expect(err).toBeInstanceOf(StartupError);
  expect(err.message).toMatch(/Topic authorization failed \(not retried: waiting cannot fix this\)$/);
  expect(Date.now() - started).toBeLessThan(5_000);
}, 60_000);

it('a consumer sets an undecodable message aside in its dead-letter topic (created at its start) and goes on', async () => {
  const s = settingsFor(`dl${uniqueSuffix()}.`);
  const eventing: Eventing = await connectEventing(s, silent);
  const handled: string[] = [];
  const dead: KafkaMessage[] = [];
  let consumer: Consumer | undefined;
  let watcher: Consumer | undefined;
  try {
    consumer = await runEventConsumer(eventing.kafka, s, eventing.producer, silent, {
      groupId: 'per-instance-7',
      deadLetterName: 'shared',
      topics: [TOPICS.sources],
      handle: async (e) => void handled.push(e.id),
    });
    watcher = eventing.kafka.consumer({ groupId: `${s.topicPrefix}watch`, maxWaitTimeInMs: 50 });
    await watcher.connect();
    await watcher.subscribe({ topic: deadLetterTopic(s, 'shared'), fromBeginning: true });
    await watcher.run({ eachMessage: async ({ message }) => void dead.push(message) });

    const accountId = newId('acct');
    const key = accountId; // same key, same partition: the good event waits behind the poison one
    await eventing.producer.sendRaw(topicName(s, TOPICS.sources), { key, value: '{"not":"an event"' });
    const sourceId = newId('src');
    const good = makeEvent('source.deleted', { accountId, subject: sourceId, data: { id: sourceId } });
    await eventing.producer.publish([good]);

    await waitFor(() => handled.includes(good.id) && dead.length === 1, { what: 'the good event handled and the poison one dead-lettered', timeoutMs: 30_000 });
    expect(handled).toEqual([good.id]);
    expect(dead[0]!.value!.toString()).toBe('{"not":"an event"');
    expect(dead[0]!.headers!['dlq-source-topic']!.toString()).toBe(topicName(s, TOPICS.sources));
    expect(dead[0]!.headers!['dlq-reason']!.toString()).toMatch(/^undecodable: /);
  } finally {
    await watcher?.disconnect();
    await consumer?.disconnect();
    await eventing.close();
  }
}, 90_000);
