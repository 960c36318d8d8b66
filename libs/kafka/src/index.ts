import { Kafka, logLevel, type Admin, type Consumer, type EachBatchPayload, type KafkaConfig, type Producer, type KafkaMessage } from 'kafkajs';
import { DEFAULT_TOPIC_LAYOUTS, retryDuringStartup, type KafkaSaslMechanism, type TopicFamily, type TopicLayout } from '@dap/config';
import { ALL_TOPICS, domainEventSchema, topicOf, type DomainEvent, type Topic } from '@dap/contracts';
import type { Logger } from '@dap/logger';
import { backoff, type BackoffPolicy } from '@dap/retry';
import { carrierOf, context, contextOf, endSpan, SpanKind, startSpan, trace, tracingEnabled, withAccount, type Context, type Span, type TraceCarrier } from '@dap/tracing';
import { DurableCommits, type Taken } from './durable-commits.ts';

/** What `kafkaSettingsOf(config)` of @dap/config gives; tests may build one by hand (no TLS, no SASL). */
export interface KafkaSettings {
  brokers: string[];
  clientId: string;
  topicPrefix: string;
  /** TLS to the brokers, verified against the system CAs (plus NODE_EXTRA_CA_CERTS). */
  ssl?: boolean;
  sasl?: { mechanism: KafkaSaslMechanism; username: string; password: string };
  /** How long start-up waits for a broker to answer; default 30 s. */
  startupTimeoutMs?: number;
  /** How each family of topics is created; default DEFAULT_TOPIC_LAYOUTS of @dap/config. */
  topics?: Partial<Record<TopicFamily, TopicLayout>>;
}

/** A layout with its replication settled for a cluster of `brokers` live brokers. */
export interface ResolvedTopicLayout {
  partitions: number;
  replicationFactor: number;
  minInsyncReplicas: number;
}

/**
 * Settles the replication a layout leaves unset: 3 replicas with 2 in sync, or as many as a smaller cluster
 * has. Explicit values are kept as they are, so a production cluster that is short of brokers at start-up
 * refuses the topics instead of silently getting fewer copies (operators set them explicitly).
 */
export function resolveTopicLayout(layout: TopicLayout, brokers: number): ResolvedTopicLayout {
  const replicationFactor = layout.replicationFactor ?? Math.max(1, Math.min(3, brokers));
  const minInsyncReplicas = layout.minInsyncReplicas ?? Math.max(1, Math.min(2, replicationFactor - 1));
  if (minInsyncReplicas > replicationFactor) {
    throw Object.assign(new Error(`min.insync.replicas ${minInsyncReplicas} exceeds the replication factor ${replicationFactor}: no write could be acknowledged`), {
      type: 'INVALID_CONFIG',
    });
  }
  return { partitions: layout.partitions, replicationFactor, minInsyncReplicas };
}

export const topicLayoutOf = (s: Pick<KafkaSettings, 'topics'>, family: TopicFamily): TopicLayout => s.topics?.[family] ?? DEFAULT_TOPIC_LAYOUTS[family];

/**
 * How every producer, consumer and admin of a client retries, and so rides out a broker that dies: the dead
 * broker stays in the cluster's metadata until the controller fences it (9 s by default), so the first
 * attempts fail, and each waits longer than the last. Capped at 2 s, the next attempt comes soon after the
 * fence; kafkajs's default cap (30 s) left producers and consumers idle for up to half a minute after the
 * cluster had recovered, and a consumer, which heartbeats only between attempts, past its session timeout,
 * out of its group. A dead group coordinator is looked up again only when a consumer restarts, which it does
 * when its retries run out: 8 of them take about 11 s, just past the fence. (Randomisation and growth are
 * set too: kafkajs uses other defaults when NODE_ENV is test.)
 */
export const CLIENT_RETRY = { initialRetryTime: 200, maxRetryTime: 2_000, retries: 8, factor: 0.2, multiplier: 2 } as const;

/** The kafkajs client options of some settings, without the logger (a pure mapping, unit-tested). */
export function kafkaClientConfig(s: KafkaSettings): Omit<KafkaConfig, 'logCreator'> {
  const config: Omit<KafkaConfig, 'logCreator'> = {
    clientId: s.clientId,
    brokers: s.brokers,
    connectionTimeout: 3_000,
    requestTimeout: 10_000,
    retry: { ...CLIENT_RETRY },
    logLevel: logLevel.WARN,
  };
  if (s.ssl) config.ssl = true;
  if (s.sasl) {
    const { mechanism, username, password } = s.sasl;
    // One literal per branch: kafkajs types each mechanism's options separately.
    config.sasl = mechanism === 'plain' ? { mechanism, username, password } : mechanism === 'scram-sha-256' ? { mechanism, username, password } : { mechanism, username, password };
  }
  return config;
}

