import { ConfigResourceTypes, type Kafka, type KafkaMessage } from 'kafkajs';
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
      // The defaults: 12 partitions per event topic, 3 per dead-letter topic (the family ensureTopics is told).
      expect(t.partitions).toHaveLength(12);
      for (const p of t.partitions) expect(p.leader).toBeGreaterThanOrEqual(0);
    }
    // Idempotent: a second call on existing topics changes nothing and succeeds.
    await ensureTopics(createKafka(s, silent), s, silent, wanted);
  } finally {
    await admin.disconnect();
  }
}, 90_000);

it('creates each family with its configured partitions, and replication that fits the cluster when left unset', async () => {
  const s: KafkaSettings = {
    ...settingsFor(`ly${uniqueSuffix()}.`),
    topics: { events: { partitions: 5 }, deadLetters: { partitions: 2, replicationFactor: 1, minInsyncReplicas: 1 } },
  };
  const kafka = createKafka(s, silent);
  const dlq = deadLetterTopic(s, 'grp');
  await ensureTopics(kafka, s, silent, [topicName(s, TOPICS.accounts)]);
  await ensureTopics(kafka, s, silent, [dlq], 'deadLetters');
  const admin = kafka.admin();
  await admin.connect();
  try {
    const brokers = (await admin.describeCluster()).brokers.length;
    const { topics } = await admin.fetchTopicMetadata({ topics: [topicName(s, TOPICS.accounts), dlq] });
    const byName = new Map(topics.map((t) => [t.name, t]));
    expect(byName.get(topicName(s, TOPICS.accounts))!.partitions).toHaveLength(5);
    expect(byName.get(dlq)!.partitions).toHaveLength(2);
    // Unset replication: 3 copies, or as many as the cluster has brokers (the local stack has one).
    for (const p of byName.get(topicName(s, TOPICS.accounts))!.partitions) expect(p.replicas).toHaveLength(Math.min(3, brokers));
    const configs = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [topicName(s, TOPICS.accounts), dlq].map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ['min.insync.replicas'] })),
    });
    const minIsr = Object.fromEntries(configs.resources.map((r) => [r.resourceName, r.configEntries.find((e) => e.configName === 'min.insync.replicas')?.configValue]));
    expect(minIsr).toEqual({ [topicName(s, TOPICS.accounts)]: String(Math.max(1, Math.min(2, Math.min(3, brokers) - 1))), [dlq]: '1' });
  } finally {
    await admin.disconnect();
  }
}, 60_000);

it('an explicit replication factor the cluster cannot hold fails start-up at once and clearly, creating nothing', async () => {
  const s: KafkaSettings = { ...settingsFor(`rf${uniqueSuffix()}.`), topics: { events: { partitions: 1, replicationFactor: 32, minInsyncReplicas: 2 } } };
  const kafka = createKafka(s, silent);
  const started = Date.now();
  const err = (await ensureTopics(kafka, s, silent, [topicName(s, TOPICS.accounts)]).catch((e: unknown) => e)) as Error;
  expect(err).toBeInstanceOf(StartupError);
  expect(err.message).toMatch(/replication factor 32, min.insync.replicas 2\): .*accounts.events: INVALID_REPLICATION_FACTOR/);
  expect(Date.now() - started).toBeLessThan(10_000);
  const admin = kafka.admin();
  await admin.connect();
  try {
    expect(await admin.listTopics()).not.toContain(topicName(s, TOPICS.accounts));
  } finally {
    await admin.disconnect();
  }
}, 60_000);

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
