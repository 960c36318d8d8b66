import type { KafkaMessage } from 'kafkajs';
import { makeEvent, newId, TOPICS, type DomainEvent } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { connectEventing, deadLetterTopic, runEventConsumer, type Consumer, type Eventing, type KafkaSettings } from '@dap/kafka';
import { stackEnv, uniqueSuffix, waitFor } from '@dap/testing';

const silent = createLogger({ name: 'kafka-batch-test', level: 'silent' });

/**
 * The batch mode of the shared consumer against the test stack's Kafka: chunks of one partition applied in
 * order, a poison event dead-lettered alone, and offsets committed so that a restarted group resumes after
 * what was applied.
 */
it('applies a partition in ordered chunks, dead-letters only the poison event, and a restart resumes after the committed offsets', async () => {
  const s: KafkaSettings = { brokers: stackEnv().KAFKA_BROKERS.split(','), clientId: 'batch-test', topicPrefix: `bc${uniqueSuffix()}.`, startupTimeoutMs: 30_000 };
  const eventing: Eventing = await connectEventing(s, silent);
  const accountId = newId('acct'); // one key: one partition, read in order
  const deleted = () => {
    const id = newId('src');
    return makeEvent('source.deleted', { accountId, subject: id, data: { id } });
  };
  const applied: string[] = [];
  const calls: number[] = [];
  const dead: KafkaMessage[] = [];
  let consumer: Consumer | undefined;
  let watcher: Consumer | undefined;
  const start = (poison: string | null) =>
    runEventConsumer(eventing.kafka, s, eventing.producer, silent, {
      groupId: 'batch',
      topics: [TOPICS.sources],
      maxAttempts: 2,
      handleBatch: async (events: DomainEvent[]) => {
        calls.push(events.length);
        if (events.some((e) => e.id === poison)) throw new Error('poison');
        applied.push(...events.map((e) => e.id));
      },
    });
  try {
    const first = Array.from({ length: 60 }, deleted);
    const poison = first[40]!;
    poison.trace = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' };
    // Published before the group starts (it reads from the beginning), so the first fetch holds them all.
    await eventing.producer.publish(first);
    consumer = await start(poison.id);
    watcher = eventing.kafka.consumer({ groupId: `${s.topicPrefix}watch`, maxWaitTimeInMs: 50 });
    await watcher.connect();
    await watcher.subscribe({ topic: deadLetterTopic(s, 'batch'), fromBeginning: true });
    await watcher.run({ eachMessage: async ({ message }) => void dead.push(message) });

    const good = first.filter((e) => e !== poison).map((e) => e.id);
    await waitFor(() => applied.length >= good.length && dead.length === 1, { what: 'the good events applied and the poison one dead-lettered', timeoutMs: 30_000 });
    expect(applied).toEqual(good);
    expect(Math.max(...calls)).toBeGreaterThan(1); // applied in chunks, not one by one
    expect((JSON.parse(dead[0]!.value!.toString()) as DomainEvent).id).toBe(poison.id);
    expect(dead[0]!.headers!['dlq-reason']!.toString()).toBe('poison');
    expect(dead[0]!.headers!.traceparent!.toString()).toBe(poison.trace.traceparent); // the trace goes with it

    await consumer.disconnect();
    consumer = undefined;
    const later = Array.from({ length: 3 }, deleted);
    await eventing.producer.publish(later);
    applied.length = 0;
    consumer = await start(null);
    // The new events arrive (positive control), and nothing applied before the restart comes again.
    await waitFor(() => applied.length >= later.length, { what: 'the events published during the restart', timeoutMs: 30_000 });
    expect(applied).toEqual(later.map((e) => e.id));
  } finally {
    await watcher?.disconnect();
    await consumer?.disconnect();
    await eventing.close();
  }
}, 120_000);
