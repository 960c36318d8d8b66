import type { Kafka, KafkaMessage, Producer, ProducerBatch } from 'kafkajs';
import { makeEvent, type DomainEvent } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { activeCarrier, startTracing, type TraceCarrier } from '@dap/tracing';
import { startTracingCollector, type TracingCollector } from '@dap/tracing/testing';
import { eachBatchHandler, EventProducer, type BatchContext } from './index.ts';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const STORED = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
const CHILD = new RegExp(`^00-${TRACE_ID}-(?!00f067aa0ba902b7)[0-9a-f]{16}-01$`);
const silent = createLogger({ name: 'kafka-tracing-test', level: 'silent' });

const eventOf = (trace?: TraceCarrier): DomainEvent => ({
  ...makeEvent('source.created', { accountId: 'acct_1', subject: 'src_1', data: { id: 'src_1', name: 'n', type: 'inline' } }),
  ...(trace ? { trace } : {}),
});

/** A producer whose batches are kept. */
function recordingProducer() {
  const batches: ProducerBatch[] = [];
  const kafka = {
    producer: () =>
      ({ connect: async () => {}, disconnect: async () => {}, sendBatch: async (b: ProducerBatch) => void batches.push(b), send: async () => [] }) as unknown as Producer,
  } as unknown as Kafka;
  const producer = new EventProducer(kafka, { brokers: ['127.0.0.1:1'], clientId: 'test', topicPrefix: 't.' });
  const messages = () => batches.flatMap((b) => b.topicMessages!.flatMap((t) => t.messages));
  return { producer, messages };
}

/** Runs the consumer's batch handler over messages with the given headers; answers what the handler saw. */
async function consume(entries: Array<{ event: DomainEvent; headers: Record<string, string> }>) {
  const seen: Array<{ trace: TraceCarrier | undefined; active: TraceCarrier | undefined }> = [];
  const run = eachBatchHandler({
    handleBatch: async (events) => {
      await new Promise((r) => setImmediate(r));
      for (const e of events) seen.push({ trace: e.trace, active: events.length === 1 ? activeCarrier() : undefined });
    },
    toDeadLetter: async () => {},
    logger: silent,
    maxAttempts: 1,
    chunkSize: 1,
    firstChunkSize: 1,
  });
  const messages = entries.map(
    ({ event, headers }, i) =>
      ({
        key: null,
        value: Buffer.from(JSON.stringify(event)),
        timestamp: '0',
        attributes: 0,
        offset: String(i),
        headers: { 'event-type': event.type, ...headers },
      }) as KafkaMessage,
  );
  await run({
    batch: { topic: 't.sources.events', partition: 0, messages } as unknown as BatchContext['batch'],
    resolveOffset: () => {},
    heartbeat: async () => {},
    isRunning: () => true,
    isStale: () => false,
    commitOffsetsIfNecessary: async () => {},
  });
  return seen;
}

describe('trace context over Kafka, tracing off', () => {
  const tracing = startTracing({ serviceName: 'test', sampleRatio: 1 });
  afterAll(() => tracing.shutdown());

  it('sends the trace stored with an event as headers, not in the body, and nothing for an event without one', async () => {
    const { producer, messages } = recordingProducer();
    await producer.publish([eventOf({ traceparent: STORED, tracestate: 'v=1' }), eventOf()]);
    const [traced, plain] = messages();
    expect(traced!.headers).toMatchObject({ traceparent: STORED, tracestate: 'v=1' });
    expect(JSON.parse(traced!.value as string)).not.toHaveProperty('trace');
    expect(plain!.headers).not.toHaveProperty('traceparent');
  });

  it("gives the consumed event its message's context, active in its handler; a trace in the body is not believed", async () => {
    const seen = await consume([
      { event: eventOf(), headers: { traceparent: STORED } },
      { event: eventOf({ traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` }), headers: {} },
    ]);
    expect(seen).toEqual([
      { trace: { traceparent: STORED }, active: { traceparent: STORED } },
      { trace: undefined, active: undefined },
    ]);
  });
});

describe('trace context over Kafka, tracing on', () => {
  let otel: TracingCollector;
  beforeAll(async () => void (otel = await startTracingCollector()));
  afterAll(() => otel.close());

  it('sends under a producer span and consumes under a consumer span, each a child of the one before', async () => {
    const { producer, messages } = recordingProducer();
    await producer.publish([eventOf({ traceparent: STORED })]);
    const sent = messages()[0]!.headers!.traceparent as string;
    expect(sent).toMatch(CHILD);

    const seen = await consume([{ event: eventOf(), headers: { traceparent: sent } }]);
    expect(seen[0]!.trace!.traceparent).toMatch(CHILD);
    expect(seen[0]!.trace!.traceparent).not.toBe(sent);
    expect(seen[0]!.active).toEqual(seen[0]!.trace);

    await otel.tracing.flush();
    const spans = otel.collector.received
      .filter((r) => r.path === '/v1/traces')
      .flatMap((r) => JSON.parse(r.body).resourceSpans[0].scopeSpans[0].spans as Array<{ name: string; spanId: string; parentSpanId: string; kind: number }>);
    const send = spans.find((s) => s.name === 'send t.sources.events')!;
    const process = spans.find((s) => s.name === 'process t.sources.events')!;
    expect(send).toMatchObject({ parentSpanId: '00f067aa0ba902b7', spanId: sent.split('-')[2], kind: 4 }); // PRODUCER
    expect(process).toMatchObject({ parentSpanId: send.spanId, spanId: seen[0]!.trace!.traceparent.split('-')[2], kind: 5 }); // CONSUMER
  });
});
