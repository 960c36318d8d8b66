import { KafkaJSConnectionError, KafkaJSNonRetriableError, KafkaJSProtocolError, type Kafka, type Producer } from 'kafkajs';
import { makeEvent } from '@dap/contracts';
import { createLogger } from '@dap/logger';
import { EventProducer, isProducerStateError } from './index.ts';

/** A refusal as kafkajs's producer throws it: the broker's error, wrapped once its retrier gives up on it. */
const refusal = (type: string) => {
  const broker = new KafkaJSProtocolError({ message: `broker says ${type}`, type, code: 45, retriable: false } as unknown as Error);
  return Object.assign(new KafkaJSNonRetriableError(broker), { cause: broker });
};

/** kafkajs producers whose sends fail with the errors queued for them, in order, then succeed. */
function producers(failures: Error[][]) {
  const made: { connected: number; disconnected: number; sent: number }[] = [];
  const kafka = {
    producer: () => {
      const state = { connected: 0, disconnected: 0, sent: 0 };
      const queue = failures[made.length] ?? [];
      made.push(state);
      const sendOne = async () => {
        state.sent++;
        const err = queue.shift();
        if (err) throw err;
        return [];
      };
      return {
        connect: async () => void state.connected++,
        disconnect: async () => void state.disconnected++,
        sendBatch: sendOne,
        send: sendOne,
      } as unknown as Producer;
    },
  } as unknown as Kafka;
  return { kafka, made };
}

const settings = { brokers: ['127.0.0.1:1'], clientId: 'test', topicPrefix: 't.' };
const event = () => makeEvent('source.created', { accountId: 'acct_1', subject: 'src_1', data: { id: 'src_1', name: 'n', type: 'inline' } });

describe('EventProducer after the broker refuses its producer id', () => {
  it('rethrows, then sends under a new producer, the old one closed', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ name: 'producer-test', level: 'info', destination: { write: (l: string) => void lines.push(JSON.parse(l)) } });
    const { kafka, made } = producers([[refusal('OUT_OF_ORDER_SEQUENCE_NUMBER'), refusal('OUT_OF_ORDER_SEQUENCE_NUMBER')]]);
    const p = new EventProducer(kafka, settings, logger);
    await p.connect();
    await expect(p.publish([event()])).rejects.toThrow('broker says OUT_OF_ORDER_SEQUENCE_NUMBER');
    expect(made).toHaveLength(2);
    expect(made[0]).toEqual({ connected: 1, disconnected: 1, sent: 1 });
    expect(made[1]!.connected).toBe(1);
    await p.publish([event()]);
    await p.sendRaw('t.dlq.x', { key: 'k', value: 'v' });
    expect(made[1]!.sent).toBe(2);
    expect(made[0]!.sent).toBe(1); // the old one, which would refuse forever, is not used again
    expect(lines.map((l) => l.msg)).toEqual(['kafka producer refused by the broker; continuing with a new producer id']);
  });

  it('replaces it once for sends that fail together', async () => {
    const { kafka, made } = producers([[refusal('UNKNOWN_PRODUCER_ID'), refusal('UNKNOWN_PRODUCER_ID'), refusal('UNKNOWN_PRODUCER_ID')]]);
    const p = new EventProducer(kafka, settings);
    await p.connect();
    const results = await Promise.allSettled([p.publish([event()]), p.publish([event()]), p.sendRaw('t.dlq.x', { key: 'k', value: 'v' })]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(made).toHaveLength(2);
  });

  it('keeps its producer on any other failure (positive control: a refusal does replace it)', async () => {
    const { kafka, made } = producers([
      [new KafkaJSConnectionError('Connection error: connect ECONNREFUSED'), refusal('NOT_LEADER_FOR_PARTITION'), refusal('INVALID_PRODUCER_EPOCH')],
    ]);
    const p = new EventProducer(kafka, settings);
    await p.connect();
    await expect(p.publish([event()])).rejects.toThrow('ECONNREFUSED');
    await expect(p.publish([event()])).rejects.toThrow('NOT_LEADER_FOR_PARTITION');
    expect(made).toHaveLength(1);
    await expect(p.publish([event()])).rejects.toThrow('INVALID_PRODUCER_EPOCH');
    expect(made).toHaveLength(2);
  });

  it('recognises the refusals however deep kafkajs wrapped them', () => {
    expect(isProducerStateError(refusal('OUT_OF_ORDER_SEQUENCE_NUMBER'))).toBe(true);
    expect(isProducerStateError(refusal('OUT_OF_ORDER_SEQUENCE_NUMBER').cause)).toBe(true);
    expect(isProducerStateError(refusal('LEADER_NOT_AVAILABLE'))).toBe(false);
    expect(isProducerStateError(undefined)).toBe(false);
  });
});
