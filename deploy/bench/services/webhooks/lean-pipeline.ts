import type { DomainEvent } from '@dap/contracts';
import type { Kafka } from '@dap/kafka';
import { deliveryBody, signedHeaders, signingKeyOf } from '../../../../services/webhooks/src/domain/signing.ts';
import { newWebhookSecret } from '../../../../services/webhooks/src/domain/secret.ts';

export interface LeanPipelineOptions {
  kafka: Kafka;
  /** A topic of the bench's own (its prefix), created here and left to the bench's clean-up. */
  topic: string;
  events: DomainEvent[];
  /** POSTs one signed body; resolves when answered. */
  post: (body: string, headers: Record<string, string>) => Promise<void>;
  /** Requests in flight at most, as the service may have to one endpoint. */
  concurrency: number;
}

/**
 * The least any Kafka-fed webhook pipeline does, as a ceiling for the service's deliveries/s on this machine:
 * the events are published first (nothing else runs meanwhile), then one kafkajs consumer decodes each, signs
 * its body with the service's own signing code and POSTs it with `concurrency` in flight. Nothing is stored,
 * claimed, retried or reported, and nothing is validated. Answers deliveries/s from the first event consumed to
 * the last answer.
 */
export async function leanPipelinePerSec(o: LeanPipelineOptions): Promise<number> {
  const admin = o.kafka.admin();
  await admin.connect();
  try {
    // A busy broker may not know the new topic's partition yet when asked for its leader: ask again.
    for (let attempt = 1; ; attempt++) {
      try {
        await admin.createTopics({ topics: [{ topic: o.topic, numPartitions: 1 }] });
        break;
      } catch (err) {
        if (attempt >= 10 || !(err as { retriable?: boolean }).retriable) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  } finally {
    await admin.disconnect();
  }
  const producer = o.kafka.producer();
  await producer.connect();
  try {
    for (let i = 0; i < o.events.length; i += 500) {
      const messages = o.events.slice(i, i + 500).map((e) => ({ key: e.accountId, value: JSON.stringify(e) }));
      await producer.send({ topic: o.topic, acks: -1, messages });
    }
  } finally {
    await producer.disconnect();
  }

  const key = signingKeyOf(newWebhookSecret());
  let inFlight = 0;
  const waiting: Array<() => void> = [];
  const acquire = () => (inFlight < o.concurrency ? (inFlight++, Promise.resolve()) : new Promise<void>((r) => waiting.push(r)));
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else inFlight--;
  };
  let first = 0;
  let done = 0;
  let finished!: () => void;
  let failed!: (err: Error) => void;
  const allDone = new Promise<void>((resolve, reject) => {
    finished = resolve;
    failed = reject;
  });
  const deliver = async (raw: Buffer) => {
    const event = JSON.parse(raw.toString('utf8')) as DomainEvent;
    const body = deliveryBody(event);
    const headers = { ...signedHeaders(key, event.id, Math.floor(Date.now() / 1000), body), 'content-type': 'application/json' };
    await acquire();
    try {
      await o.post(body, headers);
    } finally {
      release();
    }
  };
  const consumer = o.kafka.consumer({ groupId: `${o.topic}.lean`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  // A POST that fails, or events that never arrive, end the measurement instead of leaving it waiting.
  const limitMs = Math.max(60_000, o.events.length * 10);
  const timer = setTimeout(() => failed(new Error(`the lean pipeline delivered ${done} of ${o.events.length} events in ${limitMs / 1000} s`)), limitMs);
  try {
    await consumer.subscribe({ topic: o.topic, fromBeginning: true });
    await consumer.run({
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset }) => {
        first ||= performance.now();
        try {
          await Promise.all(batch.messages.map((m) => deliver(m.value!)));
        } catch (err) {
          return failed(new Error(`the lean pipeline failed: ${(err as Error).message}`));
        }
        resolveOffset(batch.messages[batch.messages.length - 1]!.offset);
        done += batch.messages.length;
        if (done >= o.events.length) finished();
      },
    });
    await allDone;
    return o.events.length / ((performance.now() - first) / 1000);
  } finally {
    clearTimeout(timer);
    await consumer.disconnect();
  }
}