export function createKafka(s: KafkaSettings, logger: Logger): Kafka {
  return new Kafka({
    ...kafkaClientConfig(s),
    logCreator:
      () =>
      ({ level, log }) => {
        const { message, ...extra } = log;
        if (level <= logLevel.ERROR) logger.warn({ kafka: extra }, `kafka: ${message}`);
        else logger.debug({ kafka: extra }, `kafka: ${message}`);
      },
  });
}

/** Failures a broker that is starting, busy or unreachable gives; bad credentials or a refusal are not among them. */
export function isRetriableAtStartup(err: unknown): boolean {
  for (let e = err as { name?: string; type?: string; retriable?: boolean; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (e.name === 'KafkaJSSASLAuthenticationError' || e.type === 'SASL_AUTHENTICATION_FAILED' || e.type?.endsWith('_AUTHORIZATION_FAILED')) return false;
    if (e.retriable === true || ['KafkaJSConnectionError', 'KafkaJSConnectionClosedError', 'KafkaJSRequestTimeoutError', 'KafkaJSBrokerNotFound'].includes(e.name ?? ''))
      return true;
  }
  return false;
}

/**
 * Start-up: waits until a broker answers (and accepts the credentials), one connection per attempt, logging
 * each retry, for the settings' start-up period. Without it kafkajs's own retries of the first connection
 * take a fixed ~50 s, logged only as connection errors, before start-up fails.
 */
export async function waitForKafka(s: KafkaSettings, logger: Logger): Promise<void> {
  // Its own client: a cluster's retry policy is shared by every admin, producer and consumer made from it.
  const probeClient = new Kafka({ ...kafkaClientConfig(s), retry: { retries: 0 }, logLevel: logLevel.NOTHING });
  await retryDuringStartup({
    what: `Kafka at ${s.brokers.join(',')}`,
    timeoutMs: s.startupTimeoutMs ?? 30_000,
    logger,
    retriable: isRetriableAtStartup,
    attempt: async () => {
      const probe = probeClient.admin();
      try {
        await probe.connect();
      } finally {
        await probe.disconnect().catch(() => {}); // a probe that never connected has nothing to close
      }
    },
  });
}

/** Between a failed event handler's attempts. */
export const HANDLER_RETRY: BackoffPolicy = { baseMs: 200, capMs: 5_000 };

export const topicName = (s: Pick<KafkaSettings, 'topicPrefix'>, topic: Topic | string) => `${s.topicPrefix}${topic}`;
export const deadLetterTopic = (s: Pick<KafkaSettings, 'topicPrefix'>, groupId: string) => `${s.topicPrefix}dlq.${groupId}`;

/** Topic errors waiting cannot fix: a refusal, or settings the cluster rejects. */
const TOPIC_SETUP_FATAL = new Set([
  'INVALID_REPLICATION_FACTOR',
  'INVALID_PARTITIONS',
  'INVALID_TOPIC_EXCEPTION',
  'INVALID_CONFIG',
  'POLICY_VIOLATION',
  'INVALID_REQUEST',
  'UNSUPPORTED_VERSION',
]);

/**
 * Whether creating topics may succeed later. A busy broker (thousands of partitions, a loaded machine)
 * answers with timeouts, leaderless partitions and, from kafkajs, errors that carry no `retriable` flag at
 * all (a `KafkaJSTimeout` waiting for leaders, an aggregate of per-topic errors): all of those are worth
 * another attempt. Only a refusal or a setting the cluster rejects is not.
 */
export function isRetriableTopicSetup(err: unknown): boolean {
  const e = err as { name?: string; type?: string; errors?: unknown[]; cause?: unknown } | null | undefined;
  if (!e) return false;
  if (e.name === 'KafkaJSSASLAuthenticationError' || e.type === 'SASL_AUTHENTICATION_FAILED' || e.type?.endsWith('_AUTHORIZATION_FAILED')) return false;
  if (e.type && TOPIC_SETUP_FATAL.has(e.type)) return false;
  if (Array.isArray(e.errors)) return e.errors.every(isRetriableTopicSetup);
  if (e.cause !== undefined && e.cause !== null) return isRetriableTopicSetup(e.cause);
  return true;
}

class TopicsNotReady extends Error {
  override name = 'TopicsNotReady';
}

/**
 * The topics that are missing or have a partition without a leader. Asks for these topics' metadata only:
 * a full listing is slow (and kafkajs can fail on it) on a broker with thousands of topics.
 */
async function notReady(admin: Admin, topics: string[]): Promise<string[]> {
  let found: Awaited<ReturnType<Admin['fetchTopicMetadata']>>['topics'];
  try {
    ({ topics: found } = await admin.fetchTopicMetadata({ topics }));
  } catch (err) {
    // kafkajs fails the whole answer when one topic is unknown or has no leader yet, without saying which.
    const type = (err as { type?: string }).type;
    if (type === 'UNKNOWN_TOPIC_OR_PARTITION' || type === 'LEADER_NOT_AVAILABLE') return topics;
    throw err;
  }
  const missing = topics.filter((t) => !found.some((f) => f.name === t));
  const leaderless = found.filter((t) => t.partitions.length === 0 || t.partitions.some((p) => p.leader < 0)).map((t) => t.name);
  return [...missing, ...leaderless];
}

/** The prefixed names of every domain topic. */
export const domainTopicNames = (s: Pick<KafkaSettings, 'topicPrefix'>) => ALL_TOPICS.map((t) => topicName(s, t));

/** kafkajs says only "Topic creation errors": the message gets each topic's refusal, and the layout asked for. */
function withTopicErrors(err: unknown, layout: ResolvedTopicLayout): unknown {
  const e = err as { message?: string; errors?: { topic?: string; type?: string; message?: string }[] };
  if (!Array.isArray(e?.errors)) return err;
  const refused = e.errors.filter((t) => t.type !== 'TOPIC_ALREADY_EXISTS');
  const detail = refused.map((t) => `${t.topic ?? '?'}: ${t.type ?? ''} ${t.message ?? ''}`.trim()).join('; ');
  const asked = `${layout.partitions} partitions, replication factor ${layout.replicationFactor}, min.insync.replicas ${layout.minInsyncReplicas}`;
  return Object.assign(new Error(`${e.message} (${asked}): ${detail}`), { name: 'KafkaJSAggregateError', errors: e.errors });
}

/** The layout with its replication settled; the cluster is asked for its size only when a setting is left unset. */
async function settledLayout(admin: Admin, layout: TopicLayout): Promise<ResolvedTopicLayout> {
  const brokers = layout.replicationFactor === undefined || layout.minInsyncReplicas === undefined ? (await admin.describeCluster()).brokers.length : 3;
  return resolveTopicLayout(layout, brokers);
}

/**
 * Existing topics are not altered: adding partitions moves keys to other partitions, which would break the
 * per-account order of events in flight. A topic with fewer partitions than configured caps how many replicas
 * of a consumer group get work, so the operator is told how to raise it.
 */
async function warnIfFewerPartitions(admin: Admin, topics: string[], layout: TopicLayout, logger: Logger): Promise<void> {
  const { topics: found } = await admin.fetchTopicMetadata({ topics }).catch(() => ({ topics: [] as { name: string; partitions: unknown[] }[] }));
  for (const t of found) {
    if (t.partitions.length < layout.partitions) {
      logger.warn(
        { topic: t.name, partitions: t.partitions.length, configured: layout.partitions },
        'topic has fewer partitions than configured: a consumer group gets no more busy replicas than partitions (raise it with kafka-topics.sh --alter --partitions when no events are in flight)',
      );
    }
  }
}

/**
 * Creates the topics (full names) that are missing, with their family's layout (partitions, replication
 * factor, min.insync.replicas), and waits until every partition of each has a leader.
 * Idempotent, and safe from every service at once: the topics another service created meanwhile count as
 * created. Retried with backoff over the settings' start-up period, because one request's timeout is not
 * enough on a busy broker; each retry is logged and the last error ends start-up.
 */
export async function ensureTopics(kafka: Kafka, s: KafkaSettings, logger: Logger, names: string[], family: TopicFamily = 'events'): Promise<void> {
  const topics = [...new Set(names)];
  // The outer retry owns the waiting: kafkajs's own retries would hide each failure for up to half a minute.
  const admin = kafka.admin({ retry: { retries: 1 } });
  try {
    await retryDuringStartup({
      what: `Kafka topics (${topics.length} with prefix "${s.topicPrefix}")`,
      timeoutMs: s.startupTimeoutMs ?? 30_000,
      logger,
      retriable: isRetriableTopicSetup,
      attempt: async () => {
        await admin.connect(); // a no-op once connected
        // Topics provisioned beforehand are only checked: a service need not have the right to create them.
        if ((await notReady(admin, topics)).length === 0) return;
        const layout = await settledLayout(admin, topicLayoutOf(s, family));
        // Resolves false when every topic exists already; a mix of existing and new ones is fine too.
        await admin
          .createTopics({
            waitForLeaders: false,
            timeout: 15_000,
            topics: topics.map((topic) => ({
              topic,
              numPartitions: layout.partitions,
              replicationFactor: layout.replicationFactor,
              configEntries: [{ name: 'min.insync.replicas', value: String(layout.minInsyncReplicas) }],
            })),
          })
          .catch((err: unknown) => {
            throw withTopicErrors(err, layout);
          });
        const waiting = await notReady(admin, topics);
        if (waiting.length) throw new TopicsNotReady(`not ready yet: ${waiting.join(', ')}`);
      },
    });
    await warnIfFewerPartitions(admin, topics, topicLayoutOf(s, family), logger);
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

/**
 * Refusals after which a broker accepts nothing more from this producer id. kafkajs numbers each partition's
 * batches and, when a request fails, takes its numbers back; if the request was written anyway (its leader
 * died before answering, and a follower that had copied it took over), the broker expects numbers the
 * producer never sends again, and refuses every later batch as out of order. Only a new producer id, with
 * numbers from 0, gets it writing again; the events it resends may be duplicates, which consumers tolerate.
 */
const PRODUCER_STATE_ERRORS = new Set(['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID', 'INVALID_PRODUCER_EPOCH', 'INVALID_PRODUCER_ID_MAPPING']);

export function isProducerStateError(err: unknown): boolean {
  for (let e = err as { type?: string; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (e.type && PRODUCER_STATE_ERRORS.has(e.type)) return true;
  }
  return false;
}

/** A producer span for one event under the trace stored with it; answers the headers to send (the stored ones when not recording). */
function sendSpan(topic: string, e: DomainEvent, stored: TraceCarrier, spans: Span[]): TraceCarrier | undefined {
  if (!tracingEnabled()) return stored;
  const parent = contextOf(stored);
  const span = startSpan(
    `send ${topic}`,
    { kind: SpanKind.PRODUCER, attributes: { 'messaging.system': 'kafka', 'messaging.operation.type': 'send', 'messaging.destination.name': topic, 'messaging.message.id': e.id } },
    parent,
  );
  if (!span) return carrierOf(parent);
  spans.push(span);
  return carrierOf(trace.setSpan(parent, span));
}

/** The trace context a message's headers carry (traceparent, tracestate), if any. */
export function messageCarrier(message: Pick<KafkaMessage, 'headers'>): TraceCarrier | undefined {
  const h = message.headers;
  const tp = h?.traceparent;
  if (tp === undefined || Array.isArray(tp)) return undefined;
  const ts = h?.tracestate;
  return { traceparent: tp.toString(), ...(ts !== undefined && !Array.isArray(ts) ? { tracestate: ts.toString() } : {}) };
}

/**
 * A consumer span for one decoded event, child of the context its message carries; the event's `trace` becomes
 * the span's, so what the handler writes (deliveries, events) descends from it. Nothing for a message without one.
 */
function consumeSpan(topic: string, groupId: string | undefined, message: KafkaMessage, event: DomainEvent): { span: Span; ctx: Context } | undefined {
  const carrier = messageCarrier(message);
  delete event.trace;
  if (!carrier) return undefined; // an event no traced work caused starts no trace of its own
  const parent = contextOf(carrier);
  const span = startSpan(
    `process ${topic}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        'messaging.system': 'kafka',
        'messaging.operation.type': 'process',
        'messaging.destination.name': topic,
        'messaging.message.id': event.id,
        ...(groupId ? { 'messaging.consumer.group.name': groupId } : {}),
      },
    },
    parent,
  );
  if (!span) return undefined;
  const ctx = withAccount(trace.setSpan(parent, span), event.accountId);
  const own = carrierOf(ctx);
  if (own) event.trace = own;
  return { span, ctx };
}

/**
 * An idempotent, acks=all producer that sends each event to its service's topic, keyed by account. After a
 * refusal of its producer id (`isProducerStateError`) it replaces its kafkajs producer and rethrows: the
 * caller's next attempt (the outbox retries) goes out under a new id.
 */
export class EventProducer {
  private producer: Producer;
  private replacing: Promise<void> | null = null;
  private readonly kafka: Kafka;
  private readonly settings: KafkaSettings;
  private readonly logger: Logger | undefined;

  constructor(kafka: Kafka, settings: KafkaSettings, logger?: Logger) {
    this.kafka = kafka;
    this.settings = settings;
    this.logger = logger;
    this.producer = this.create();
  }

  private create(): Producer {
    return this.kafka.producer({ idempotent: true, maxInFlightRequests: 5, allowAutoTopicCreation: false });
  }

  connect(): Promise<void> {
    return this.producer.connect();
  }

  async disconnect(): Promise<void> {
    await this.replacing?.catch(() => {});
    await this.producer.disconnect();
  }

  /** Runs one send; on a refusal of the producer id, replaces the producer (once for concurrent sends) and rethrows. */
  private async send(op: (producer: Producer) => Promise<unknown>): Promise<void> {
    const producer = this.producer;
    try {
      await op(producer);
    } catch (err) {
      if (isProducerStateError(err) && this.producer === producer) {
        this.replacing ??= (async () => {
          this.logger?.warn({ err: (err as Error).message }, 'kafka producer refused by the broker; continuing with a new producer id');
          const fresh = this.create();
          await fresh.connect();
          this.producer = fresh;
          await producer.disconnect().catch(() => {});
        })().finally(() => (this.replacing = null));
        await this.replacing.catch(() => {}); // a failed replacement is tried again at the next refusal
      }
      throw err;
    }
  }

  async publish(events: DomainEvent[]): Promise<void> {
    const byTopic = new Map<string, DomainEvent[]>();
    for (const e of events) {
      const t = topicName(this.settings, topicOf(e.type));
      const list = byTopic.get(t);
      if (list) list.push(e);
      else byTopic.set(t, [e]);
    }
    const spans: Span[] = [];
    const message = (topic: string, e: DomainEvent) => {
      const { trace: stored, ...body } = e;
      const headers: Record<string, string> = { 'event-type': e.type, 'event-id': e.id, ...(e.requestId ? { 'x-request-id': e.requestId } : {}) };
      // The trace stored with the event in the outbox goes on as headers, under a send span when recording.
      const carrier = stored ? sendSpan(topic, e, stored, spans) : undefined;
      if (carrier) Object.assign(headers, carrier);
      return { key: e.accountId, value: JSON.stringify(body), headers };
    };
    let failure: unknown;
    try {
      await this.send((producer) =>
        producer.sendBatch({
          acks: -1,
          topicMessages: [...byTopic].map(([topic, evts]) => ({ topic, messages: evts.map((e) => message(topic, e)) })),
        }),
      );
    } catch (err) {
      failure = err;
      throw err;
    } finally {
      for (const span of spans) endSpan(span, failure);
    }
  }

  /** Raw send, used for dead letters. */
  async sendRaw(topic: string, message: { key: Buffer | string | null; value: Buffer | string | null; headers?: Record<string, string> }): Promise<void> {
    await this.send((producer) => producer.send({ topic, acks: -1, messages: [message] }));
  }
}

interface ConsumerBaseOptions extends ConsumerGroupOptions {
  topics: Topic[];
  /** Attempts at an event that fails on its own before it is dead-lettered (outages are retried for as long as they last); default 5. */
  maxAttempts?: number;
  /** Partitions whose messages are handled at the same time (order is kept within a partition); default 1. */
  partitionsConsumedConcurrently?: number;
  /**
   * Event types the handler acts on: a message whose `event-type` header names another type is passed over
   * undecoded (its offset is committed like the others'). Default: every type.
   */
  accepts?: (eventType: string) => boolean;
  /**
   * Resolve only once the group has its partitions and has fetched from them (at most this many ms). A new
   * group that starts from the latest offset skips what is published before its first fetch, so a consumer
   * that must not miss events from its start (a cache's invalidations) waits for it.
   */
  waitUntilFetchingMs?: number;
}

/** Events one at a time. */
export interface EventHandlerOptions {
  /** Applies one event durably; throwing means "not applied" and the event is retried. */
  handle: (event: DomainEvent) => Promise<void>;
}

/**
 * Events in chunks of a fetched batch: one call applies many (one query and one write for a chunk instead of
 * two round trips per event). All of one account's events share a partition, which is read in order.
 */
export interface BatchHandlerOptions {
  /**
   * Applies the events durably and idempotently; throwing means none of them counts as applied. With
   * `commitWhenDurable`, it may answer `{ durable }` instead: the events are taken, and stored once it resolves.
   */
  handleBatch: (events: DomainEvent[]) => Promise<void | Taken>;
  /**
   * Offsets are committed only once the `durable` answers of every chunk up to them have resolved, while the
   * consumer reads on (at most `maxPendingPerPartition` events of a partition not yet durable). At a stop,
   * the consumer stops fetching and waits up to `drainMs` for what it took; what is not durable by then, or
   * was taken before a rebalance, is read again from the committed offset (at least once).
   */
  commitWhenDurable?: { maxPendingPerPartition?: number; drainMs: number };
  /** Events applied together at most; default 250. */
  chunkSize?: number;
  /**
   * The first chunk of a fetched batch (default 25); each next one doubles up to `chunkSize`, so the start of
   * a burst is applied after a small write rather than a full one, while the rest still go in large ones.
   */
  firstChunkSize?: number;
}

export type ConsumerOptions = ConsumerBaseOptions & (EventHandlerOptions | BatchHandlerOptions);

/**
 * Runs a consumer that decodes events at the boundary and commits an offset only after its handler has
 * returned. An undecodable message, or one that fails `maxAttempts` times, goes to the group's dead-letter
 * topic so one poison message cannot stall a partition. A batch handler that fails on something other than
 * an outage is given the chunk's events one by one, so only the poison one is dead-lettered.
 */
export async function runEventConsumer(kafka: Kafka, settings: KafkaSettings, producer: EventProducer, logger: Logger, opts: ConsumerOptions): Promise<Consumer> {
  const groupId = `${settings.topicPrefix}${opts.groupId}`;
  const { consumer, toDeadLetter } = await openConsumer(kafka, settings, producer, logger, opts);
  const batched = 'handleBatch' in opts;
  const chunkSize = batched ? (opts.chunkSize ?? 250) : 1;
  const deferred = batched ? opts.commitWhenDurable : undefined;
  const commits = deferred
    ? new DurableCommits({
        commit: (offsets) => consumer.commitOffsets(offsets),
        seek: (at) => consumer.seek(at),
        logger,
        maxPendingPerPartition: deferred.maxPendingPerPartition,
      })
    : undefined;
  const eachBatch = eachBatchHandler({
    commits,
    handleBatch: batched ? opts.handleBatch : ([event]) => opts.handle(event!),
    toDeadLetter,
    logger,
    accepts: opts.accepts,
    maxAttempts: opts.maxAttempts ?? 5,
    chunkSize,
    firstChunkSize: batched ? Math.min(chunkSize, opts.firstChunkSize ?? 25) : 1,
    groupId,
  });

  // Registered before run(): the group may join and fetch before run() returns.
  const fetching = opts.waitUntilFetchingMs ? untilFirstFetch(consumer, opts.waitUntilFetchingMs) : null;
  if (commits && deferred) {
    // A new generation reads from the committed offsets: chunks taken before it are its to read again.
    consumer.on(consumer.events.GROUP_JOIN, () => commits.reset());
    const disconnect = consumer.disconnect.bind(consumer);
    consumer.disconnect = async () => {
      try {
        consumer.pause(opts.topics.map((t) => ({ topic: topicName(settings, t) })));
        await commits.drain(deferred.drainMs);
      } catch (err) {
        logger.warn({ err, groupId }, 'draining the consumer before it stops failed; what it took is read again');
      }
      await commits.close();
      await disconnect();
    };
  }
  // Offsets are committed at the end of each batch (and at a rebalance or stop), up to the last one resolved;
  // with commitWhenDurable, by `commits` alone, up to what is durable.
  await consumer.run({ autoCommit: !commits, eachBatchAutoResolve: false, partitionsConsumedConcurrently: opts.partitionsConsumedConcurrently ?? 1, eachBatch });
  if (fetching && !(await fetching)) logger.warn({ groupId, waitedMs: opts.waitUntilFetchingMs }, 'the consumer has not fetched yet; events published meanwhile may be skipped');
  return consumer;
}

/** What `eachBatchHandler` needs; `runEventConsumer` fills it from its options. */
export interface EachBatchOptions {
  handleBatch: (events: DomainEvent[]) => Promise<void | Taken>;
  /** Where chunks whose handler answered `{ durable }` wait for their commit (see commitWhenDurable). */
  commits?: DurableCommits | undefined;
  toDeadLetter: DeadLetter;
  logger: Logger;
  accepts?: ((eventType: string) => boolean) | undefined;
  maxAttempts: number;
  chunkSize: number;
  firstChunkSize: number;
  /** Named on the consumer spans. */
  groupId?: string;
}

export type BatchContext = Pick<EachBatchPayload, 'batch' | 'resolveOffset' | 'heartbeat' | 'isRunning' | 'isStale' | 'commitOffsetsIfNecessary'>;

/**
 * The consumer's `eachBatch`: chunk after chunk, decode, apply, and only then resolve the chunk's last offset.
 * A chunk is not started once the consumer stops or the batch went stale (a rebalance): what is left is fetched
 * again by whoever owns the partition next. While a handler is retried (an outage can last minutes) nothing more
 * is fetched for the partition, and the consumer heartbeats between attempts so that the group keeps it rather
 * than moving its partitions to members that would meet the same outage.
 */
export function eachBatchHandler(o: EachBatchOptions): (payload: BatchContext) => Promise<void> {
  /** The `durable` answers of a chunk's handler calls (none when it applies events durably before returning). */
  type Durables = Promise<void>[];
  /** One event on its own: retried, then dead-lettered (an outage is retried for as long as it lasts). */
  const applyOne = async (topic: string, message: KafkaMessage, event: DomainEvent, heartbeat: () => Promise<void>, durables: Durables, traced?: { span: Span; ctx: Context }) => {
    for (let attempt = 1; ; attempt++) {
      try {
        // Alone, the event's handler runs in its span: what it writes carries the trace on.
        const taken = await (traced ? context.with(traced.ctx, () => o.handleBatch([event])) : o.handleBatch([event]));
        if (taken) durables.push(taken.durable);
        return;
      } catch (err) {
        if (attempt >= o.maxAttempts && !isTransient(err)) {
          traced?.span.recordException(err as Error);
          return o.toDeadLetter(topic, message, (err as Error).message);
        }
        o.logger.warn({ err, eventId: event.id, attempt }, 'event handler failed; retrying');
        await backoff(attempt, HANDLER_RETRY);
        await heartbeat();
      }
    }
  };

  const applyChunk = async (topic: string, messages: KafkaMessage[], heartbeat: () => Promise<void>): Promise<Durables> => {
    const durables: Durables = [];
    const decoded: Array<{ message: KafkaMessage; event: DomainEvent; traced: { span: Span; ctx: Context } | undefined }> = [];
    for (const message of messages) {
      const type = message.headers?.['event-type']?.toString();
      if (type !== undefined && o.accepts && !o.accepts(type)) continue;
      try {
        const event = domainEventSchema.parse(JSON.parse(message.value?.toString('utf8') ?? ''));
        decoded.push({ message, event, traced: consumeSpan(topic, o.groupId, message, event) });
      } catch (err) {
        await o.toDeadLetter(topic, message, `undecodable: ${(err as Error).message}`);
      }
    }
    try {
      await applyDecoded(topic, decoded, heartbeat, durables);
    } finally {
      for (const d of decoded) d.traced?.span.end();
    }
    return durables;
  };

  const applyDecoded = async (
    topic: string,
    decoded: Array<{ message: KafkaMessage; event: DomainEvent; traced: { span: Span; ctx: Context } | undefined }>,
    heartbeat: () => Promise<void>,
    durables: Durables,
  ) => {
    if (decoded.length > 1) {
      for (let attempt = 1; ; attempt++) {
        try {
          const taken = await o.handleBatch(decoded.map((d) => d.event));
          if (taken) durables.push(taken.durable);
          return;
        } catch (err) {
          if (!isTransient(err)) break;
          o.logger.warn({ err, attempt }, 'event batch failed on an outage; retrying');
          await backoff(attempt, HANDLER_RETRY);
          await heartbeat();
        }
      }
    }
    // One event, or a chunk with something bad in it: one by one, so only the poison message is dead-lettered.
    for (const d of decoded) await applyOne(topic, d.message, d.event, heartbeat, durables, d.traced);
  };

  return async ({ batch, resolveOffset, heartbeat, isRunning, isStale, commitOffsetsIfNecessary }) => {
    for (let i = 0, size = o.firstChunkSize; i < batch.messages.length; i += size, size = Math.min(o.chunkSize, size * 2)) {
      if (!isRunning() || isStale()) return;
      const chunk = batch.messages.slice(i, i + size);
      const generation = o.commits?.generation ?? 0;
      const durables = await applyChunk(batch.topic, chunk, heartbeat);
      // Moved back meanwhile (events not stored are read again): this chunk is read again with them.
      if (o.commits && isStale()) {
        for (const d of durables) d.catch(() => {});
        return;
      }
      const last = chunk[chunk.length - 1]!.offset;
      resolveOffset(last);
      await o.commits?.add(generation, { topic: batch.topic, partition: batch.partition, from: chunk[0]!.offset, last, count: chunk.length }, Promise.all(durables), heartbeat);
      await heartbeat();
      await commitOffsetsIfNecessary();
    }
  };
}

/** What `openConsumer` needs: the group, its topics and where its dead letters go. */
export interface ConsumerGroupOptions {
  groupId: string;
  topics: readonly string[];
  fromBeginning?: boolean;
  /** Names the dead-letter topic, `<prefix>dlq.<name>`; default the group id. Per-instance groups share one. */
  deadLetterName?: string;
}

/**
 * How long the broker holds a fetch that finds nothing new. A fetch returns as soon as a message arrives
 * (minBytes 1), so this only sets how often an idle consumer asks: at 50 ms, five idle groups cost 4.8 % of
 * a core in their process and 3.7 % in the broker; at 500 ms, 2.7 % and 1.6 % (measured on the local broker).
 */
export const IDLE_FETCH_WAIT_MS = 500;

/**
 * How long a group waits for a member that stopped heartbeating (kafkajs heartbeats every second). After the
 * broker coordinating a group dies, its members restart with new ids, and the new coordinator rebalances only
 * once the old ids have expired: at 6 s (the brokers' minimum by default) a group caught up 18 s after such
 * a kill, at 10 s 23 to 26 s after it. A replica that dies gives its partitions away as soon, too.
 */
export const CONSUMER_SESSION_TIMEOUT_MS = 6_000;

export type DeadLetter = (topic: string, message: KafkaMessage, reason: string) => Promise<void>;

/**
 * A connected, subscribed consumer with the shared settings, and the function that sets a poison message
 * aside in the group's dead-letter topic (created here: the producer may not create topics on the fly).
 * Connecting and subscribing are retried over the start-up period: a topic another service created a moment
 * ago can still be unknown to the broker that answers, and kafkajs's subscribe does not retry that.
 */
export async function openConsumer(
  kafka: Kafka,
  settings: KafkaSettings,
  producer: EventProducer,
  logger: Logger,
  opts: ConsumerGroupOptions,
): Promise<{ consumer: Consumer; toDeadLetter: DeadLetter }> {
  const groupId = `${settings.topicPrefix}${opts.groupId}`;
  const dlq = deadLetterTopic(settings, opts.deadLetterName ?? opts.groupId);
  await ensureTopics(kafka, settings, logger, [dlq], 'deadLetters');
  // The client's retry policy (CLIENT_RETRY), whose count kafkajs would otherwise lower to 5 for a consumer.
  const consumer = kafka.consumer({
    groupId,
    sessionTimeout: CONSUMER_SESSION_TIMEOUT_MS,
    heartbeatInterval: 1_000,
    maxWaitTimeInMs: IDLE_FETCH_WAIT_MS,
    retry: { ...CLIENT_RETRY },
  });
  await retryDuringStartup({
    what: `Kafka consumer group ${groupId}`,
    timeoutMs: settings.startupTimeoutMs ?? 30_000,
    logger,
    retriable: isRetriableTopicSetup,
    attempt: async () => {
      await consumer.connect();
      await consumer.subscribe({ topics: opts.topics.map((t) => topicName(settings, t)), fromBeginning: opts.fromBeginning ?? true });
    },
  });
  const toDeadLetter: DeadLetter = async (topic, message, reason) => {
    logger.error({ topic, offset: message.offset, reason }, 'event sent to dead-letter topic');
    await producer.sendRaw(dlq, {
      key: message.key,
      value: message.value,
      // The trace goes with it, so an operator can find the request that caused the poison event.
      headers: { 'dlq-reason': reason.slice(0, 500), 'dlq-source-topic': topic, 'dlq-source-offset': message.offset, ...messageCarrier(message) },
    });
  };
  return { consumer, toDeadLetter };
}

/** Resolves true at the first fetch after the group joined, false after `timeoutMs`. */
function untilFirstFetch(consumer: Consumer, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    let joined = false;
    const removers: (() => void)[] = [];
    const done = (ok: boolean) => {
      clearTimeout(timer);
      for (const remove of removers) remove();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    removers.push(consumer.on(consumer.events.GROUP_JOIN, () => void (joined = true)));
    removers.push(consumer.on(consumer.events.FETCH, () => joined && done(true)));
  });
}

/** Infrastructure outages are retried for as long as they last; only a handler bug dead-letters a message. */
export function isTransient(err: unknown): boolean {
  const e = err as { name?: string; code?: string };
  return Boolean(e?.name?.startsWith('MongoNetwork') || e?.name === 'MongoServerSelectionError' || e?.name === 'MongoNotConnectedError' || e?.code === 'ECONNREFUSED');
}

export type { Kafka, Consumer };

export interface Eventing {
  kafka: Kafka;
  settings: KafkaSettings;
  producer: EventProducer;
  close(): Promise<void>;
}

/** Connects the producer after waiting for a broker and making sure the domain topics exist. */
export async function connectEventing(settings: KafkaSettings, logger: Logger): Promise<Eventing> {
  const kafka = createKafka(settings, logger);
  await waitForKafka(settings, logger);
  await ensureTopics(kafka, settings, logger, domainTopicNames(settings));
  const producer = new EventProducer(kafka, settings, logger);
  await producer.connect();
  return { kafka, settings, producer, close: () => producer.disconnect() };
}
export { openEventing } from './resource.ts';
export { DurableCommits, type DurableCommitsOptions, type PartitionOffset, type Taken } from './durable-commits.ts';
export { tailTopics, type TailOptions, type TopicTail } from './tail.ts';
