import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { domainEventSchema, makeEvent, type DomainEvent, type EventOf, type EventType, type Topic } from '@dap/contracts';
import { DatasetStore, type IngestResult } from '@dap/datasets';
import { createKafka, EventProducer, topicName, type Consumer, type KafkaSettings } from '@dap/kafka';
import { createLogger } from '@dap/logger';
import { stackEnv } from './index.ts';

/**
 * The other services, as a service under test meets them on the event bus: events published as their outbox
 * relays publish them, and a topic read from its beginning as a consumer reads it. Kept apart from the main
 * entry so that tests that only call HTTP do not load Kafka and DuckDB.
 */
export interface EventTap {
  readonly settings: KafkaSettings;
  /** For a batch of events in one send. */
  readonly producer: EventProducer;
  /** Publishes one event; `at` pins its occurredAt, so that ordering is checkable. */
  publish<T extends EventType>(type: T, accountId: string, subject: string, data: EventOf<T>['data'], at?: Date): Promise<EventOf<T>>;
  /** Collects every event of `topic` from its beginning, with each one's Kafka headers, as they arrive. */
  watch(topic: Topic): Promise<WatchedTopic>;
  stop(): Promise<void>;
}

export interface WatchedTopic {
  readonly events: DomainEvent[];
  headersOf(eventId: string): Record<string, string> | undefined;
}

const silent = createLogger({ name: 'event-tap', level: 'silent' });

/** A producer and watchers on the test stack's Kafka, under a test file's own topic prefix. */
export async function startEventTap(topicPrefix: string, clientId: string): Promise<EventTap> {
  const settings: KafkaSettings = { brokers: stackEnv().KAFKA_BROKERS.split(','), clientId, topicPrefix };
  const kafka = createKafka(settings, silent);
  const producer = new EventProducer(kafka, settings);
  await producer.connect();
  const consumers: Consumer[] = [];
  return {
    settings,
    producer,
    async publish(type, accountId, subject, data, at) {
      const e = makeEvent(type, { accountId, subject, data });
      if (at) e.occurredAt = at.toISOString();
      await producer.publish([e]);
      return e;
    },
    async watch(topic) {
      const events: DomainEvent[] = [];
      const headers = new Map<string, Record<string, string>>();
      const consumer = kafka.consumer({ groupId: `${topicPrefix}${clientId}-watch-${consumers.length}`, maxWaitTimeInMs: 50 });
      consumers.push(consumer);
      await consumer.connect();
      await consumer.subscribe({ topics: [topicName(settings, topic)], fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          const event = domainEventSchema.parse(JSON.parse(message.value!.toString('utf8')));
          headers.set(event.id, Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)])));
          events.push(event);
        },
      });
      return { events, headersOf: (id) => headers.get(id) };
    },
    async stop() {
      for (const c of consumers) await c.disconnect();
      await producer.disconnect();
    },
  };
}

/** A source as the sources service names it in its events. */
export interface FedSource {
  name: string;
  type: string;
}

/**
 * The sources service, for the services that read its data (analytics, models): a source's Parquet file
 * written with the dataset store in a temporary dataset directory (give `datasetDir` to the service under
 * test), then `source.created` and `source.ready` on Kafka, in the order sources writes and announces them.
 */
export interface SourceFeed extends EventTap {
  /** A temporary directory for the test's own files too; the dataset directory is inside it. */
  readonly dir: string;
  readonly datasetDir: string;
  readonly store: DatasetStore;
  /** Writes the rows as the source's current file (staged as NDJSON, as a sync does). */
  ingest(accountId: string, sourceId: string, rows: readonly object[]): Promise<IngestResult>;
  /** `source.ready` with the written file's row count and schema. */
  announceReady(accountId: string, sourceId: string, source: FedSource, result: IngestResult): Promise<EventOf<'source.ready'>>;
  /** A new source whose first sync is done: its file, then `source.created` and `source.ready`. */
  provide(accountId: string, sourceId: string, source: FedSource, rows: readonly object[]): Promise<IngestResult>;
}

/** Writes the rows as a source's current file in `store`, staged as NDJSON as a sync stages them. */
export async function ingestRows(store: DatasetStore, accountId: string, sourceId: string, rows: readonly object[]): Promise<IngestResult> {
  await store.stage(
    accountId,
    sourceId,
    'ndjson',
    rows.map((r) => `${JSON.stringify(r)}\n`),
  );
  return store.ingest(accountId, sourceId, 'ndjson');
}

/** `storeNow` is the store's clock, which retires replaced files one grace period after the swap. */
export async function startSourceFeed(topicPrefix: string, clientId: string, opts: { storeNow?: () => number } = {}): Promise<SourceFeed> {
  const dir = await mkdtemp(join(tmpdir(), `${clientId}-`));
  const datasetDir = join(dir, 'datasets');
  const store = await DatasetStore.open(datasetDir, {}, opts.storeNow ? { now: opts.storeNow } : {});
  const tap = await startEventTap(topicPrefix, clientId).catch(async (err: unknown) => {
    store.duck.close();
    await rm(dir, { recursive: true, force: true });
    throw err;
  });
  const feed: SourceFeed = {
    ...tap,
    dir,
    datasetDir,
    store,
    ingest: (accountId, sourceId, rows) => ingestRows(store, accountId, sourceId, rows),
    announceReady: (accountId, sourceId, { name, type }, result) =>
      tap.publish('source.ready', accountId, sourceId, { id: sourceId, name, type, rowCount: result.rowCount, schema: result.schema }),
    async provide(accountId, sourceId, source, rows) {
      const result = await feed.ingest(accountId, sourceId, rows);
      await tap.publish('source.created', accountId, sourceId, { id: sourceId, name: source.name, type: source.type });
      await feed.announceReady(accountId, sourceId, source, result);
      return result;
    },
    async stop() {
      await tap.stop();
      store.duck.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return feed;
}
