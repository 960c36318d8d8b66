import type { Consumer, KafkaMessage } from 'kafkajs';
import { makeEvent, newId } from '@dap/contracts';
import { createKafka, deadLetterTopic, EventProducer, topicName } from '@dap/kafka';
import { waitFor } from '@dap/testing';
import { DELIVERY_GROUP_ID } from '../src/events/delivery.consumer.ts';
import { deliveryStack, silent, sleep, testConfig } from './harness.ts';

/**
 * Poison messages: one that cannot be decoded and one whose handler always fails go to the consumer
 * group's dead-letter topic, and the events behind them on the same partition are still delivered.
 */
describe('webhook delivery consumer dead-letters poison messages', () => {
  const config = testConfig({ WEBHOOK_CONSUMER_MAX_ATTEMPTS: '2' });
  const settings = { brokers: config.KAFKA_BROKERS, clientId: 'dlq-test', topicPrefix: config.KAFKA_TOPIC_PREFIX };
  const h = deliveryStack(config);
  let raw: EventProducer;
  let dlqWatcher: Consumer;
  const dead: KafkaMessage[] = [];

  beforeAll(async () => {
    const kafka = createKafka(settings, silent);
    raw = new EventProducer(kafka, settings);
    await raw.connect();
    dlqWatcher = kafka.consumer({ groupId: `${config.KAFKA_TOPIC_PREFIX}dlq-watch`, maxWaitTimeInMs: 50 });
    await dlqWatcher.connect();
    await dlqWatcher.subscribe({ topic: deadLetterTopic(settings, DELIVERY_GROUP_ID), fromBeginning: true });
    await dlqWatcher.run({ eachMessage: async ({ message }) => void dead.push(message) });
  });

  afterAll(async () => {
    await dlqWatcher?.disconnect();
    await raw?.disconnect();
  });

  it('moves an undecodable and an always-failing message to <prefix>dlq.webhooks-delivery and keeps delivering', async () => {
    const a = h.client();
    const res = await a.call('POST', '/webhooks', { url: `${h.receiver.url}/hooks`, events: ['report.*'] });
    expect(res.status).toBe(201);
    const before = await h.events.publish('report.completed', a.accountId, { id: newId('rpt'), sourceId: 's', rowCount: 1, durationMs: 1 });
    await waitFor(() => h.receiver.received.length >= 1, { what: 'the first delivery' });

    // Both poison messages share the good events' topic and key, so they sit on the same partition.
    const topic = topicName(settings, 'analytics.events');
    await raw.sendRaw(topic, { key: a.accountId, value: '{"id":"evt_broken", not json' });
    const invalid = makeEvent('report.completed', { accountId: 'not-an-account', subject: 'rpt_x', data: { id: 'rpt_x', sourceId: 's', rowCount: 1, durationMs: 1 } });
    const invalidJson = JSON.stringify(invalid);
    await raw.sendRaw(topic, { key: a.accountId, value: invalidJson });
    const after = [];
    for (let i = 0; i < 3; i++) after.push(await h.events.publish('report.completed', a.accountId, { id: newId('rpt'), sourceId: 's', rowCount: i, durationMs: 1 }));

    await waitFor(() => dead.length >= 2, { what: 'two dead letters', timeoutMs: 15_000 });
    const [undecodable, failing] = dead as [KafkaMessage, KafkaMessage];
    expect(undecodable.value!.toString()).toBe('{"id":"evt_broken", not json');
    expect(undecodable.key!.toString()).toBe(a.accountId);
    expect(undecodable.headers!['dlq-reason']!.toString()).toMatch(/^undecodable/);
    expect(undecodable.headers!['dlq-source-topic']!.toString()).toBe(topic);
    expect(failing.value!.toString()).toBe(invalidJson);
    expect(failing.headers!['dlq-reason']!.toString()).toContain('has no valid account id');

    await waitFor(() => h.receiver.received.length >= 4, { what: 'the later events' });
    const ids = h.receiver.received.map((r) => r.headers['webhook-id']);
    expect(ids).toEqual([before.id, ...after.map((e) => e.id)]);
    await sleep(300);
    expect(dead).toHaveLength(2);
    expect(h.receiver.received).toHaveLength(4);
  });
});
