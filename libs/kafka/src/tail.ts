import type { Kafka } from 'kafkajs';
import Cluster, { type FetchedMessage } from 'kafkajs/src/cluster/index.js';
import socketFactory from 'kafkajs/src/network/socketFactory.js';
import { domainEventSchema, type DomainEvent, type Topic } from '@dap/contracts';
import type { Logger } from '@dap/logger';
import { retryDuringStartup } from '@dap/config';
import { IDLE_FETCH_WAIT_MS, isRetriableTopicSetup, kafkaClientConfig, topicName, type KafkaSettings } from './index.ts';

export interface TailOptions {
  topics: readonly Topic[];
  /** Applies one event; a throw is retried a few times, then logged and passed (the reader never stalls). */
  handle: (event: DomainEvent) => Promise<void> | void;
  /** How long the broker holds a fetch that finds nothing new; default IDLE_FETCH_WAIT_MS. */
  maxWaitMs?: number;
  /** Handler attempts per event; default 3. */
  maxAttempts?: number;
}

export interface TopicTail {
  /** Next offset per `topic:partition` (for tests and diagnostics). */
  positions(): Record<string, string>;
  stop(): Promise<void>;
}

const READ_COMMITTED = 1;
const MAX_BYTES_PER_PARTITION = 1024 * 1024;

/**
 * Reads every partition of some topics from their end, with no consumer group: each process hears every
 * event, nothing is committed, and nothing is left on the brokers when the process stops or dies. This is
 * what a cache's invalidations need (each gateway must see each key revocation); a per-process consumer
 * group would leave a group behind at every restart and scale-out. kafkajs has no public way to assign
 * partitions without a group, so this uses its internal Cluster, the same calls its consumer makes.
 *
 * One fetch loop per leader broker (a broker answers one request per connection at a time, so one long poll
 * per connection), following leadership moves through metadata refreshes. Resolves once every partition's
 * end offset is known: an event published after that is delivered.
 */
