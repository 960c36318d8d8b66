import type { Consumer, KafkaMessage } from 'kafkajs';
import { domainEventSchema, type DomainEvent, type Topic } from '@dap/contracts';
import { HANDLER_RETRY, isTransient, openConsumer, type EventProducer, type Kafka, type KafkaSettings } from '@dap/kafka';
import type { Logger } from '@dap/logger';
import { backoff } from '@dap/retry';

/**
 * `runEventConsumer` of @dap/kafka, with a batch handler: the events of a fetched batch are applied
 * together (one endpoint query and one insert for up to `chunkSize` events instead of two round trips per
 * event), because all of one account's events share one partition and a partition is consumed in order.
 * Same guarantees: offsets are resolved only after the handler returned; an undecodable message, or one
 * that fails `maxAttempts` times on its own, goes to the group's dead-letter topic; outages are retried.
 * (Recommended as a `handleBatch` option of the shared consumer.)
 */
export interface BatchConsumerOptions {
  groupId: string;
  topics: Topic[];
  /** Applies the events durably and idempotently; throwing means none of them counts as applied. */
  handleBatch: (events: DomainEvent[]) => Promise<void>;
  /**
   * Event types the handler acts on: a message whose `event-type` header names another type is passed over
   * without being decoded (webhooks.events also carries the endpoint events, and held delivery.completed
   * before it had a topic of its own).
   */
  accepts?: (eventType: string) => boolean;
  maxAttempts?: number;
  partitionsConsumedConcurrently?: number;
  /** Events applied together at most (default 250). */
  chunkSize?: number;
  /**
   * The first chunk of a fetched batch (default 25); each next one doubles up to `chunkSize`, so the first
   * deliveries of a burst go out after a small insert rather than a full one, while the rest still go in
   * large ones.
   */
  firstChunkSize?: number;
  fromBeginning?: boolean;
}

export async function runBatchEventConsumer(kafka: Kafka, settings: KafkaSettings, producer: EventProducer, logger: Logger, opts: BatchConsumerOptions): Promise<Consumer> {
  const { consumer, toDeadLetter } = await openConsumer(kafka, settings, producer, logger, opts);
  const maxAttempts = opts.maxAttempts ?? 5;
  const chunkSize = opts.chunkSize ?? 250;
  const firstChunkSize = Math.min(chunkSize, opts.firstChunkSize ?? 25);

  /** One event on its own, as the shared consumer does it: retried, then dead-lettered. */
  const applyOne = async (topic: string, message: KafkaMessage, event: DomainEvent) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await opts.handleBatch([event]);
        return;
      } catch (err) {
        if (attempt >= maxAttempts && !isTransient(err)) return toDeadLetter(topic, message, (err as Error).message);
        logger.warn({ err, eventId: event.id, attempt }, 'event handler failed; retrying');
        await backoff(attempt, HANDLER_RETRY);
      }
    }
  };

  const applyChunk = async (topic: string, messages: KafkaMessage[]) => {
    const decoded: Array<{ message: KafkaMessage; event: DomainEvent }> = [];
    for (const message of messages) {
      const type = message.headers?.['event-type']?.toString();
      if (type !== undefined && opts.accepts && !opts.accepts(type)) continue;
      try {
        decoded.push({ message, event: domainEventSchema.parse(JSON.parse(message.value?.toString('utf8') ?? '')) });
      } catch (err) {
        await toDeadLetter(topic, message, `undecodable: ${(err as Error).message}`);
      }
    }
    if (!decoded.length) return;
    for (let attempt = 1; ; attempt++) {
      try {
        await opts.handleBatch(decoded.map((d) => d.event));
        return;
      } catch (err) {
        if (!isTransient(err)) break;
        logger.warn({ err, attempt }, 'event batch failed on an outage; retrying');
        await backoff(attempt, HANDLER_RETRY);
      }
    }
    // Something in the batch is bad: apply one by one, so only the poison message is dead-lettered.
    for (const d of decoded) await applyOne(topic, d.message, d.event);
  };

  await consumer.run({
    autoCommit: true,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: opts.partitionsConsumedConcurrently ?? 1,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale, commitOffsetsIfNecessary }) => {
      for (let i = 0, size = firstChunkSize; i < batch.messages.length; i += size, size = Math.min(chunkSize, size * 2)) {
        if (!isRunning() || isStale()) return;
        const chunk = batch.messages.slice(i, i + size);
        await applyChunk(batch.topic, chunk);
        resolveOffset(chunk[chunk.length - 1]!.offset);
        await heartbeat();
        await commitOffsetsIfNecessary();
      }
    },
  });
  return consumer;
}