export async function tailTopics(kafka: Kafka, settings: KafkaSettings, logger: Logger, opts: TailOptions): Promise<TopicTail> {
  const { clientId, brokers, ssl, sasl, connectionTimeout, requestTimeout } = kafkaClientConfig(settings);
  const cluster = new Cluster({
    logger: kafka.logger(),
    socketFactory: socketFactory(),
    clientId,
    brokers,
    connectionTimeout,
    requestTimeout,
    ...(ssl ? { ssl } : {}),
    ...(sasl ? { sasl } : {}),
    retry: { initialRetryTime: 200, retries: 2 },
    allowAutoTopicCreation: false,
    isolationLevel: READ_COMMITTED,
    metadataMaxAge: 30_000,
  });
  const topics = opts.topics.map((t) => topicName(settings, t));
  const maxWaitTime = opts.maxWaitMs ?? IDLE_FETCH_WAIT_MS;
  const maxAttempts = opts.maxAttempts ?? 3;
  /** topic -> partition -> next offset to read. */
  const next = new Map<string, Map<number, string>>(topics.map((t) => [t, new Map()]));
  const loops = new Map<number, Promise<void>>();
  let running = true;
  let wake: () => void = () => {};
  let stopped: Promise<void> = new Promise((resolve) => (wake = resolve));

  const pause = (ms: number) => Promise.race([new Promise((r) => setTimeout(r, ms).unref()), stopped]);

  /** Positions each partition not yet known: at its end at start-up, at its beginning when it appears later. */
  const position = async (fromBeginning: boolean) => {
    const missing = topics
      .map((topic) => ({ topic, fromBeginning, partitions: cluster.findTopicPartitionMetadata(topic).filter((p) => !next.get(topic)!.has(p.partitionId)) }))
      .filter((t) => t.partitions.length > 0)
      .map((t) => ({ ...t, partitions: t.partitions.map((p) => ({ partition: p.partitionId })) }));
    if (!missing.length) return;
    for (const { topic, partitions } of await cluster.fetchTopicsOffset(missing)) {
      for (const { partition, offset } of partitions) if (!next.get(topic)!.has(partition)) next.get(topic)!.set(partition, offset);
    }
  };

  const ledBy = (nodeId: number) =>
    topics
      .map((topic) => ({
        topic,
        partitions: cluster
          .findTopicPartitionMetadata(topic)
          .filter((p) => p.leader === nodeId && next.get(topic)!.has(p.partitionId))
          .map((p) => ({ partition: p.partitionId, fetchOffset: next.get(topic)!.get(p.partitionId)!, maxBytes: MAX_BYTES_PER_PARTITION })),
      }))
      .filter((t) => t.partitions.length > 0);

  const apply = async (topic: string, partition: number, message: FetchedMessage) => {
    let event: DomainEvent;
    try {
      event = domainEventSchema.parse(JSON.parse(message.value?.toString('utf8') ?? ''));
    } catch (err) {
      logger.error({ topic, partition, offset: message.offset, err: (err as Error).message }, 'undecodable event skipped');
      return;
    }
    for (let attempt = 1; ; attempt++) {
      try {
        await opts.handle(event);
        return;
      } catch (err) {
        if (attempt >= maxAttempts || !running) {
          logger.error({ err, eventId: event.id, topic, partition, offset: message.offset }, 'event handler failed; event passed');
          return;
        }
        await pause(100 * 2 ** attempt);
      }
    }
  };

  const startLoops = () => {
    if (!running) return;
    for (const topic of topics) {
      // Only partitions with a position: a loop with nothing to read ends at once, and must not be restarted.
      for (const p of cluster.findTopicPartitionMetadata(topic)) {
        if (p.leader >= 0 && next.get(topic)!.has(p.partitionId) && !loops.has(p.leader)) {
          const nodeId = p.leader;
          loops.set(
            nodeId,
            fetchLoop(nodeId).finally(() => {
              loops.delete(nodeId);
              startLoops(); // its partitions may have moved to a broker without a loop yet
            }),
          );
        }
      }
    }
  };

  const recover = async (err: unknown, failures: number) => {
    const e = err as { name?: string; type?: string; topic?: string; partition?: number; message?: string };
    if (e.name === 'KafkaJSOffsetOutOfRange' && e.topic && e.partition !== undefined) {
      // Retention removed what we were about to read, or the log was truncated: go on from the end.
      logger.warn({ topic: e.topic, partition: e.partition }, 'offset out of range; reading on from the end');
      next.get(e.topic)?.delete(e.partition);
    } else if (failures > 1) {
      logger.warn({ err: `${e.name ?? 'Error'}: ${e.message ?? ''}`, failures }, 'kafka fetch failed; refreshing metadata');
    }
    await pause(Math.min(100 * 2 ** failures, 2_000));
    if (!running) return;
    await cluster.refreshMetadata().catch(() => {});
    await position(false).catch(() => {});
    startLoops();
  };

  async function fetchLoop(nodeId: number): Promise<void> {
    let failures = 0;
    while (running) {
      try {
        await cluster.refreshMetadataIfNecessary();
        const request = ledBy(nodeId);
        if (!request.length) return; // leadership moved elsewhere; that broker's loop reads it now
        const broker = await cluster.findBroker({ nodeId });
        const { responses } = await broker.fetch({ maxWaitTime, minBytes: 1, maxBytes: 8 * MAX_BYTES_PER_PARTITION, isolationLevel: READ_COMMITTED, topics: request });
        failures = 0;
        for (const { topicName: topic, partitions } of responses) {
          for (const { partition, messages } of partitions) {
            const from = BigInt(request.find((r) => r.topic === topic)?.partitions.find((p) => p.partition === partition)?.fetchOffset ?? '0');
            for (const m of messages) {
              const offset = BigInt(m.offset);
              if (offset < from) continue; // a compressed batch can start before the offset asked for
              if (!m.isControlRecord) await apply(topic, partition, m);
              next.get(topic)!.set(partition, String(offset + 1n));
            }
          }
        }
      } catch (err) {
        if (!running) return;
        await recover(err, ++failures);
      }
    }
  }

  try {
    // Topics created a moment ago can still be without a leader, or have one the answering broker does not know.
    await retryDuringStartup({
      what: `Kafka partitions of ${topics.join(', ')}`,
      timeoutMs: settings.startupTimeoutMs ?? 30_000,
      logger,
      retriable: isRetriableTopicSetup,
      attempt: async () => {
        await cluster.connect();
        await cluster.addMultipleTargetTopics(topics);
        await cluster.refreshMetadata();
        await position(false);
      },
    });
  } catch (err) {
    await cluster.disconnect().catch(() => {});
    throw err;
  }
  startLoops();
  // Partitions added later are read from their beginning: everything in them is newer than our start.
  const discover = setInterval(() => {
    void cluster
      .refreshMetadata()
      .then(() => position(true))
      .then(startLoops)
      .catch(() => {});
  }, 30_000).unref();

  return {
    positions: () => Object.fromEntries(topics.flatMap((t) => [...next.get(t)!].map(([p, o]) => [`${t}:${p}`, o]))),
    async stop() {
      if (!running) return;
      running = false;
      clearInterval(discover);
      wake();
      stopped = Promise.resolve();
      await Promise.allSettled([...loops.values()]);
      await cluster.disconnect().catch(() => {});
    },
  };
}
